package mirror

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrkPConsumeOptionsRefused: a service's consumer options passed in a
// ClusterConfig (kgo.ConsumeTopics, kgo.ConsumeRegex, ...). New accepted
// them; kmirror's consumers then fetched topics nobody polled, ignored
// every partition a slot added (ConsumeRegex), failed to join the flow's
// group (ConsumePartitions) or silently ignored the start offset. New now
// refuses each, naming the option and the cluster and what to set instead.
func TestBrkPConsumeOptionsRefused(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	for _, c := range []struct {
		opts    []kgo.Opt
		name    string
		instead string
	}{
		{[]kgo.Opt{kgo.ConsumeTopics("orders")}, "kgo.ConsumeTopics", "FlowConfig.Topics"},
		{[]kgo.Opt{kgo.ConsumeTopics("orders.*"), kgo.ConsumeRegex()}, "kgo.ConsumeTopics", "FlowConfig.Topics"},
		{[]kgo.Opt{kgo.ConsumeRegex()}, "kgo.ConsumeRegex", "FlowConfig.Topics"},
		{[]kgo.Opt{kgo.ConsumeRegex(), kgo.ConsumeExcludeTopics("x")}, "kgo.ConsumeRegex", "FlowConfig.Topics"},
		{[]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}})}, "kgo.ConsumePartitions", "kmirror assigns their partitions"},
		{[]kgo.Opt{kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd())}, "kgo.ConsumeResetOffset", "FlowConfig.StartOffset"},
		{[]kgo.Opt{kgo.ConsumeStartOffset(kgo.NewOffset().At(5))}, "kgo.ConsumeStartOffset", "FlowConfig.StartOffset"},
	} {
		for _, field := range []string{"Client", "Consumer", "Producer"} {
			src := ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}
			switch field {
			case "Client":
				src.Client = append(src.Client, c.opts...)
			case "Consumer":
				src.Consumer = c.opts
			case "Producer":
				src.Producer = c.opts
			}
			_, err := New(WithCluster(src), WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}), WithFlow(fastFlow(p)))
			want := "cluster src has " + c.name + ": kmirror's consumers choose their topics, partitions and start offsets themselves"
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != "ClusterConfig."+field || ce.Value != "src" || !strings.Contains(ce.Reason, want) || !strings.Contains(ce.Reason, c.instead) {
				t.Errorf("%s in %s: New: %v, want a ConfigError for ClusterConfig.%s saying %q and %q", c.name, field, err, field, want, c.instead)
			}
		}
	}
	// Consumer options that tune a client without choosing what it reads
	// stay allowed.
	m, err := New(WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(), Consumer: []kgo.Opt{
		kgo.FetchMaxWait(100e6), kgo.Rack("a"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	}}), WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}), WithFlow(fastFlow(p)))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}

