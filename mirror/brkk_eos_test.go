package mirror

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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrkKTxnTimeoutAboveBrokerMax: the target's brokers allow
// transactions of at most 30 s (transaction.max.timeout.ms) and nothing
// sets transaction.timeout.ms, so exactly once asks for its default 60 s,
// which the coordinator refuses. The flow said only
// "INVALID_TRANSACTION_TIMEOUT: The transaction timeout is larger than the
// maximum value allowed by the broker": neither the value kmirror asked
// for nor which setting to change. It now names both.
func TestBrkKTxnTimeoutAboveBrokerMax(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst", kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "30000"}))
	topic := p.Topic("tt")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceN(t, &p.Source, topic, 0, 10)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 1
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	defer stop()
	want := "INVALID_TRANSACTION_TIMEOUT"
	advice := "exactly once asks dst for transactions of up to transaction.timeout.ms=60000: set dst.producer.transaction.timeout.ms"
	testcluster.Eventually(t, 30*time.Second, "the flow's error says what to set", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.State == StateRetrying && strings.Contains(st.Error, want) && strings.Contains(st.Error, advice), fmt.Sprintf("%s %q", st.State, st.Error)
	})
}

// TestBrkKEndTxnFault: the target's coordinator answers two EndTxn
// requests of the slot's transactional id with an error (non-retriable, or
// a moved coordinator): the transactions abort or are retried, and a
// read_committed reader sees every record exactly once.
func TestBrkKEndTxnFault(t *testing.T) {
	t.Parallel()
	for _, key := range []kmsg.Key{kmsg.EndTxn} {
		for _, e := range []*kerr.Error{kerr.UnknownServerError, kerr.NotCoordinator} {
			t.Run(fmt.Sprintf("%v-%s", key, e.Message), func(t *testing.T) {
				t.Parallel()
				p := testcluster.NewFakePair(t, "src", "dst")
				m, stop, fc, topic := eosLedger(t, p)
				h := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{key}, TxnID: transactionalID(defaultGroupID(fc.Source, fc.Target), 0), Err: e, Count: 2})
				produceN(t, &p.Source, topic, 0, 100)
				produceN(t, &p.Source, topic, 1, 100)
				testcluster.Eventually(t, 60*time.Second, "all 400", func() (bool, string) {
					st := m.Status().Flows[0]
					n := replicatedSum(st)
					return h.Hits() >= 1 && n == 400 && st.Lag == 0, fmt.Sprintf("hits %d, replicated %d, %s %s", h.Hits(), n, st.State, st.Error)
				})
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				checkLedgerCopied(t, p, topic)
			})
		}
	}
}

var _ = kgo.Record{}
var _ = context.Background

