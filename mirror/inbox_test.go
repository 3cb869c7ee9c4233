package mirror

import (
	"testing"
	"time"
)

// TestPublishGap: a unit publishes its status at most every 50 ms up to
// 250 partitions, then less often in proportion, never less often than
// every second (issue 22: a status per partition every 50 ms was 12 MB a
// second at 3 000 partitions).
func TestPublishGap(t *testing.T) {
	for _, c := range []struct {
		parts int
		want  time.Duration
	}{
		{0, 50 * time.Millisecond},
		{1, 50 * time.Millisecond},
		{250, 50 * time.Millisecond},
		{500, 100 * time.Millisecond},
		{3000, 600 * time.Millisecond},
		{5000, time.Second},
		{60000, time.Second},
	} {
		if got := publishGap(c.parts); got != c.want {
			t.Errorf("publishGap(%d) = %v, want %v", c.parts, got, c.want)
		}
	}
}