// TestBrkPEveryBadRegexReported: a file, or a FlowConfig, with several bad
// regexes in one list, or in a list and its exclude list. Only the first
// was reported ("topics=\"bad(\"": the list's "worse[" and the exclude
// list's "x)" showed up one fix later), with Go's parse error but no fix.
// Every one is reported now, each with its key, its regex and what to
// write instead.
func TestBrkPEveryBadRegexReported(t *testing.T) {
	t.Parallel()
	const (
		closeGroup = "close the group with ), or write \\( for a literal parenthesis"
		closeClass = "close the class with ], or write \\[ for a literal bracket"
		openGroup  = "open the group with (, or write \\) for a literal parenthesis"
	)
	file := "clusters = a, b\na.bootstrap.servers = x:9092\nb.bootstrap.servers = y:9092\na->b.enabled = true\n" +
		"topics = ok.*, bad(, worse[\ntopics.exclude = x)\ngroups = [x\n"
	_, err := ParseProperties(strings.NewReader(file))
	var ces *ConfigErrors
	if !errors.As(err, &ces) || len(ces.Errs) != 3 {
		t.Fatalf("ParseProperties: %v, want 3 errors", err)
	}
	for i, want := range []struct{ key, value string }{
		{"topics", "ok.*, bad(, worse["}, {"topics.exclude", "x)"}, {"groups", "[x"},
	} {
		if ce := ces.Errs[i]; ce.Key != want.key || ce.Value != want.value {
			t.Errorf("error %d: %s=%q, want %s=%q", i, ce.Key, ce.Value, want.key, want.value)
		}
	}
	for i, frags := range [][]string{
		{"line 5: 2 of its regular expressions are bad: ", `"bad(": not a valid regular expression`, closeGroup, `"worse[": not a valid regular expression`, closeClass},
		{"line 6: not a valid regular expression", openGroup},
		{"line 7: not a valid regular expression", closeClass},
	} {
		for _, f := range frags {
			if !strings.Contains(ces.Errs[i].Reason, f) {
				t.Errorf("error %d: %q does not say %q", i, ces.Errs[i].Reason, f)
			}
		}
	}

	// The Go API: an error per bad regex.
	p := testcluster.NewFakePair(t, "src", "dst")
	fc := fastFlow(p)
	fc.Topics, fc.TopicsExclude, fc.Groups = []string{"ok.*", "bad(", "worse["}, []string{"x)"}, []string{"[x"}
	_, err = New(append(clusterOpts(p), WithFlow(fc))...)
	if !errors.As(err, &ces) {
		t.Fatalf("New: %v, want a *ConfigErrors", err)
	}
	var got []string
	for _, ce := range ces.Errs {
		got = append(got, ce.Key+"="+ce.Value)
	}
	want := []string{"src->dst.topics=bad(", "src->dst.topics=worse[", "src->dst.topics.exclude=x)", "src->dst.groups=[x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("New: errors %q, want %q", got, want)
	}
}

// TestBrkPInvalidRecordAdviceFollowsCleanupPolicy: the target refuses a
// batch holding a record without a key with INVALID_RECORD. The advice
// blamed the missing key ("which a topic with cleanup.policy=compact
// refuses: set the cleanup.policy ... to delete") whatever the remote
// topic's policy, also on a cleanup.policy=delete topic, which takes such
// records (a broker-side validation refused the batch there). It now
// follows the policy the flow read: the key on a compacted topic, the
// target's validation on a delete topic, both when it is unknown.
func TestBrkPInvalidRecordAdviceFollowsCleanupPolicy(t *testing.T) {
	t.Parallel()
	const keyCause = "the record at offset 4 has no key, which a topic with cleanup.policy=compact refuses"
	for _, policy := range []string{"compact", "delete"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			p := testcluster.NewFakePair(t, "src", "dst")
			topic := p.Topic("keyless")
			remote := p.Source.Alias + "." + topic
			testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"cleanup.policy": &policy})
			refuseKeyless(p, remote)
			recs := keylessAt4(topic)
			produceWith(t, &p.Source, kgo.NoCompression(), recs[:4])
			m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
			// Copied: the flow read the remote topic's configs before.
			testcluster.Eventually(t, 30*time.Second, "the keyed records copied", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.Replicated == 4 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
			})
			produceWith(t, &p.Source, kgo.NoCompression(), recs[4:])
			testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 4", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.State == StateFailed && ps.Replicated == 4, fmt.Sprintf("%+v", ps)
			})
			got := partStatus(m, 0).Error
			want, not := keyCause+" ("+remote+" has cleanup.policy=compact): set the cleanup.policy of "+remote+" to delete", "validation refused it"
			if policy == "delete" {
				want, not = "the target's validation refused it (a broker-side validation of the remote topic such as schema validation; "+
					remote+" has cleanup.policy=delete, which takes records without a key): fix the cause on the target", "compact"
			}
			if !strings.Contains(got, "refused the batch holding the record at offset 4") || !strings.Contains(got, want) || strings.Contains(got, not) {
				t.Errorf("partition error:\n%s\nwant it to say %q, and not %q", got, want, not)
			}
		})
	}
	// Not read (config sync on another member, the topic not described
	// yet): the key as a possible cause.
	got := recordAdvice(kerr.InvalidRecord, "a.orders", "b", 7, 9, "").Error()
	if want := "the record at offset 9 has no key: if the remote topic is compacted (cleanup.policy=compact refuses a record without a key), set the cleanup.policy of a.orders to delete"; !strings.Contains(got, want) ||
		!strings.Contains(got, "otherwise a broker-side validation of the remote topic such as schema validation refused it") {
		t.Errorf("advice with the policy unknown: %q, want it to say %q and name the broker-side validation", got, want)
	}
}

