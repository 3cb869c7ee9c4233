//go:build race

package testcluster

// raceEnabled reports whether the binary was built with -race.
const raceEnabled = true
