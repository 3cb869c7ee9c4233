package remoteclusterutils

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestEmptyAliasOrGroupRefused: an empty remote cluster alias read
// ".checkpoints.internal" and an empty group translated nothing, each after
// a round trip to the cluster (a new user's try, stop 46). Both are refused
// before any request, saying what to write; Checkpoints, which reads every
// group, takes no group.
func TestEmptyAliasOrGroupRefused(t *testing.T) {
	t.Parallel()
	// Nothing listens there: an error that needed a request would be a
	// dial error after retries, not the refusal.
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c := NewClient(cl)
	ctx := context.Background()
	const (
		noAlias = `remoteclusterutils: the remote cluster alias is empty: name the cluster the group fails over from, as MM2's "clusters" lists it (e.g. "us-east-1" for us-east-1.checkpoints.internal)`
		noGroup = "remoteclusterutils: the group is empty: name the consumer group (its group.id) whose offsets to translate; Checkpoints reads every group's"
	)
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"TranslateOffsets alias", func() error { _, err := c.TranslateOffsets(ctx, "", "g"); return err }, noAlias},
		{"TranslateOffsets group", func() error { _, err := c.TranslateOffsets(ctx, "A", ""); return err }, noGroup},
		{"TranslateDetailed group", func() error { _, err := c.TranslateDetailed(ctx, "A", ""); return err }, noGroup},
		{"Checkpoints alias", func() error { _, err := c.Checkpoints(ctx, ""); return err }, noAlias},
	} {
		if err := tc.call(); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