// TestBrkKTxnTimeoutBelowIntervalCommits: transaction.boundary=interval
// every 3 s, and the target's producer options set transaction.timeout.ms
// to 1 s. The coordinator aborted every transaction before its interval
// ended: the unit restarted, replayed and was aborted again for ever,
// committing nothing (0 of 300 records; only a warning at start said
// why). A transaction now commits before its timeout: every record is on
// the target exactly once, in order.
func TestBrkKTxnTimeoutBelowIntervalCommits(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	topic, fc := intervalEOSFlow(t, p, "tbi", 3*time.Second)
	m, stop := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.TransactionTimeout(time.Second)}}),
		WithFlow(fc))
	sp := produceSteadily(t, &p.Source, topic, 1, 300, 50)
	<-sp.done
	remote := p.Source.Alias + "." + topic
	testcluster.Eventually(t, 60*time.Second, "all 300 records committed", func() (bool, string) {
		st := m.Status().Flows[0]
		c := committedRecords(p, remote)
		return c == 300, fmt.Sprintf("%d read_committed; %s %q", c, st.State, st.Error)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	copiedOnceInOrder(t, p, topic, remote, 1)
}

// TestBrkKTxnSpan: an interval-bounded transaction commits at its
// interval when the transaction timeout leaves admin.timeout.ms after it,
// else timeout - admin.timeout.ms after it began (half the timeout when
// that leaves nothing).
func TestBrkKTxnSpan(t *testing.T) {
	for _, c := range []struct{ interval, admin, timeout, want time.Duration }{
		{3 * time.Second, 10 * time.Second, time.Second, 500 * time.Millisecond},
		{30 * time.Second, 10 * time.Second, 20 * time.Second, 10 * time.Second},
		{30 * time.Second, 10 * time.Second, 40 * time.Second, 30 * time.Second},
		{100 * time.Millisecond, 60 * time.Second, 60 * time.Second, 100 * time.Millisecond},
		{2 * time.Minute, 60 * time.Second, 60 * time.Second, 30 * time.Second},
	} {
		fc := FlowConfig{TransactionInterval: c.interval, AdminTimeout: c.admin}
		if got := txnSpan(&fc, c.timeout); got != c.want {
			t.Errorf("interval %v, admin.timeout.ms %v, transaction timeout %v: span %v, want %v", c.interval, c.admin, c.timeout, got, c.want)
		}
	}
}

// TestBrkKTxnIDRefusedSaysWhatToGrant: the target refuses the slot's
// transactional id (no TransactionalId ACL), first at the leader's fencing
// before the group's first assignment, then, once that passed, at a
// unit's own fencing when its session restarts. The flow said only
// "TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Transactional ID authorization
// failed."; it now names the ACL to grant. Once the ACL is there every
// record is copied exactly once.
func TestBrkKTxnIDRefusedSaysWhatToGrant(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	id := transactionalID(defaultGroupID(p.Source.Alias, p.Target.Alias), 0)
	advice := "TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Transactional ID authorization failed.; grant kmirror WRITE and DESCRIBE on transactional id " +
		id + " on dst (a PREFIXED TransactionalId ACL on " + id[:len(id)-1] + " covers every slot, ACLS.md)"
	refuse := func() *kfake.FaultHandle {
		return p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, TxnID: id, Err: kerr.TransactionalIDAuthorizationFailed, Count: -1})
	}
	h := refuse()
	topic := ledger(t, p, 100)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.ExactlyOnce, fc.Tasks = true, 1
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	says := func(what string) {
		t.Helper()
		testcluster.Eventually(t, 30*time.Second, what, func() (bool, string) {
			st := m.Status().Flows[0]
			return st.State == StateRetrying && strings.Contains(st.Error, advice), fmt.Sprintf("%s %q", st.State, st.Error)
		})
	}
	says("the leader's fencing says what to grant")
	h.Remove()
	waitReplicatedCommitted(t, m, 200)

	// The unit's session restarts (a produce its transaction cannot
	// survive) and fences again: refused.
	h = refuse()
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: p.Source.Alias + "." + topic, Err: kerr.InvalidProducerEpoch})
	produceN(t, &p.Source, topic, 0, 100)
	produceN(t, &p.Source, topic, 1, 100)
	says("the unit's fencing says what to grant")
	h.Remove()
	waitReplicatedCommitted(t, m, 400)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkLedgerCopied(t, p, topic)
}

// TestBrkKExactlyOnceNonIdempotentProducerRefused: exactly once with the
// target's producer options disabling idempotent writes
// (enable.idempotence=false, or acks=1, which the properties turn into the
// same option). New accepted it, and the flow retried for ever with
// franz-go's "cannot both disable idempotent writes and use transactional
// IDs", naming no setting. New now refuses it, naming the settings to
// change, from the properties file as from the Go API.
func TestBrkKExactlyOnceNonIdempotentProducerRefused(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	fc := fastFlow(p)
	fc.ExactlyOnce = true
	want := "exactly once (flow src->dst) writes with transactional producers, which must be idempotent with acks=all, and the producer options of dst refuse one"
	fix := "remove dst.producer.enable.idempotence=false and set dst.producer.acks=all"
	_, err := New(WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.DisableIdempotentWrite()}}),
		WithFlow(fc))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "dst.producer.enable.idempotence" || !strings.Contains(ce.Reason, want) || !strings.Contains(ce.Reason, fix) {
		t.Fatalf("New: %v, want a ConfigError for dst.producer.enable.idempotence saying %q and %q", err, want, fix)
	}
	fc.ExactlyOnce = false
	m, err := New(WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.DisableIdempotentWrite()}}),
		WithFlow(fc))
	if err != nil {
		t.Fatalf("at least once, a non-idempotent producer is allowed: %v", err)
	}
	m.Close()

	for _, line := range []string{"dst.producer.enable.idempotence = false", "dst.producer.acks = 1"} {
		props := "clusters = src, dst\nsrc.bootstrap.servers = " + p.Source.Brokers[0] + "\ndst.bootstrap.servers = " + p.Target.Brokers[0] +
			"\nsrc->dst.enabled = true\ndst.exactly.once.source.support = enabled\n" + line + "\n"
		pr, err := ParseProperties(strings.NewReader(props))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		_, err = New(pr.Opts()...)
		if !errors.As(err, &ce) || ce.Key != "dst.producer.enable.idempotence" || !strings.Contains(ce.Reason, want) {
			t.Errorf("%s: New: %v, want a ConfigError for dst.producer.enable.idempotence", line, err)
		}
	}
}

