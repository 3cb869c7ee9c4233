package checkpoint

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The table tests of planSync: group offset sync's decisions without a
// cluster. Each case gives a round's inputs and asserts the whole plan:
// every commit with its offset, and every partition's reason, target
// offset and log end. Remote partitions are of topic "src.orders" unless
// the case names another.

const spTopic = "src.orders"

func spKey(p int32) cpKeyTP { return cpKeyTP{spTopic, p} }

// spPart is a source partition at source offset src translated to tr.
func spPart(p int32, src, tr int64) syncPart {
	return syncPart{key: spKey(p), source: src, translated: tr}
}

// spEnds lists log ends as partition, end pairs.
func spEnds(pe ...int64) map[cpKeyTP]targetEnd {
	out := map[cpKeyTP]targetEnd{}
	for i := 0; i < len(pe); i += 2 {
		out[spKey(int32(pe[i]))] = targetEnd{offset: pe[i+1]}
	}
	return out
}

// spOffsets is a target group's committed offsets as partition, offset pairs.
func spOffsets(po ...int64) targetOffsets {
	out := targetOffsets{offsets: map[cpKeyTP]int64{}}
	for i := 0; i < len(po); i += 2 {
		out.offsets[spKey(int32(po[i]))] = po[i+1]
	}
	return out
}

// decided is an expected partition whose log end is known.
func decided(p int32, want, target, end int64, reason string, commit bool) partSync {
	return partSync{key: spKey(p), want: want, reason: reason, endKnown: true, target: target, end: end, commit: commit}
}

// undecided is an expected partition whose log end is unknown.
func undecided(p int32, want int64, reason string) partSync {
	return partSync{key: spKey(p), want: want, reason: reason, target: -1}
}

func commits(group string, po ...int64) groupCommit {
	c := groupCommit{group: group}
	for i := 0; i < len(po); i += 2 {
		c.parts = append(c.parts, commitPart{key: spKey(int32(po[i])), offset: po[i+1]})
	}
	return c
}

var planCmp = []cmp.Option{
	cmp.AllowUnexported(syncPlan{}, groupSync{}, partSync{}, groupCommit{}, commitPart{}, cpKeyTP{}),
	cmpopts.EquateEmpty(),
}

