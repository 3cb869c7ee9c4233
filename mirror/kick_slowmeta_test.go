package mirror

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestKickRetriedUntilAssigned (regression, found in review): exactly once, a failed
// partition is carried into the next session and added back to the
// running consumer at its retry (AddConsumePartitions, which only
// triggers a metadata update: kgo assigns it when the update returns).
// The poll loop's kick comes kickDelay (100 ms) after the add, whatever
// the source's metadata round trip: with a source whose Metadata answer
// takes 300 ms (a remote data centre, a loaded controller) kgo holds no
// cursor yet, SetOffsets ignored the partition, and the restart waited for
// the idle neighbour's long poll again (here fetch.max.wait.ms = 60 s).
// A kick is now tried again, at doubling delays, until its partition
// polls.
func TestKickRetriedUntilAssigned(t *testing.T) {
	t.Parallel()
	restartWithIdleNeighbourOpts(t, "kickslow", restartCase{eos: true, retryFirst: 1500 * time.Millisecond,
		before: func(p *testcluster.Pair) {
			// From here on the source's Metadata answers take 200 ms.
			p.Source.Fake.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
				p.Source.Fake.SleepControl(func() { time.Sleep(200 * time.Millisecond) })
				return nil, nil, false
			})
		}})
}
