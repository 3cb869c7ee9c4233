package remoteclusterutils

import (
	"context"
	"errors"
	"testing"
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