func TestPlanSync(t *testing.T) {
	errFetch := errors.New("coordinator not available")
	cases := []struct {
		name string
		in   syncInputs
		want syncPlan
	}{
		// The idle-only rule: only groups absent on the target, or listed
		// Empty or Dead, are written (MM2's refreshIdleConsumerGroupOffset
		// treats EMPTY as idle and a group it cannot describe as new;
		// kmirror also skips every state with members, where MM2 writes and
		// the broker refuses).
		{
			name: "absent group: the translation is committed, creating the group",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 99, 99)}}},
				ends: spEnds(0, 100)},
			want: syncPlan{
				groups:  []groupSync{{name: "g", parts: []partSync{decided(0, 99, -1, 100, "", true)}}},
				commits: []groupCommit{commits("g", 0, 99)},
			},
		},
		{
			name: "Empty group behind the translation: moved forward",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 99, 99)}}},
				states: map[string]string{"g": "Empty"}, offsets: map[string]targetOffsets{"g": spOffsets(0, 10)},
				ends: spEnds(0, 100)},
			want: syncPlan{
				groups:  []groupSync{{name: "g", parts: []partSync{decided(0, 99, 10, 100, "", true)}}},
				commits: []groupCommit{commits("g", 0, 99)},
			},
		},
		{
			name: "Dead group without offsets: committed",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 99, 99)}}},
				states: map[string]string{"g": "Dead"}, ends: spEnds(0, 100)},
			want: syncPlan{
				groups:  []groupSync{{name: "g", parts: []partSync{decided(0, 99, -1, 100, "", true)}}},
				commits: []groupCommit{commits("g", 0, 99)},
			},
		},
		{
			name: "groups with members on the target are never written, whatever their offsets",
			in: syncInputs{
				groups: []syncGroup{
					{"stable", []syncPart{spPart(0, 99, 99)}},
					{"preparing", []syncPart{spPart(0, 99, 99)}},
					{"completing", []syncPart{spPart(0, 99, 99)}},
					{"assigning", []syncPart{spPart(0, 99, 99)}},
					{"reconciling", []syncPart{spPart(0, 99, 99)}},
					{"unknown", []syncPart{spPart(0, 99, 99)}},
				},
				states: map[string]string{"stable": "Stable", "preparing": "PreparingRebalance", "completing": "CompletingRebalance",
					"assigning": "Assigning", "reconciling": "Reconciling", "unknown": ""},
				offsets: map[string]targetOffsets{"stable": spOffsets(0, 10)},
				ends:    spEnds(0, 100),
			},
			want: syncPlan{groups: []groupSync{
				{name: "stable", active: true}, {name: "preparing", active: true}, {name: "completing", active: true},
				{name: "assigning", active: true}, {name: "reconciling", active: true}, {name: "unknown", active: true},
			}},
		},
		{
			name: "an active group next to an idle one: only the idle one is written",
			in: syncInputs{
				groups:  []syncGroup{{"a", []syncPart{spPart(0, 50, 50)}}, {"b", []syncPart{spPart(0, 60, 60)}}},
				states:  map[string]string{"a": "Stable", "b": "Empty"},
				offsets: map[string]targetOffsets{"a": spOffsets(0, 10), "b": spOffsets(0, 10)},
				ends:    spEnds(0, 100),
			},
			want: syncPlan{
				groups:  []groupSync{{name: "a", active: true}, {name: "b", parts: []partSync{decided(0, 60, 10, 100, "", true)}}},
				commits: []groupCommit{commits("b", 0, 60)},
			},
		},

		// Never backwards (invariant I2).
		{
			name: "target ahead of the translation: not moved back",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 20, 20)}}},
				states: map[string]string{"g": "Empty"}, offsets: map[string]targetOffsets{"g": spOffsets(0, 99)},
				ends: spEnds(0, 100)},
			want: syncPlan{groups: []groupSync{{name: "g", parts: []partSync{decided(0, 20, 99, 100, ReasonTargetAhead, false)}}}},
		},
		{
			name: "target at the translation: nothing to commit, nothing to report",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 99, 99)}}},
				states: map[string]string{"g": "Empty"}, offsets: map[string]targetOffsets{"g": spOffsets(0, 99)},
				ends: spEnds(0, 100)},
			want: syncPlan{groups: []groupSync{{name: "g", parts: []partSync{decided(0, 99, 99, 100, "", false)}}}},
		},
		{
			name: "Dead group ahead: not moved back either (MM2 writes a non-EMPTY group without comparing)",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 99, 99)}}},
				states: map[string]string{"g": "Dead"}, offsets: map[string]targetOffsets{"g": spOffsets(0, 100)},
				ends: spEnds(0, 100)},
			want: syncPlan{groups: []groupSync{{name: "g", parts: []partSync{decided(0, 99, 100, 100, ReasonTargetAhead, false)}}}},
		},

		// Never past the target log end (invariant I1).
		{
			name: "translation past the log end: not committed",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 150, 150)}}},
				states: map[string]string{"g": "Empty"}, offsets: map[string]targetOffsets{"g": spOffsets(0, 10)},
				ends: spEnds(0, 100)},
			want: syncPlan{groups: []groupSync{{name: "g", parts: []partSync{decided(0, 150, 10, 100, ReasonPastTargetEnd, false)}}}},
		},
		{
			name: "translation at the log end: committed (the end is a valid position)",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 100, 100)}}},
				ends: spEnds(0, 100)},
			want: syncPlan{
				groups:  []groupSync{{name: "g", parts: []partSync{decided(0, 100, -1, 100, "", true)}}},
				commits: []groupCommit{commits("g", 0, 100)},
			},
		},
		{
			name: "target group past the log end (target rebuilt, topic truncated): reported, not moved",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 300, 300)}}},
				states: map[string]string{"g": "Empty"}, offsets: map[string]targetOffsets{"g": spOffsets(0, 1000)},
				ends: spEnds(0, 400)},
			want: syncPlan{groups: []groupSync{{name: "g", parts: []partSync{decided(0, 300, 1000, 400, ReasonTargetPastLogEnd, false)}}}},
		},
		{
			name: "target past the log end and translation past it too: the target's state is reported",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 500, 500)}}},
				states: map[string]string{"g": "Empty"}, offsets: map[string]targetOffsets{"g": spOffsets(0, 1000)},
				ends: spEnds(0, 400)},
			want: syncPlan{groups: []groupSync{{name: "g", parts: []partSync{decided(0, 500, 1000, 400, ReasonTargetPastLogEnd, false)}}}},
		},

		// Log ends missing.
		{
			name: "remote topic missing, partition missing, partition listing failed, listing partial",
			in: syncInputs{
				groups: []syncGroup{
					{"missing", []syncPart{{key: cpKeyTP{"src.gone", 0}, source: 5, translated: 5}}},
					{"unknown", []syncPart{spPart(3, 5, 5)}},
					{"mismatch", []syncPart{spPart(1, 5, 5)}},
					{"failed", []syncPart{spPart(2, 5, 5)}},
				},
				ends: map[cpKeyTP]targetEnd{
					spKey(0): {offset: 100},
					spKey(2): {offset: -1, err: kerr.NotLeaderForPartition},
					spKey(3): {offset: -1, err: kerr.UnknownTopicOrPartition},
				},
				missing: map[string]bool{"src.gone": true},
			},
			want: syncPlan{groups: []groupSync{
				{name: "missing", parts: []partSync{{key: cpKeyTP{"src.gone", 0}, want: 5, reason: ReasonRemoteTopicMissing, target: -1}}},
				{name: "unknown", parts: []partSync{undecided(3, 5, ReasonRemoteTopicMissing)}},
				{name: "mismatch", parts: []partSync{undecided(1, 5, ReasonPartitionMismatch)}},
				{name: "failed", parts: []partSync{undecided(2, 5, "target end offset unknown: "+kerr.NotLeaderForPartition.Error())}},
			}},
		},
		{
			name: "partial log-end listing: a partition it lacks is unknown, not a mismatch",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 5, 5), spPart(1, 5, 5)}}},
				ends: spEnds(0, 100), endsErr: errors.New("broker 2 unreachable")},
			want: syncPlan{
				groups: []groupSync{{name: "g", parts: []partSync{
					decided(0, 5, -1, 100, "", true),
					undecided(1, 5, "target end offset unknown: broker 2 unreachable"),
				}}},
				commits: []groupCommit{commits("g", 0, 5)},
			},
		},

		// Target offsets not fetched.
		{
			name: "target offsets fetch failed: the group is skipped with the error",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{spPart(0, 99, 99)}}, {"h", []syncPart{spPart(0, 99, 99)}}},
				states:  map[string]string{"g": "Empty"},
				offsets: map[string]targetOffsets{"g": {err: errFetch}, "h": {err: kerr.GroupIDNotFound}},
				ends:    spEnds(0, 100)},
			want: syncPlan{
				groups: []groupSync{
					{name: "g", err: "fetching target offsets: coordinator not available"},
					{name: "h", parts: []partSync{decided(0, 99, -1, 100, "", true)}}, // GROUP_ID_NOT_FOUND: absent
				},
				commits: []groupCommit{commits("h", 0, 99)},
			},
		},

		// What is committed: the best known translation.
		{
			name: "a checkpoint of an earlier source offset beats a lower translation",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{
				{key: spKey(0), source: 90, translated: 50, last: &Checkpoint{UpstreamOffset: 80, DownstreamOffset: 85}},
			}}}, ends: spEnds(0, 100)},
			want: syncPlan{
				groups:  []groupSync{{name: "g", parts: []partSync{decided(0, 85, -1, 100, "", true)}}},
				commits: []groupCommit{commits("g", 0, 85)},
			},
		},
		{
			name: "a checkpoint of a later source offset (the source group rewound) is not used",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{
				{key: spKey(0), source: 90, translated: 50, last: &Checkpoint{UpstreamOffset: 200, DownstreamOffset: 190}},
			}}}, ends: spEnds(0, 300)},
			want: syncPlan{
				groups:  []groupSync{{name: "g", parts: []partSync{decided(0, 50, -1, 300, "", true)}}},
				commits: []groupCommit{commits("g", 0, 50)},
			},
		},
		{
			name: "untranslated partitions are not planned; a group with none is left out",
			in: syncInputs{groups: []syncGroup{
				{"g", []syncPart{spPart(0, 10, -1), spPart(1, 10, 10)}},
				{"none", []syncPart{spPart(0, 10, -1)}},
			}, ends: spEnds(0, 100, 1, 100)},
			want: syncPlan{
				groups:  []groupSync{{name: "g", parts: []partSync{decided(1, 10, -1, 100, "", true)}}},
				commits: []groupCommit{commits("g", 1, 10)},
			},
		},
		{
			name: "several partitions: only those behind are committed, with their metadata",
			in: syncInputs{groups: []syncGroup{{"g", []syncPart{
				{key: spKey(0), source: 40, translated: 40, metadata: "m0"},
				{key: spKey(1), source: 41, translated: 41, metadata: "m1"},
				{key: spKey(2), source: 42, translated: 42, metadata: "m2"},
			}}},
				states: map[string]string{"g": "Empty"}, offsets: map[string]targetOffsets{"g": spOffsets(0, 30, 1, 41, 2, 50)},
				ends: spEnds(0, 100, 1, 100, 2, 100)},
			want: syncPlan{
				groups: []groupSync{{name: "g", parts: []partSync{
					decided(0, 40, 30, 100, "", true),
					decided(1, 41, 41, 100, "", false),
					decided(2, 42, 50, 100, ReasonTargetAhead, false),
				}}},
				commits: []groupCommit{{group: "g", parts: []commitPart{{key: spKey(0), offset: 40, metadata: "m0"}}}},
			},
		},

		// MM2's MirrorCheckpointTaskTest syncGroupOffset cases: MM2 commits
		// the latest checkpoint's downstream offset (kmirror: the best known
		// translation, here the checkpoint).
		{
			name: "MM2 testSyncOffset: two idle groups behind their checkpoints move to them",
			in: syncInputs{
				groups: []syncGroup{
					{"consumer1", []syncPart{{key: cpKeyTP{"topic1", 0}, source: 200, translated: -1, last: &Checkpoint{UpstreamOffset: 200, DownstreamOffset: 101}, metadata: "metadata"}}},
					{"consumer2", []syncPart{{key: cpKeyTP{"topic2", 0}, source: 100, translated: -1, last: &Checkpoint{UpstreamOffset: 100, DownstreamOffset: 51}, metadata: "metadata"}}},
				},
				states: map[string]string{"consumer1": "Empty", "consumer2": "Empty"},
				offsets: map[string]targetOffsets{
					"consumer1": {offsets: map[cpKeyTP]int64{{"topic1", 0}: 100}},
					"consumer2": {offsets: map[cpKeyTP]int64{{"topic2", 0}: 50}},
				},
				ends: map[cpKeyTP]targetEnd{{"topic1", 0}: {offset: 1000}, {"topic2", 0}: {offset: 1000}},
			},
			want: syncPlan{
				groups: []groupSync{
					{name: "consumer1", parts: []partSync{{key: cpKeyTP{"topic1", 0}, want: 101, endKnown: true, target: 100, end: 1000, commit: true}}},
					{name: "consumer2", parts: []partSync{{key: cpKeyTP{"topic2", 0}, want: 51, endKnown: true, target: 50, end: 1000, commit: true}}},
				},
				commits: []groupCommit{
					{group: "consumer1", parts: []commitPart{{key: cpKeyTP{"topic1", 0}, offset: 101, metadata: "metadata"}}},
					{group: "consumer2", parts: []commitPart{{key: cpKeyTP{"topic2", 0}, offset: 51, metadata: "metadata"}}},
				},
			},
		},
		{
			name: "MM2 testSyncOffsetForTargetGroupWithNullOffsetAndMetadata: a null (-1) target offset is overwritten",
			in: syncInputs{groups: []syncGroup{{"consumer", []syncPart{
				{key: spKey(0), source: 200, translated: -1, last: &Checkpoint{UpstreamOffset: 200, DownstreamOffset: 101}},
			}}},
				states: map[string]string{"consumer": "Empty"}, offsets: map[string]targetOffsets{"consumer": spOffsets(0, -1)},
				ends: spEnds(0, 1000)},
			want: syncPlan{
				groups:  []groupSync{{name: "consumer", parts: []partSync{decided(0, 101, -1, 1000, "", true)}}},
				commits: []groupCommit{commits("consumer", 0, 101)},
			},
		},
		{
			name: "MM2 syncGroupOffset: an idle group's new partition is written, one at or ahead is skipped, a group with nothing to write has no commit",
			in: syncInputs{
				groups: []syncGroup{
					{"mixed", []syncPart{spPart(0, 70, 70), spPart(1, 70, 70)}},
					{"done", []syncPart{spPart(0, 70, 70)}},
				},
				states:  map[string]string{"mixed": "Empty", "done": "Empty"},
				offsets: map[string]targetOffsets{"mixed": spOffsets(0, 70), "done": spOffsets(0, 80)},
				ends:    spEnds(0, 100, 1, 100),
			},
			want: syncPlan{
				groups: []groupSync{
					{name: "mixed", parts: []partSync{decided(0, 70, 70, 100, "", false), decided(1, 70, -1, 100, "", true)}},
					{name: "done", parts: []partSync{decided(0, 70, 80, 100, ReasonTargetAhead, false)}},
				},
				commits: []groupCommit{commits("mixed", 1, 70)},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := planSync(tc.in)
			if d := cmp.Diff(tc.want, got, planCmp...); d != "" {
				t.Errorf("planSync (-want +got):\n%s", d)
			}
		})
	}
}

