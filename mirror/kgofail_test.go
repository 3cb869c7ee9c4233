package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestNothingAfterKgoFailureReachesTarget (regression, the flake of
// TestFaultWhileStreaming): when the target refuses a produce request
// (TOPIC_AUTHORIZATION_FAILED), franz-go fails the partition's buffered
// records and bumps the idempotent epoch at once, but the engine learned
// of it only when the failure's promise ran. Records the poll loop
// produced in between were written under the new epoch, and the restart,
// which resumes at the failed record, wrote them again: twice and out of
// order. The test makes that window as wide as it likes on every run: it
// holds the producer's promise goroutine at the failure's result, has
// the poll loop produce ten more records of the partition meanwhile, and
// gives franz-go two seconds to send them. None may reach the target
// before the failure is released; then the partition restarts and the
// target holds every source record once, in order.
func TestNothingAfterKgoFailureReachesTarget(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("held")
	m, remote, heldEnd := heldFailure(t, p, topic, kerr.TopicAuthorizationFailed, 1, nil)
	if heldEnd > 10 {
		t.Fatalf("records produced after franz-go failed the partition reached the target while the failure's result was held: end offset %d, want 10", heldEnd)
	}
	testcluster.Eventually(t, 60*time.Second, "partition restarted and caught up", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 30 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	got, want := probeTargetValues(t, p, remote, 0, false), probeValues(t, p, topic, 0)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("target: %s\n got %v", probeDiff(got, want), got)
	}
}

// heldFailure is the scenario of the produce-gate regressions, on kfake:
// a one-partition topic whose first 10 records are replicated; the target
// then refuses the partition's produce requests count times with refusal,
// while 10 more records arrive; franz-go's promise goroutine is held at
// the refused record's result while 10 records more are produced and the
// poll loop fetches them (source offsets up to 29), and for 2 s the remote
// partition's end offset is watched. The target producer gets
// targetProducer. heldFailure releases the result and returns the
// Mirror, the remote topic and the highest end offset seen while held.
func heldFailure(t *testing.T, p *testcluster.Pair, topic string, refusal *kerr.Error, count int, targetProducer []kgo.Opt) (*Mirror, string, int64) {
	t.Helper()
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "a", 0, 0, 10)...)

	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var polled int64 = -1 // last source offset the poll loop handled
	hooks := &unitHooks{
		ack: func(r *kgo.Record, err error) {
			if err != nil && r.Topic == remote && errors.Is(err, refusal) {
				once.Do(func() {
					close(holding)
					<-release
				})
			}
		},
		polled: func(tp string, _ int32, last int64, _ bool) {
			if tp == topic {
				mu.Lock()
				polled = max(polled, last)
				mu.Unlock()
			}
		},
	}
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: targetProducer}),
		WithFlow(recoveryFlow(p, topic)), withPartRetryFirst(200*time.Millisecond), withUnitHooks(hooks))
	waitReplicated(t, m, 10)

	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0}, Err: refusal, Count: count})
	testcluster.Produce(t, &p.Source, partRecords(topic, "b", 0, 0, 10)...)
	select {
	case <-holding:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the refused produce's result never came")
	}
	defer close(release)
	// The failure's result is held: the engine has not seen it. The poll
	// loop fetches the next records of the partition (and used to
	// produce them).
	testcluster.Produce(t, &p.Source, partRecords(topic, "c", 0, 0, 10)...)
	testcluster.Eventually(t, 30*time.Second, "the poll loop fetched the records after the failure", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return polled >= 29, fmt.Sprintf("polled up to %d", polled)
	})
	adm := kadm.NewClient(testcluster.Client(t, &p.Target))
	heldEnd := int64(-1)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ends, err := adm.ListEndOffsets(t.Context(), remote)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := ends.Lookup(remote, 0); ok {
			heldEnd = max(heldEnd, o.Offset)
		}
	}
	return m, remote, heldEnd
}

