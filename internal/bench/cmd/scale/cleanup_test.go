package main

import (
	"context"
	"errors"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestDeleteUntilGone: only the names containing the tag are deleted, in
// batches; a listing that still shows some is followed by another round,
// and what is left after the last attempt comes back with the last error.
func TestDeleteUntilGone(t *testing.T) {
	existing := map[string]bool{"runAg1": true, "runAg2": true, "runAg3": true, "otherg1": true}
	list := func(context.Context) ([]string, error) {
		var out []string
		for _, n := range []string{"runAg1", "runAg2", "runAg3", "otherg1"} {
			if existing[n] {
				out = append(out, n)
			}
		}
		return out, nil
	}
	var batches [][]string
	refuse := errors.New("UNKNOWN_SERVER_ERROR")
	del := func(_ context.Context, names []string) error {
		batches = append(batches, append([]string(nil), names...))
		if len(names) > 1 {
			return refuse // as the coordinator refused an oversized batch
		}
		delete(existing, names[0])
		return nil
	}

	left, err := deleteUntilGone("runA", 1, 2, list, del)
	if !errors.Is(err, refuse) {
		t.Fatalf("one attempt, batches of 2: error %v, want %v", err, refuse)
	}
	if diff := gocmp.Diff([]string{"runAg1", "runAg2", "runAg3"}, left); diff != "" {
		t.Fatalf("left after one attempt (-want +got):\n%s", diff)
	}

	batches = nil
	left, err = deleteUntilGone("runA", 2, 1, list, del)
	if err != nil || len(left) != 0 {
		t.Fatalf("batches of 1: left %v, error %v; want none", left, err)
	}
	if diff := gocmp.Diff([][]string{{"runAg1"}, {"runAg2"}}, batches); diff != "" {
		t.Fatalf("batches (-want +got):\n%s", diff)
	}
	if !existing["otherg1"] || len(existing) != 1 {
		t.Fatalf("remaining %v, want only otherg1", existing)
	}
}