func TestIdleOnTarget(t *testing.T) {
	for _, tc := range []struct {
		state  string
		listed bool
		want   bool
	}{
		{"", false, true},
		{"Empty", true, true},
		{"Dead", true, true},
		{"Stable", true, false},
		{"PreparingRebalance", true, false},
		{"CompletingRebalance", true, false},
		{"Assigning", true, false},
		{"Reconciling", true, false},
		{"", true, false},
		{"empty", true, false}, // states are case-sensitive, as the broker spells them
	} {
		if got := idleOnTarget(tc.state, tc.listed); got != tc.want {
			t.Errorf("idleOnTarget(%q, %v) = %v, want %v", tc.state, tc.listed, got, tc.want)
		}
	}
}

func TestBestOffset(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src, tr int64
		last    *Checkpoint
		want    int64
		wantOK  bool
	}{
		{"translation only", 90, 50, nil, 50, true},
		{"none", 90, -1, nil, -1, false},
		{"checkpoint of an earlier offset, higher", 90, 50, &Checkpoint{UpstreamOffset: 80, DownstreamOffset: 85}, 85, true},
		{"checkpoint of the same offset, higher", 90, 50, &Checkpoint{UpstreamOffset: 90, DownstreamOffset: 88}, 88, true},
		{"checkpoint of an earlier offset, lower", 90, 50, &Checkpoint{UpstreamOffset: 40, DownstreamOffset: 40}, 50, true},
		{"checkpoint of a later offset", 90, 50, &Checkpoint{UpstreamOffset: 200, DownstreamOffset: 190}, 50, true},
		{"checkpoint without translation", 90, -1, &Checkpoint{UpstreamOffset: 90, DownstreamOffset: 88}, 88, true},
	} {
		got, ok := bestOffset(tc.src, tc.tr, tc.last)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: bestOffset = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}
