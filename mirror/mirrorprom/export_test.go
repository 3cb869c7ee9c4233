package mirrorprom

import "time"

// SetStaleAfter sets how long the series of a partition that left Status
// stay scraped, and returns the function that restores it.
func SetStaleAfter(d time.Duration) (restore func()) {
	old := staleAfter
	staleAfter = d
	return func() { staleAfter = old }
}