// TestBrkPNoEffectKeysValidated: a consumer key kmirror does not apply,
// with a value Kafka's client refuses (max.poll.records=0,
// session.timeout.ms=abc, allow.auto.create.topics=yes). MM2 fails the
// connector at start on each; kmirror accepted the file ("no effect"), so
// it failed only once moved back to MM2. Each is an error now, saying so;
// valid values stay accepted without effect.
func TestBrkPNoEffectKeysValidated(t *testing.T) {
	t.Parallel()
	const head = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
	_, err := ParseProperties(strings.NewReader(head +
		"A.consumer.max.poll.records = 0\nA.consumer.session.timeout.ms = abc\nA.consumer.allow.auto.create.topics = yes\nA.consumer.max.poll.interval.ms = 0\n"))
	var ces *ConfigErrors
	if !errors.As(err, &ces) || len(ces.Errs) != 4 {
		t.Fatalf("ParseProperties: %v, want 4 errors", err)
	}
	const refused = ": Kafka's client refuses it, so MM2's connector fails to start (the key has no effect in kmirror): fix the value or remove the line"
	for i, want := range []string{
		`A.consumer.max.poll.records="0": line 5: must be between 1 and 2147483647` + refused,
		`A.consumer.session.timeout.ms="abc": line 6: not a whole number` + refused,
		`A.consumer.allow.auto.create.topics="yes": line 7: must be true or false` + refused,
		`A.consumer.max.poll.interval.ms="0": line 8: must be between 1 and 2147483647` + refused,
	} {
		if got := strings.TrimPrefix(ces.Errs[i].Error(), "mirror: "); got != want {
			t.Errorf("error %d:\n got %s\nwant %s", i, got, want)
		}
	}
	if _, err := ParseProperties(strings.NewReader(head +
		"A.consumer.max.poll.records = 500\nA.consumer.session.timeout.ms = -1\nA.consumer.allow.auto.create.topics = FALSE\nA.consumer.auto.commit.interval.ms = 0\n")); err != nil {
		t.Errorf("valid values: %v", err)
	}
}

