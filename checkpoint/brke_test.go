package checkpoint

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrkEGroupSyncBelowTargetLogStart: a lagging source group (at 20)
// whose translation (20, exact) is below the remote partition's log start
// (50: the target's retention or DeleteRecords removed the copies of 0-49).
// Group offset sync committed 20 and reported the group synced and
// SafeToSwitch: a consumer failing over gets OFFSET_OUT_OF_RANGE there and,
// with Kafka's default auto.offset.reset=latest, skips the 50 records the
// target still holds and the group never read. It commits the log start
// now (the first record still there: nothing readable is skipped) and
// says why the group is not safe to switch (the copies of 20-49 are gone);
// a group translated at or above the log start (70) is synced as before,
// and a target group ahead of the log start (60) is not moved back.
func TestBrkEGroupSyncBelowTargetLogStart(t *testing.T) {
	f := newFixture(t, 1, 100)
	f.syncs(0, [2]int64{0, 0}, [2]int64{99, 99})
	f.runs(0, [5]int64{-1, -1, 0, 0, 100})
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: f.remote, Partition: 0, At: 50})
	res, err := testcluster.Admin(t, &f.p.Target).DeleteRecords(context.Background(), del)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	lag, ok, ahead := f.p.Group("lag"), f.p.Group("ok"), f.p.Group("ahead")
	f.commit(&f.p.Source, lag, f.topic, map[int32]int64{0: 20})
	f.commit(&f.p.Source, ok, f.topic, map[int32]int64{0: 70})
	f.commit(&f.p.Source, ahead, f.topic, map[int32]int64{0: 20})
	f.commit(&f.p.Target, ahead, f.remote, map[int32]int64{0: 60})
	e, _ := f.start(withSync)

	want := map[string]int64{lag: 50, ok: 70, ahead: 60}
	testcluster.Eventually(t, 20*time.Second, "target group offsets", func() (bool, string) {
		got := map[string]int64{}
		for g := range want {
			if o, found := groupOffsets(t, &f.p.Target, g, f.remote)[0]; found {
				got[g] = o
			}
		}
		gs, _ := groupStatus(e, lag)
		d := cmp.Diff(want, got)
		return d == "" && len(gs.Partitions) == 1 && gs.Partitions[0].TargetOffset == 50, d
	})
	for g, wantReason := range map[string]string{lag: ReasonBelowTargetLogStart, ok: "", ahead: ReasonBelowTargetLogStart} {
		gs, _ := groupStatus(e, g)
		if len(gs.Partitions) != 1 || gs.Partitions[0].Reason != wantReason || gs.SafeToSwitch != (wantReason == "") {
			t.Errorf("group %s: status %+v; want partition reason %q, SafeToSwitch %v", g, gs, wantReason, wantReason == "")
		}
	}
	gs, _ := groupStatus(e, lag)
	if p := gs.Partitions[0]; p.Translated != 20 || p.TargetOffset != 50 || gs.State != StateCheckpointed {
		t.Errorf("group %s: %s, partition %+v; want checkpointed, translated 20, target 50", lag, gs.State, p)
	}
	cp := latest(f.checkpoints())[fmt.Sprintf("%s/%s/0", lag, f.remote)]
	if cp.DownstreamOffset != 20 {
		t.Errorf("checkpoint of %s: %+v, want downstream 20 (the translation, as MM2's readers expect)", lag, cp)
	}
}

