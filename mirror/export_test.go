package mirror

// promMetrics returns a Prometheus Metrics for the benchmarks (set by
// prom_test.go: package mirror cannot import mirrorprom, which imports it).
var promMetrics func() Metrics

// SetPromMetrics lets the external test package provide promMetrics.
func SetPromMetrics(f func() Metrics) { promMetrics = f }
