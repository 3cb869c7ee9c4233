package remoteclusterutils_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/remoteclusterutils"
)

// TestTranslateDetailedOneBoundPerCall: TranslateDetailed and
// TranslateGroups applied the default bound (WithTimeout) twice, once to
// the read of the checkpoints topic and again to the metadata request that
// finds never-committed partitions, so a call without a deadline could
// last twice the documented bound (60 s with DefaultTimeout). A slow fetch
// (0.7 s) and a hanging metadata request must end the call at the 1 s
// bound.
func TestTranslateDetailedOneBoundPerCall(t *testing.T) {
	for _, name := range []string{"TranslateDetailed", "TranslateGroups"} {
		t.Run(name, func(t *testing.T) {
			p := testcluster.New(t, "src", "dst")
			if p.Target.Fake == nil {
				t.Skip("holds requests with kfake's control hooks: runs on the embedded backend, not with KMIRROR_*_BROKERS")
			}
			topic := p.Source.Alias + ".checkpoints.internal"
			createTopics(t, &p.Target, topic, "src.orders")
			testcluster.Produce(t, &p.Target, raw(topic, mm2Key("g", "src.orders", 0), mm2Value(0, 1, 1, "")))
			f := p.Target.Fake
			f.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
				f.SleepControl(func() { time.Sleep(700 * time.Millisecond) })
				return nil, nil, false
			})
			f.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				req := kreq.(*kmsg.MetadataRequest)
				if len(req.Topics) == 1 && req.Topics[0].Topic != nil && *req.Topics[0].Topic == "src.orders" {
					f.SleepControl(func() { time.Sleep(3 * time.Second) })
					return nil, nil, false
				}
				f.KeepControl()
				return nil, nil, false
			})
			rc := remoteclusterutils.NewClient(testcluster.Client(t, &p.Target), remoteclusterutils.WithTimeout(time.Second))
			start := time.Now()
			var err error
			if name == "TranslateDetailed" {
				_, err = rc.TranslateDetailed(context.Background(), p.Source.Alias, "g")
			} else {
				_, err = rc.TranslateGroups(context.Background(), p.Source.Alias, nil)
			}
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) || took > 1900*time.Millisecond /* under two bounds, with slack for load */ {
				t.Errorf("%s with WithTimeout(1s): %v after %v; want context.DeadlineExceeded at the 1 s bound", name, err, took)
			}
		})
	}
}