// TestBrkPFranzGoBoundsNamed: client keys with values Kafka's client takes
// but franz-go does not (linger.ms above a minute, connections.max.idle.ms
// above 15 minutes, delivery.timeout.ms below a second, a client.id
// longer than 256 bytes, ...). The file
// loaded, and New refused it with franz-go's words under the cluster's
// alias ("mirror: B: invalid client options: linger 2m0s is larger than
// allowed 1m0s"), naming neither the key nor its line. Each is the key's
// error now, with franz-go's bounds and the nearest value it takes; the
// bounds themselves are accepted by New.
func TestBrkPFranzGoBoundsNamed(t *testing.T) {
	t.Parallel()
	const head = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
	long := strings.Repeat("x", 257)
	for _, c := range []struct{ bad, want, bound string }{
		{"A.client.id = " + long, "takes a client id of at most 256 bytes (this one has 257): shorten it", "A.client.id = " + long[:256]},
		{"B.producer.linger.ms = 120000", "takes 0 to 60000 ms here: write 60000", "B.producer.linger.ms = 60000"},
		{"B.producer.delivery.timeout.ms = 999", "takes 1000 to 2147483647 ms here: write 1000", "B.producer.delivery.timeout.ms = 1000"},
		{"A.consumer.metadata.max.age.ms = 7200000", "takes 5000 to 3600000 ms here: write 3600000", "A.consumer.metadata.max.age.ms = 3600000"},
		{"A.consumer.metadata.max.age.ms = 10", "takes 5000 to 3600000 ms here: write 5000", "A.consumer.metadata.max.age.ms = 5000"},
		{"A.consumer.connections.max.idle.ms = 3600000", "takes 100 to 900000 ms here: write 900000", "A.consumer.connections.max.idle.ms = 900000"},
		{"A.consumer.connections.max.idle.ms = 50", "takes 100 to 900000 ms here: write 100", "A.consumer.connections.max.idle.ms = 100"},
		{"A.consumer.fetch.max.wait.ms = 5", "takes 10 to 2147483647 ms here: write 10", "A.consumer.fetch.max.wait.ms = 10"},
		{"B.producer.request.timeout.ms = 50", "takes 100 to 900000 ms here: write 100", "B.producer.request.timeout.ms = 100"},
		{"B.producer.max.request.size = 100", "takes 512 to 1072693248 bytes here: write 512", "B.producer.max.request.size = 512"},
		{"B.producer.max.request.size = 2000000000", "takes 512 to 1072693248 bytes here: write 1072693248", "B.producer.max.request.size = 1072693248"},
		{"A.consumer.fetch.max.bytes = 2000000000", "takes 1 to 1072693248 bytes here: write 1072693248", "A.consumer.fetch.max.bytes = 1072693248"},
		{"A.consumer.fetch.max.bytes = 1072693249", "takes 1 to 1072693248 bytes here: write 1072693248", "A.consumer.fetch.max.bytes = 200000000"},
	} {
		_, err := ParseProperties(strings.NewReader(head + c.bad + "\n"))
		key, value, _ := strings.Cut(c.bad, " = ")
		want := "mirror: " + key + "=\"" + value + "\": line 5: franz-go, kmirror's Kafka client, " + c.want
		if err == nil || err.Error() != want {
			t.Errorf("%s: ParseProperties: %v\nwant %s", c.bad, err, want)
		}
		p, err := ParseProperties(strings.NewReader(head + c.bound + "\n"))
		if err != nil {
			t.Errorf("%s: ParseProperties: %v", c.bound, err)
			continue
		}
		m, err := New(p.Opts()...)
		if err != nil {
			t.Errorf("%s: New: %v", c.bound, err)
			continue
		}
		m.Close()
	}
}

// TestBrkPLargeFetchBudgetReplicates: a flow whose fetch budget is above
// franz-go's default cap on a response (100 MiB, kgo.BrokerMaxReadBytes):
// `<source>->target.consumer.fetch.max.bytes = 209715200` with tasks.max=1
// (FetchMaxBytes: 200 MiB), which New and the properties loader accept.
// Every slot consumer refused itself ("max broker read bytes 104857600 is
// erroneously less than max fetch bytes 209715200") and nothing was
// replicated. The consumer's cap is raised with the budget now, as
// max.request.size raises the producer's, and a budget above what franz-go
// reads in one response (1 GiB) is cut to it.
func TestBrkPLargeFetchBudgetReplicates(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Topic("bigfetch")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	for i, c := range []struct {
		budget  int32
		shallow bool
	}{{200 << 20, false}, {200 << 20, true}, {math.MaxInt32, false}} {
		fc := recoveryFlow(p, topic)
		fc.FetchMaxBytes, fc.FetchMaxPartitionBytes = c.budget, 150<<20
		fc.ShallowCopy, fc.DisableProvenanceHeader = c.shallow, c.shallow
		produceN(t, &p.Source, topic, 0, 5)
		m, _ := runMirror(t, recoveryOpts(p, fc)...)
		testcluster.Eventually(t, 30*time.Second, "the records copied", func() (bool, string) {
			ps := partStatus(m, 0)
			return ps.State == StateRunning && ps.SourceEnd == int64(5*(i+1)) && ps.Lag == 0 && !ps.LagUnknown, fmt.Sprintf("%+v; flow %+v", ps, m.Status().Flows[0])
		})
		m.Close()
	}
	if got := len(testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+topic)[0]); got != 15 {
		t.Errorf("the remote partition holds %d records, want 15", got)
	}
}
