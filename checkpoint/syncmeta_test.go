package checkpoint

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kadm"
)

// metaSide records the topic ID listings of group offset sync rounds.
type metaSide struct {
	*side
	metaCalls [][]string
}

func (m *metaSide) topicMeta(ctx context.Context, topics []string) (kadm.TopicDetails, error) {
	m.metaCalls = append(m.metaCalls, append([]string(nil), topics...))
	return m.side.topicMeta(ctx, topics)
}

// TestSyncListsTopicIDsOncePerRound (an attack that held): with one group
// per batch, a round lists the target's topic IDs once, at the first batch
// with a commit (g0, its target group ahead, commits nothing), for the
// remote topics of every planned group; a failed listing sends no commit
// in any later batch, and the next round commits everything; a round
// without a commit lists nothing; a round planning one moved group lists
// its topics only. No target group offset moves back.
func TestSyncListsTopicIDsOncePerRound(t *testing.T) {
	s := &metaSide{side: readSide(t, stairModel(5, 4))}
	s.e.syncBatch = 1
	ctx := context.Background()
	s.e.emit(ctx, s)
	t0, t1, t2 := "src.scale-0000", "src.scale-0001", "src.scale-0002"
	s.tgroups["g0"] = "Empty"
	s.toffsets["g0"] = map[cpKeyTP]int64{{t0, 0}: 15, {t0, 1}: 15}

	round := func(wantCalls [][]string, want []string) {
		t.Helper()
		s.metaCalls, s.committed = nil, nil
		s.e.sync(ctx, s)
		if d := cmp.Diff(wantCalls, s.metaCalls, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("topic ID listings (-want +got):\n%s", d)
		}
		got := append([]string(nil), s.committed...)
		sort.Strings(got)
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("commits (-want +got):\n%s", d)
		}
	}
	all := []string{t0, t1, t2}
	s.metaErr = errors.New("topic authorization failed")
	round([][]string{all}, nil)
	for name, g := range s.e.groups {
		if !g.syncPending {
			t.Errorf("group %s not retried after the failed listing", name)
		}
	}
	s.metaErr = nil
	round([][]string{all}, []string{
		"g1 src.scale-0000-0=5", "g1 src.scale-0000-1=5", "g1 src.scale-0001-0=5", "g1 src.scale-0001-1=5",
		"g2 src.scale-0000-0=6", "g2 src.scale-0000-1=6", "g2 src.scale-0001-0=6", "g2 src.scale-0001-1=6",
		"g2 src.scale-0002-0=6", "g2 src.scale-0002-1=6",
		"g3 src.scale-0000-0=7", "g3 src.scale-0000-1=7",
		"g4 src.scale-0000-0=8", "g4 src.scale-0000-1=8", "g4 src.scale-0001-0=8", "g4 src.scale-0001-1=8",
	})
	round(nil, nil)
	if got := s.toffsets["g0"]; got[cpKeyTP{t0, 0}] != 15 || got[cpKeyTP{t0, 1}] != 15 {
		t.Fatalf("g0's target offsets %v, want 15 (never moved back)", got)
	}

	s.m.commits["g3"][tpKey{"scale-0000", 1}] = 9
	s.e.emit(ctx, s)
	round([][]string{{t0}}, []string{"g3 src.scale-0000-1=9"})
	if len(s.skips) > 0 {
		t.Fatalf("commits skip records: %v", s.skips)
	}
}