// TestClosedGateFailsRecordsUnsent: the mechanism under the regression
// above, with franz-go alone. franz-go logs the refused batch (failLogger
// trips the partition's gate on that goroutine, before franz-go fails the
// buffered records and bumps the epoch); records produced after the trip
// with the closed gate as their context are failed unsent
// (errPartitionStopped, a context.Canceled), and the partition's end
// offset stays where the last acknowledged record left it. Another
// partition of the same producer, with its own gate, is not affected.
func TestClosedGateFailsRecordsUnsent(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := p.Topic("gate")
	testcluster.CreateTopic(t, &p.Target, topic, 2, nil)
	gates := []*produceGate{newProduceGate(), newProduceGate()}
	tripped := make(chan int32, 2)
	cl := testcluster.Client(t, &p.Target, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithLogger(&failLogger{trip: func(tp string, partition int32) {
			if tp == topic {
				gates[partition].close()
				tripped <- partition
			}
		}}))
	produce := func(partition int32, n int) []error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprint(i)), Context: gates[partition]}
			cl.Produce(t.Context(), r, func(_ *kgo.Record, err error) {
				errs[i] = err
				wg.Done()
			})
		}
		wg.Wait()
		return errs
	}
	for part := int32(0); part < 2; part++ {
		for _, err := range produce(part, 5) {
			if err != nil {
				t.Fatalf("partition %d, open gate: %v", part, err)
			}
		}
	}
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: 1})
	if errs := produce(0, 1); !errors.Is(errs[0], kerr.TopicAuthorizationFailed) {
		t.Fatalf("the refused record: %v, want TOPIC_AUTHORIZATION_FAILED", errs[0])
	}
	select {
	case part := <-tripped:
		if part != 0 {
			t.Fatalf("tripped partition %d, want 0", part)
		}
	default:
		t.Fatal("franz-go failed the batch without the failure message failLogger looks for (its wording changed?)")
	}
	for i, err := range produce(0, 10) {
		if !errors.Is(err, errPartitionStopped) || !errors.Is(err, context.Canceled) {
			t.Fatalf("record %d produced after the failure: %v, want errPartitionStopped", i, err)
		}
	}
	for _, err := range produce(1, 3) {
		if err != nil {
			t.Fatalf("partition 1: %v", err)
		}
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for part, want := range []int64{5, 8} {
		if o, _ := ends.Lookup(topic, int32(part)); o.Offset != want {
			t.Errorf("partition %d end offset %d, want %d", part, o.Offset, want)
		}
	}
}

// TestUnknownRemoteTopicRetriedQuietly (regression, issue 22: 727 of
// 20 000 partitions FAILED for 5 s on two brokers per cluster): a target
// broker that has not learnt of a remote topic yet answers its produce
// requests UNKNOWN_TOPIC_OR_PARTITION. The partition is retried quietly
// (never FAILED, no error logged, no partition_failed count): the
// target's listing gives the remote topic's known ID, and it restarts
// after its last acknowledged record. The target then holds every source
// record once, in order.
func TestUnknownRemoteTopicRetriedQuietly(t *testing.T) {
	t.Parallel()
	var lb logBuf
	p, m, topic, remote := unknownTopicRefused(t, "unknownyet", false, 12, WithLogger(lb.logger()))
	waitQuietlyReplicated(t, m, 20)
	if l := lb.lines("level=ERROR"); len(l) != 0 {
		t.Errorf("errors logged: %q", l)
	}
	if l := lb.lines("partition restarted: the target did not know its remote topic yet", "resume_after=9"); len(l) == 0 {
		t.Errorf("no quiet restart after offset 9 logged:\n%s", strings.Join(lb.lines("partition"), "\n"))
	}
	if fs := m.Status().Flows[0]; fs.FailedPartitions != 0 {
		t.Errorf("failed partitions %d", fs.FailedPartitions)
	}
	got, want := probeTargetValues(t, p, remote, 0, false), probeValues(t, p, topic, 0)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("target: %s\n got %v", probeDiff(got, want), got)
	}
}

// TestUnknownRemoteTopicRetriedQuietlyExactlyOnce: exactly once, a record
// refused with UNKNOWN_TOPIC_OR_PARTITION aborts its transaction, which
// ends the unit's session; the partition, carried into the next session,
// is still retried quietly (never FAILED), and the target's committed
// copy holds every record once.
func TestUnknownRemoteTopicRetriedQuietlyExactlyOnce(t *testing.T) {
	t.Parallel()
	p, m, topic, remote := unknownTopicRefused(t, "unknownyeteos", true, 12)
	waitQuietlyReplicated(t, m, 20)
	got, want := probeTargetValues(t, p, remote, 0, true), probeValues(t, p, topic, 0)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("target (read_committed): %s\n got %v", probeDiff(got, want), got)
	}
}