// TestBrkEPlanSyncBelowTargetLogStart: planSync's side of
// TestBrkEGroupSyncBelowTargetLogStart. Partition 0's log is [50, 100):
// a translation below 50 commits 50 into a group without an offset or
// below it, nothing into one at 50 or ahead; a translation at or above
// the log start, and one of partition 1 (its start not listed: 0), are
// planned as before.
func TestBrkEPlanSyncBelowTargetLogStart(t *testing.T) {
	ends := map[cpKeyTP]targetEnd{spKey(0): {offset: 100, start: 50}, spKey(1): {offset: 100}}
	part := func(p int32, want, target int64, reason string, commit bool) partSync {
		return partSync{key: spKey(p), want: want, reason: reason, endKnown: true, target: target, end: 100, commit: commit}
	}
	in := syncInputs{
		groups: []syncGroup{
			{name: "ahead", parts: []syncPart{spPart(0, 20, 20)}},
			{name: "at", parts: []syncPart{spPart(0, 20, 20)}},
			{name: "below", parts: []syncPart{spPart(0, 20, 20), spPart(1, 20, 20)}},
			{name: "new", parts: []syncPart{spPart(0, 20, 20)}},
			{name: "within", parts: []syncPart{spPart(0, 70, 70)}},
		},
		offsets: map[string]targetOffsets{
			"ahead": spOffsets(0, 60),
			"at":    spOffsets(0, 50),
			"below": spOffsets(0, 30, 1, 10),
		},
		ends: ends,
	}
	want := syncPlan{
		groups: []groupSync{
			{name: "ahead", parts: []partSync{part(0, 20, 60, ReasonBelowTargetLogStart, false)}},
			{name: "at", parts: []partSync{part(0, 20, 50, ReasonBelowTargetLogStart, false)}},
			{name: "below", parts: []partSync{part(0, 20, 30, ReasonBelowTargetLogStart, true), part(1, 20, 10, "", true)}},
			{name: "new", parts: []partSync{part(0, 20, -1, ReasonBelowTargetLogStart, true)}},
			{name: "within", parts: []partSync{part(0, 70, -1, "", true)}},
		},
		commits: []groupCommit{commits("below", 0, 50, 1, 20), commits("new", 0, 50), commits("within", 0, 70)},
	}
	if d := cmp.Diff(want, planSync(in), planCmp...); d != "" {
		t.Errorf("plan (-want +got):\n%s", d)
	}
}

// TestBrkECheckpointsTopicRecreatedWithDeletePolicy: the checkpoints topic
// is deleted and created again by someone with cleanup.policy=delete (the
// broker's default, kafka-topics.sh --create without --config) while the
// emitter runs. The emitter refuses such a topic at start (its records
// expire, and an idle group's checkpoint is never written again), but took
// it at run time: it wrote every checkpoint into it, to expire with
// retention.ms. It checks the re-created topic as at start now: nothing is
// written while it deletes records, every group's status names the fix,
// and once the topic is altered to compact every checkpoint is written
// again.
func TestBrkECheckpointsTopicRecreatedWithDeletePolicy(t *testing.T) {
	f := newFixture(t, 1, 100)
	e, g1, g2, k1, k2 := twoGroupsCheckpointed(t, f, func() *Emitter { e, _ := f.start(); return e })
	cpTopic := f.pol.CheckpointsTopic(f.p.Source.Alias)
	adm := testcluster.Admin(t, &f.p.Target)
	if _, err := adm.DeleteTopics(context.Background(), cpTopic); err != nil {
		t.Fatal(err)
	}
	del, day := "delete", "86400000"
	testcluster.CreateTopic(t, &f.p.Target, cpTopic, 1, map[string]*string{"cleanup.policy": &del, "retention.ms": &day})
	// g1 moves: its write finds the topic re-created (UNKNOWN_TOPIC_ID).
	f.commit(&f.p.Source, g1, f.topic, map[int32]int64{0: 70})
	waitReasons(t, e, []string{g1, g2}, "cleanup.policy", "compact")
	if cps := f.checkpoints(); len(cps) != 0 {
		t.Fatalf("checkpoints written into the topic that deletes records: %+v", cps)
	}
	compact := "compact"
	if _, err := adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Name: "cleanup.policy", Value: &compact}}, cpTopic); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 20*time.Second, "every checkpoint written again", func() (bool, string) {
		cps := latest(f.checkpoints())
		return len(cps) == 2 && cps[k1].DownstreamOffset == 70 && cps[k2].DownstreamOffset == 40, fmt.Sprintf("%+v", cps)
	})
	waitReasons(t, e, []string{g1, g2})
}

