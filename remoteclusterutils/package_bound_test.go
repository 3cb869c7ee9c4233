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

// TestPackageCallsBoundedWithoutDeadline (found by a breaker): the package
// documentation promises that every call is bounded, DefaultTimeout when
// its context has no deadline, but TranslateBack and TranslateFromRecords
// (and ReadBackIndex, RefineFromRecords, BackIndex.WithRecords) had no
// bound of their own: against a cluster that stopped answering, with
// context.Background(), TranslateBack failed after 40 s and
// TranslateFromRecords was still running at 45 s. The bound here is
// shortened to 1 s; each call must end with context.DeadlineExceeded (the
// failure bound is 15 s, for a loaded machine).
func TestPackageCallsBoundedWithoutDeadline(t *testing.T) {
	restore := remoteclusterutils.SetCallTimeout(time.Second)
	defer restore()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("holds every request with kfake's control hooks: runs on the embedded backend")
	}
	createTopics(t, &p.Target, "mm2-offset-syncs.dst.internal", "src.orders")
	cl := testcluster.Client(t, &p.Target)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f := p.Target.Fake
	f.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		f.KeepControl()
		f.SleepControl(func() { <-release })
		return nil, nil, false
	})
	for _, c := range []struct {
		name string
		call func(context.Context) error
	}{
		{"TranslateBack", func(ctx context.Context) error {
			_, err := remoteclusterutils.TranslateBack(ctx, cl, "mm2-offset-syncs.dst.internal", map[string]map[int32]int64{"orders": {0: 5}}, "")
			return err
		}},
		{"TranslateFromRecords", func(ctx context.Context) error {
			_, err := remoteclusterutils.TranslateFromRecords(ctx, cl, "", map[string]map[int32]int64{"src.orders": {0: 5}})
			return err
		}},
	} {
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- c.call(context.Background()) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s against a silent cluster: %v after %v, want context.DeadlineExceeded", c.name, err, time.Since(start).Round(time.Millisecond))
			}
		case <-time.After(15 * time.Second):
			t.Errorf("%s against a silent cluster with context.Background(): still running after 15 s, want the 1 s default bound", c.name)
		}
	}
}
