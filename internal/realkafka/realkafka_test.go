package realkafka

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestBrokers(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name           string
		source, target *string // nil: the variable is not in the environment
		wantSource     []string
		wantTarget     []string
		wantOK         bool
	}{
		{name: "both unset"},
		{name: "source only", source: str("127.0.0.1:19092")},
		{name: "target only", target: str("127.0.0.1:19192")},
		{name: "empty values", source: str(""), target: str("")},
		{name: "only commas and spaces", source: str(" , ,"), target: str("127.0.0.1:19192")},
		{
			name: "kafka.sh defaults", source: str("127.0.0.1:19092"), target: str("127.0.0.1:19192"),
			wantSource: []string{"127.0.0.1:19092"}, wantTarget: []string{"127.0.0.1:19192"}, wantOK: true,
		},
		{
			name: "lists with spaces and empty entries", source: str(" 127.0.0.1:1, ,127.0.0.2:2,"), target: str("localhost:3 ,"),
			wantSource: []string{"127.0.0.1:1", "127.0.0.2:2"}, wantTarget: []string{"localhost:3"}, wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for key, val := range map[string]*string{SourceBrokersEnv: tt.source, TargetBrokersEnv: tt.target} {
				t.Setenv(key, "") // restores the caller's value after the test
				if val == nil {
					if err := os.Unsetenv(key); err != nil {
						t.Fatalf("unset %s: %v", key, err)
					}
				} else {
					t.Setenv(key, *val)
				}
			}
			source, target, ok := Brokers()
			if ok != tt.wantOK {
				t.Errorf("Brokers() ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.wantSource, source); diff != "" {
				t.Errorf("Brokers() source (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTarget, target); diff != "" {
				t.Errorf("Brokers() target (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSkipMessageNamesVariablesAndCommand(t *testing.T) {
	for _, want := range []string{SourceBrokersEnv, TargetBrokersEnv, "internal/realkafka/kafka.sh start", "kafka.sh env"} {
		if !strings.Contains(SkipMessage, want) {
			t.Errorf("SkipMessage = %q, lacks %q", SkipMessage, want)
		}
	}
}

func FuzzSplitBrokers(f *testing.F) {
	for _, s := range []string{"", ",", "127.0.0.1:19092", " a:1 , ,b:2,", "\t,x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := splitBrokers(s)
		var want []string
		for _, b := range strings.Split(s, ",") {
			if b = strings.TrimSpace(b); b != "" {
				want = append(want, b)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("splitBrokers(%q) (-want +got):\n%s", s, diff)
		}
		for _, b := range got {
			if b == "" || strings.Contains(b, ",") || strings.TrimSpace(b) != b {
				t.Fatalf("splitBrokers(%q) gave entry %q", s, b)
			}
		}
	})
}

// TestRealClustersAnswer checks the clusters that kafka.sh starts: both answer,
// they are two different clusters, and each runs with the settings the other
// real-Kafka tests rely on.
func TestRealClustersAnswer(t *testing.T) {
	source, target, ok := Brokers()
	if !ok {
		t.Skip(SkipMessage)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The broker settings kafka.sh writes into server.properties.
	wantConfigs := map[string]string{
		"auto.create.topics.enable":                                   "false",
		"offsets.topic.replication.factor":                            "1",
		"transaction.state.log.replication.factor":                    "1",
		"group.initial.rebalance.delay.ms":                            "0",
		"log.retention.check.interval.ms":                             "1000",
		"group.min.session.timeout.ms":                                "500",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	}
	clusterIDs := map[string]string{}
	for _, c := range []struct {
		name  string
		seeds []string
	}{{"source", source}, {"target", target}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...))
		if err != nil {
			t.Fatalf("%s: kgo.NewClient(%v): %v", c.name, c.seeds, err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		md, err := adm.Metadata(ctx)
		if err != nil {
			t.Fatalf("%s %v: metadata: %v", c.name, c.seeds, err)
		}
		if md.Cluster == "" {
			t.Fatalf("%s %v: metadata has no cluster ID", c.name, c.seeds)
		}
		if len(md.Brokers) == 0 {
			t.Fatalf("%s %v: metadata lists no brokers", c.name, c.seeds)
		}
		clusterIDs[c.name] = md.Cluster

		rcs, err := adm.DescribeBrokerConfigs(ctx, md.Brokers[0].NodeID)
		if err != nil {
			t.Fatalf("%s: describe broker %d configs: %v", c.name, md.Brokers[0].NodeID, err)
		}
		rc, err := rcs.On(rcs[0].Name, nil)
		if err != nil {
			t.Fatalf("%s: broker %d configs: %v", c.name, md.Brokers[0].NodeID, err)
		}
		got := map[string]string{}
		for _, cfg := range rc.Configs {
			if _, ok := wantConfigs[cfg.Key]; ok && cfg.Value != nil {
				got[cfg.Key] = *cfg.Value
			}
		}
		if diff := cmp.Diff(wantConfigs, got); diff != "" {
			t.Errorf("%s broker %d configs (-want +got):\n%s", c.name, md.Brokers[0].NodeID, diff)
		}
	}
	if clusterIDs["source"] == clusterIDs["target"] {
		t.Errorf("source %v and target %v report the same cluster ID %q; want two different clusters",
			source, target, clusterIDs["source"])
	}
}

// TestRealClustersRoundTrip creates a topic on each real cluster, produces
// three records, reads them back from offset 0 and deletes the topic.
func TestRealClustersRoundTrip(t *testing.T) {
	source, target, ok := Brokers()
	if !ok {
		t.Skip(SkipMessage)
	}
	type rec struct {
		Partition int32
		Offset    int64
		Key       string
		Value     string
	}
	want := []rec{{0, 0, "k0", "v0"}, {0, 1, "k1", "v1"}, {0, 2, "k2", "v2"}}
	topic := fmt.Sprintf("realkafka-roundtrip-%d", time.Now().UnixNano())
	for _, c := range []struct {
		name  string
		seeds []string
	}{{"source", source}, {"target", target}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatalf("kgo.NewClient(%v): %v", c.seeds, err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatalf("create topic %s: %v", topic, err)
			}
			defer func() {
				if _, err := adm.DeleteTopic(context.Background(), topic); err != nil {
					t.Errorf("delete topic %s: %v", topic, err)
				}
			}()
			var recs []*kgo.Record
			for _, r := range want {
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(r.Key), Value: []byte(r.Value)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
			var got []rec
			for len(got) < len(want) {
				fs := cl.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("consumed %d of %d records from %s: %v", len(got), len(want), topic, err)
				}
				fs.EachError(func(topic string, p int32, err error) {
					t.Errorf("fetch %s/%d: %v", topic, p, err)
				})
				fs.EachRecord(func(r *kgo.Record) {
					got = append(got, rec{r.Partition, r.Offset, string(r.Key), string(r.Value)})
				})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("records read back from %s (-want +got):\n%s", topic, diff)
			}
		})
	}
}

// TestSASL: SASL reads every variable `kafka.sh env` prints with
// KMIRROR_KAFKA_SASL=1, and reports ok only when all are set.
func TestSASL(t *testing.T) {
	all := map[string]string{
		SourceSASLBrokersEnv: "127.0.0.1:1, 127.0.0.1:2", TargetSASLBrokersEnv: "127.0.0.1:3",
		SASLAdminUserEnv: "admin", SASLAdminPasswordEnv: "a-pw",
		SourceSASLUserEnv: "ks", SourceSASLPasswordEnv: "ks-pw",
		TargetSASLUserEnv: "kt", TargetSASLPasswordEnv: "kt-pw",
	}
	for k, v := range all {
		t.Setenv(k, v)
	}
	got, ok := SASL()
	want := SASLClusters{SourceBrokers: []string{"127.0.0.1:1", "127.0.0.1:2"}, TargetBrokers: []string{"127.0.0.1:3"},
		Admin: PlainUser{"admin", "a-pw"}, Source: PlainUser{"ks", "ks-pw"}, Target: PlainUser{"kt", "kt-pw"}}
	if !ok || !cmp.Equal(got, want) {
		t.Fatalf("SASL() = %+v, %v; want %+v, true", got, ok, want)
	}
	for k := range all {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, "")
			if got, ok := SASL(); ok || !cmp.Equal(got, SASLClusters{}) {
				t.Errorf("without %s: SASL() = %+v, %v; want zero, false", k, got, ok)
			}
		})
	}
	if !strings.Contains(SASLSkipMessage, "KMIRROR_KAFKA_SASL=1") || !strings.Contains(SASLSkipMessage, SourceSASLBrokersEnv) {
		t.Errorf("SASLSkipMessage %q does not say how to start the clusters", SASLSkipMessage)
	}
}