// TestBrkEGroupSyncMetadataTooLargeSaysWhy: a source group's commit
// metadata (5000 bytes: the source's offset.metadata.max.bytes allowed it)
// is above the target's (Kafka's default 4096, emulated with kfake's
// hook): the target refuses the commit with OFFSET_METADATA_TOO_LARGE on
// every round. The partition's status said "commit failed:
// OFFSET_METADATA_TOO_LARGE: The metadata field of the offset request was
// too large." alone; it names the size, the broker setting and the fix now.
// Another group (small metadata) is synced.
func TestBrkEGroupSyncMetadataTooLargeSaysWhy(t *testing.T) {
	f := newFixtureOn(t, testcluster.NewFakePair(t, "src", "dst"), 1, 100)
	f.syncs(0, [2]int64{0, 0}, [2]int64{99, 99})
	f.runs(0, [5]int64{-1, -1, 0, 0, 100})
	big, small := f.p.Group("big"), f.p.Group("small")
	for g, md := range map[string]string{big: strings.Repeat("m", 5000), small: "small"} {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: f.topic, Partition: 0, At: 60, LeaderEpoch: -1, Metadata: md})
		if err := testcluster.Admin(t, &f.p.Source).CommitAllOffsets(context.Background(), g, os); err != nil {
			t.Fatal(err)
		}
	}
	f.p.Target.Fake.ControlKey(int16(kmsg.OffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		f.p.Target.Fake.KeepControl()
		req := kreq.(*kmsg.OffsetCommitRequest)
		if req.Group != big {
			return nil, nil, false
		}
		// Kafka refuses the partitions whose metadata is over its
		// offset.metadata.max.bytes (all of this group's).
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.OffsetMetadataTooLarge.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	e, _ := f.start(withSync)
	want := "commit failed: OFFSET_METADATA_TOO_LARGE: The metadata field of the offset request was too large.; the source commit's metadata is 5000 bytes, above the target's limit: raise offset.metadata.max.bytes on the brokers of " +
		f.p.Target.Alias + " (4096 by default), or commit shorter metadata on the source"
	testcluster.Eventually(t, 20*time.Second, "the big group names the fix, the small one synced", func() (bool, string) {
		gb, _ := groupStatus(e, big)
		gs, _ := groupStatus(e, small)
		return len(gb.Partitions) == 1 && gb.Partitions[0].Reason == want && gs.State == StateSynced, fmt.Sprintf("%+v\n%+v", gb, gs)
	})
	for g, wantOffsets := range map[string]map[int32]int64{big: {}, small: {0: 60}} {
		if got := groupOffsets(t, &f.p.Target, g, f.remote); !cmp.Equal(got, wantOffsets) {
			t.Errorf("%s: target offsets %v, want %v", g, got, wantOffsets)
		}
	}
}

// TestBrkECheckpointsTopicAlteredToDelete: the checkpoints topic the
// emitter writes is altered in place to cleanup.policy=delete with a
// retention (same topic ID). The emitter refuses such a topic at start,
// but went on writing into it: the checkpoints of idle groups would expire
// with retention.ms, and nothing said so. The periodic listing of the
// topic checks it as at start now: nothing is written while it deletes
// records (g1's move to 70 waits), every group's status names the fix, and
// once it is altered back every checkpoint is written again: g2's (idle,
// it may have expired meanwhile) and g1's new one, 4 records in all.
func TestBrkECheckpointsTopicAlteredToDelete(t *testing.T) {
	f := newFixture(t, 1, 100)
	e, g1, g2, k1, k2 := twoGroupsCheckpointed(t, f, func() *Emitter { return f.startSweeping(time.Second) })
	cpTopic := f.pol.CheckpointsTopic(f.p.Source.Alias)
	adm := testcluster.Admin(t, &f.p.Target)
	alter := func(cs ...kadm.AlterConfig) {
		t.Helper()
		res, err := adm.AlterTopicConfigs(context.Background(), cs, cpTopic)
		if err == nil {
			_, err = res.On(cpTopic, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	del, day, compact := "delete", "86400000", "compact"
	alter(kadm.AlterConfig{Name: "cleanup.policy", Value: &del}, kadm.AlterConfig{Name: "retention.ms", Value: &day})
	waitReasons(t, e, []string{g1, g2}, "cleanup.policy=delete", "set cleanup.policy=compact")
	f.commit(&f.p.Source, g1, f.topic, map[int32]int64{0: 70})
	testcluster.Eventually(t, 20*time.Second, "g1 at 70 not written", func() (bool, string) {
		gs, _ := groupStatus(e, g1)
		return len(gs.Partitions) == 1 && gs.Partitions[0].SourceOffset == 70, fmt.Sprintf("%+v", gs)
	})
	if cps := f.checkpoints(); len(cps) != 2 {
		t.Fatalf("checkpoints written into the topic that deletes records: %+v", cps)
	}
	alter(kadm.AlterConfig{Name: "cleanup.policy", Value: &compact})
	testcluster.Eventually(t, 20*time.Second, "every checkpoint written again", func() (bool, string) {
		cps := f.checkpoints()
		l := latest(cps)
		return len(cps) == 4 && l[k1].DownstreamOffset == 70 && l[k2].DownstreamOffset == 40, fmt.Sprintf("%+v", cps)
	})
	waitReasons(t, e, []string{g1, g2})
}

// twoGroupsCheckpointed commits groups g1 at 60 and g2 at 40 on partition
// 0 of f's topic (100 records, translated exactly by f's syncs and runs),
// starts the emitter with start and waits for both checkpoints. k1 and k2
// are the groups' checkpoint keys (latest).
func twoGroupsCheckpointed(t *testing.T, f *fixture, start func() *Emitter) (e *Emitter, g1, g2, k1, k2 string) {
	t.Helper()
	f.syncs(0, [2]int64{0, 0}, [2]int64{99, 99})
	f.runs(0, [5]int64{-1, -1, 0, 0, 100})
	g1, g2 = f.p.Group("g1"), f.p.Group("g2")
	f.commit(&f.p.Source, g1, f.topic, map[int32]int64{0: 60})
	f.commit(&f.p.Source, g2, f.topic, map[int32]int64{0: 40})
	e = start()
	k1, k2 = g1+"/"+f.remote+"/0", g2+"/"+f.remote+"/0"
	testcluster.Eventually(t, 20*time.Second, "first checkpoints", func() (bool, string) {
		cps := latest(f.checkpoints())
		return cps[k1].DownstreamOffset == 60 && cps[k2].DownstreamOffset == 40, fmt.Sprintf("%+v", cps)
	})
	return e, g1, g2, k1, k2
}

// waitReasons waits until the status reason of each group of groups holds
// every string of subs; with no subs, until each has no reason.
func waitReasons(t *testing.T, e *Emitter, groups []string, subs ...string) {
	t.Helper()
	what := "every group's status names the fix"
	if len(subs) == 0 {
		what = "statuses cleared"
	}
	testcluster.Eventually(t, 20*time.Second, what, func() (bool, string) {
		var got []string
		for _, g := range groups {
			gs, _ := groupStatus(e, g)
			ok := len(subs) > 0 || gs.Reason == ""
			for _, sub := range subs {
				ok = ok && strings.Contains(gs.Reason, sub)
			}
			if !ok {
				got = append(got, g+": "+gs.Reason)
			}
		}
		return len(got) == 0, strings.Join(got, "; ")
	})
}
