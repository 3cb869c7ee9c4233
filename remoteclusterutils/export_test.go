package remoteclusterutils

import "time"

// SetCallTimeout sets the bound of the package-level calls whose context
// has no deadline and returns a func restoring it (tests only).
func SetCallTimeout(d time.Duration) (restore func()) {
	old := callTimeout
	callTimeout = d
	return func() { callTimeout = old }
}