// TestBrkKResizeNonIdempotentProducer: an at-least-once flow whose target
// producer is not idempotent (acks=1, a common MM2 setting) is resized
// offline from 2 to 3 slots. The resize fences the old slots'
// transactional ids (an exactly-once run may have left transactions
// open), with a client built from the producer options: franz-go refused
// it ("cannot both disable idempotent writes and use transactional IDs")
// and the resize failed. It now fences both ids with the connection
// options and the units' transaction timeout, and the coordination topic
// gets 3 partitions; a member then copies the records added after it.
func TestBrkKResizeNonIdempotentProducer(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, topic, 4, nil)
	for part := range int32(4) {
		produceN(t, &p.Source, topic, part, 5)
	}
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 2
	fc.DisableHeartbeats, fc.DisableCheckpoints = true, true
	opts := []Opt{WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts(), Producer: []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck())}})}
	m, stop := runMirror(t, append(opts, WithFlow(fc))...)
	waitReplicatedCommitted(t, m, 20)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	fc.Tasks = 3
	resizer, err := newMirror(t, append(opts, WithFlow(fc))...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := resizer.ResizeSlots(context.Background())
	group := defaultGroupID(fc.Source, fc.Target)
	if err != nil || len(got) != 1 || got[0].From != 2 || got[0].To != 3 || fmt.Sprint(got[0].Fenced) != fmt.Sprint([]string{group + "-0", group + "-1"}) {
		t.Fatalf("ResizeSlots: %+v, %v; want 2 -> 3 slots, %s-0 and %s-1 fenced", got, err, group, group)
	}
	resizer.Close()
	for part := range int32(4) {
		produceN(t, &p.Source, topic, part, 5)
	}
	m2, stop2 := runMirror(t, append(opts, WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "three slots", func() (bool, string) {
		ms := m2.Status().Flows[0].Member
		return len(ms.Slots) == 3, fmt.Sprint(ms)
	})
	waitReplicatedCommitted(t, m2, 20)
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	src := testcluster.ReadAll(t, &p.Source, topic)
	dst := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+topic)
	for part := range int32(4) {
		if dups := exactCopy(t, part, src[part], dst[part]); dups != 0 {
			t.Errorf("partition %d: %d duplicates across the resize", part, dups)
		}
	}
}

// TestBrkKUserTransactionalIDRefused: a kgo.TransactionalID in a cluster's
// Client or Producer options (a service's producer options passed as they
// are). New accepted it; every producer kmirror created for the cluster
// took it, the status client refused itself ("cannot both disable
// idempotent writes and use transactional IDs") and nothing was
// replicated, at least once as exactly once. New now refuses it, saying
// that kmirror sets the transactional ids itself.
func TestBrkKUserTransactionalIDRefused(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	want := "cluster dst has a kgo.TransactionalID: kmirror sets the transactional ids of its exactly-once producers itself"
	for _, eos := range []bool{false, true} {
		for _, field := range []string{"Client", "Producer"} {
			fc := fastFlow(p)
			fc.ExactlyOnce = eos
			dst := ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}
			if field == "Client" {
				dst.Client = append(dst.Client, kgo.TransactionalID("svc"))
			} else {
				dst.Producer = []kgo.Opt{kgo.TransactionalID("svc")}
			}
			_, err := New(WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}), WithCluster(dst), WithFlow(fc))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != "ClusterConfig."+field || ce.Value != "dst" || !strings.Contains(ce.Reason, want) {
				t.Errorf("exactly once %t, in %s: New: %v, want a ConfigError for ClusterConfig.%s saying %q", eos, field, err, field, want)
			}
		}
	}
	// Without it, the same options are accepted.
	m, err := New(append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}