// TestUnknownRemoteTopicReportedExactlyOnce: exactly once, each quiet
// retry's aborted transaction ends the unit's session; the tries in a row
// still count across sessions, so a remote topic the target keeps
// refusing is reported FAILED after unknownQuietTries, as at least once
// (they restarted at zero with each session: RETRYING forever, every
// session of the unit ended every few hundred milliseconds).
func TestUnknownRemoteTopicReportedExactlyOnce(t *testing.T) {
	t.Parallel()
	_, m, _, _ := unknownTopicRefused(t, "unknowneos", true, 100000)
	testcluster.Eventually(t, 40*time.Second, "reported FAILED after the quiet tries", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && strings.Contains(ps.Error, "UNKNOWN_TOPIC_OR_PARTITION"), fmt.Sprintf("%+v", ps)
	})
}

// unknownTopicRefused is the scenario of the unknown-remote-topic tests,
// on kfake: a one-partition topic named after name whose first 10 records
// are replicated (exactly once when eos, with opts); the target then
// refuses the remote partition's produce requests refusals times with
// UNKNOWN_TOPIC_OR_PARTITION (more than franz-go retries by itself,
// UnknownTopicRetries, 4 by default: the record fails to the engine)
// while 10 more records arrive.
func unknownTopicRefused(t *testing.T, name string, eos bool, refusals int, opts ...Opt) (p *testcluster.Pair, m *Mirror, topic, remote string) {
	t.Helper()
	p = testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic = p.Topic(name)
	remote = p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	testcluster.Produce(t, &p.Source, partRecords(topic, "a", 0, 0, 10)...)
	fc := recoveryFlow(p, topic)
	fc.ExactlyOnce = eos
	m, _ = runMirror(t, recoveryOpts(p, fc, opts...)...)
	waitReplicated(t, m, 10)
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: remote, Partitions: []int32{0},
		Err: kerr.UnknownTopicOrPartition, Count: refusals})
	testcluster.Produce(t, &p.Source, partRecords(topic, "b", 0, 0, 10)...)
	return p, m, topic, remote
}

// waitQuietlyReplicated waits until partition 0 of m's flow replicated
// want records and is RUNNING, and fails the test if it was ever seen
// FAILED meanwhile.
func waitQuietlyReplicated(t *testing.T, m *Mirror, want int64) {
	t.Helper()
	var states []State
	testcluster.Eventually(t, 60*time.Second, "replicated after the quiet retries", func() (bool, string) {
		ps := partStatus(m, 0)
		if len(states) == 0 || states[len(states)-1] != ps.State {
			states = append(states, ps.State)
		}
		return ps.State == StateRunning && ps.Replicated == want && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	if slices.Contains(states, StateFailed) {
		t.Errorf("states seen %v: FAILED on a remote topic the broker did not know", states)
	}
}

// TestInitProducerIDErrorReplacesProducer (at least once): the target
// answers the unit producer's first InitProducerId UNKNOWN_SERVER_ERROR,
// once. kgo keeps a non-retriable InitProducerId error as its producer's
// state and fails every record it is given with it, without a request; the
// partitions failed, and each automatic restart ran on the same producer
// and failed again at once, forever (retries 1, 2, 3 ... backing off to 5
// minutes). Now the automatic restart finds the producer's id failed, ends
// the session, and the next one replicates every record with a new
// producer.
func TestInitProducerIDErrorReplacesProducer(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection (KMIRROR_*_BROKERS name real brokers)")
	}
	topic := ledger(t, p, 50)
	// The unit's producer is the flow's only idempotent one on the target
	// (the status, heartbeat and checkpoint producers are not): the fault
	// answers its InitProducerId.
	h := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.UnknownServerError})
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 1
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 60*time.Second, "both partitions replicated to 50", func() (bool, string) {
		st := m.Status().Flows[0]
		n := 0
		for _, ps := range st.Partitions {
			if ps.State == StateRunning && ps.Replicated == 50 {
				n++
			}
		}
		return h.Hits() == 1 && n == 2, fmt.Sprintf("fault hits %d, partitions %+v", h.Hits(), st.Partitions)
	})
	dst, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), p.Source.Alias+"."+topic, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(dst[0]) != 50 || len(dst[1]) != 50 {
		t.Fatalf("remote partitions hold %d and %d records, want 50 each", len(dst[0]), len(dst[1]))
	}
}
