//go:build !race

package mirror

// raceBuild: the test binary was built with -race.
const raceBuild = false
