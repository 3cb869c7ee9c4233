package remoteclusterutils

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNuGoZeroClient: every method of a nil or zero Client (a new user's
// `var rc remoteclusterutils.Client`, or a nil *Client field) panicked
// with a nil pointer dereference, where a Client built from a nil
// *kgo.Client returns ErrNilClient. They return ErrNilClient, naming
// NewClient, before any request.
func TestNuGoZeroClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var nilClient *Client
	for name, c := range map[string]*Client{"nil": nilClient, "zero": {}} {
		calls := map[string]func() error{
			"TranslateOffsets": func() error { _, err := c.TranslateOffsets(ctx, "a", "g"); return err },
			"Checkpoints":      func() error { _, err := c.Checkpoints(ctx, "a"); return err },
			"TranslateDetailed": func() error {
				_, err := c.TranslateDetailed(ctx, "a", "g")
				return err
			},
			"TranslateGroups":  func() error { _, err := c.TranslateGroups(ctx, "a", nil); return err },
			"ReplicationHops":  func() error { _, err := c.ReplicationHops(ctx, "a"); return err },
			"UpstreamClusters": func() error { _, err := c.UpstreamClusters(ctx); return err },
			"HeartbeatTopics":  func() error { _, err := c.HeartbeatTopics(ctx); return err },
			"CheckpointTopics": func() error { _, err := c.CheckpointTopics(ctx); return err },
			"RemoteTopics":     func() error { _, err := c.RemoteTopics(ctx); return err },
			"RemoteTopicsFor":  func() error { _, err := c.RemoteTopicsFor(ctx, "a"); return err },
		}
		for call, f := range calls {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s Client: %s panicked: %v", name, call, r)
					}
				}()
				if err := f(); !errors.Is(err, ErrNilClient) {
					t.Errorf("%s Client: %s = %v, want ErrNilClient", name, call, err)
				}
			}()
		}
		if p := c.Policy(); p != nil {
			t.Errorf("%s Client: Policy() = %v, want nil", name, p)
		}
	}
}

// TestNuGoLastErrorNotRepeated: a call whose deadline cut its last request
// short failed with "listing offsets of t (last error context deadline
// exceeded): context deadline exceeded". The last error is named only when
// it is not the context's own.
func TestNuGoLastErrorNotRepeated(t *testing.T) {
	t.Parallel()
	dl := context.DeadlineExceeded
	if got := parenLastErr(fmt.Errorf("fetch: %w", dl), dl); got != "" {
		t.Errorf("parenLastErr(the context's error) = %q, want \"\"", got)
	}
	if got := parenLastErr(kerr.NotLeaderForPartition, dl); !strings.HasPrefix(got, " (last error NOT_LEADER_FOR_PARTITION") {
		t.Errorf("parenLastErr(NOT_LEADER_FOR_PARTITION) = %q, want it named", got)
	}
	if got := lastErr(", ", nil, dl); got != "" {
		t.Errorf("lastErr(nil) = %q, want \"\"", got)
	}

	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err = TranslateOffsets(ctx, "a", "g", WithClientOpts(kgo.SeedBrokers(c.ListenAddrs()...)))
	if err == nil {
		t.Fatal("TranslateOffsets past its deadline succeeded")
	}
	if msg := err.Error(); strings.Count(msg, "context deadline exceeded") > 1 {
		t.Errorf("TranslateOffsets past its deadline = %q: the context's error repeated", msg)
	}
}
