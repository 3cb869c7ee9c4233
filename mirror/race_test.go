//go:build race

package mirror

// raceBuild: the test binary was built with -race (the property test
// then runs fewer sequences: the detector slows it about tenfold).
const raceBuild = true
