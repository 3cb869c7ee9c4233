package ensuretopic

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func cluster(t *testing.T) (*kfake.Cluster, *kadm.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, kadm.NewClient(cl)
}

func spec(topic string) Spec {
	compact := "compact"
	return Spec{Topic: topic, Cluster: "dst", Partitions: 2, ExactPartitions: true, ReplicationFactor: -1,
		Configs: map[string]*string{"cleanup.policy": &compact}, RequireCompact: true}
}

func create(t *testing.T, adm *kadm.Client, topic string, partitions int32, policy string) {
	t.Helper()
	resp, err := adm.CreateTopic(context.Background(), partitions, -1, map[string]*string{"cleanup.policy": &policy}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}

func refuse(c *kfake.Cluster, keys ...kmsg.Key) {
	c.Fault(kfake.Fault{Keys: keys, Err: kerr.TopicAuthorizationFailed, Count: -1})
}

// TestEnsure covers each answer: created; already exists; refused but
// created in advance (fits, wrong partition count, not compacted, configs
// not describable); refused and missing; refused and not describable.
func TestEnsure(t *testing.T) {
	ctx := context.Background()
	t.Run("created", func(t *testing.T) {
		_, adm := cluster(t)
		r, err := Ensure(ctx, adm, spec("a"))
		if err != nil || !r.Created || r.Partitions != 2 {
			t.Fatalf("Ensure: %+v %v, want created with 2 partitions", r, err)
		}
		r, err = Ensure(ctx, adm, spec("a"))
		if err != nil || r.Created || r.Partitions != 2 {
			t.Fatalf("Ensure again: %+v %v, want existing with 2 partitions", r, err)
		}
	})
	t.Run("refused, created in advance", func(t *testing.T) {
		c, adm := cluster(t)
		create(t, adm, "a", 2, "compact,delete")
		refuse(c, kmsg.CreateTopics)
		r, err := Ensure(ctx, adm, spec("a"))
		if err != nil || r.Created || r.Partitions != 2 {
			t.Fatalf("Ensure: %+v %v, want existing with 2 partitions", r, err)
		}
	})
	t.Run("refused, wrong partition count", func(t *testing.T) {
		c, adm := cluster(t)
		create(t, adm, "a", 3, "compact")
		refuse(c, kmsg.CreateTopics)
		_, err := Ensure(ctx, adm, spec("a"))
		var pe *PartitionsError
		if !errors.As(err, &pe) || pe.Have != 3 || err.Error() != "topic a on dst has 3 partition(s), kmirror needs exactly 2" {
			t.Fatalf("Ensure: %v, want a PartitionsError", err)
		}
	})
	t.Run("already exists, not compacted", func(t *testing.T) {
		_, adm := cluster(t)
		create(t, adm, "a", 2, "delete")
		_, err := Ensure(ctx, adm, spec("a"))
		var pe *PolicyError
		if !errors.As(err, &pe) || pe.Have != "delete" || !strings.Contains(err.Error(), "cleanup.policy=compact") {
			t.Fatalf("Ensure: %v, want a PolicyError", err)
		}
	})
	t.Run("refused, configs not describable", func(t *testing.T) {
		c, adm := cluster(t)
		create(t, adm, "a", 2, "delete")
		refuse(c, kmsg.CreateTopics, kmsg.DescribeConfigs)
		var logs bytes.Buffer
		s := spec("a")
		s.Log = slog.New(slog.NewTextHandler(&logs, nil))
		if _, err := Ensure(ctx, adm, s); err != nil {
			t.Fatalf("Ensure: %v, want nil (the policy cannot be checked)", err)
		}
		if !strings.Contains(logs.String(), "no DESCRIBE_CONFIGS") {
			t.Errorf("log %q does not say why the policy was not checked", logs.String())
		}
	})
	t.Run("refused, missing", func(t *testing.T) {
		c, adm := cluster(t)
		refuse(c, kmsg.CreateTopics)
		_, err := Ensure(ctx, adm, spec("a"))
		var me *MissingError
		want := "topic a is missing on dst and dst refuses to create it (TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics: [Topic authorization failed.]): grant kmirror's principal on dst CREATE on the cluster or on topic a, or create the topic in advance with exactly 2 partition(s), cleanup.policy=compact (ACLS.md, least privilege)"
		if !errors.As(err, &me) || !errors.Is(err, kerr.TopicAuthorizationFailed) || err.Error() != want {
			t.Fatalf("Ensure: %v\nwant %s", err, want)
		}
	})
	t.Run("refused, not describable", func(t *testing.T) {
		c, adm := cluster(t)
		refuse(c, kmsg.CreateTopics, kmsg.Metadata)
		_, err := Ensure(ctx, adm, spec("a"))
		if err == nil || !strings.Contains(err.Error(), "cannot be described on dst") || !strings.Contains(err.Error(), "needs DESCRIBE on topic a") {
			t.Fatalf("Ensure: %v, want a MissingError naming DESCRIBE", err)
		}
	})
	t.Run("refused by a create policy, missing", func(t *testing.T) {
		c, adm := cluster(t)
		c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Err: kerr.PolicyViolation, Count: -1})
		_, err := Ensure(ctx, adm, spec("a"))
		var me *MissingError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), "allow topic a in the create policy of dst, or create the topic in advance") {
			t.Fatalf("Ensure: %v, want a MissingError naming the create policy", err)
		}
	})
	t.Run("other errors wrapped", func(t *testing.T) {
		c, adm := cluster(t)
		c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Err: kerr.InvalidReplicationFactor, Count: -1})
		_, err := Ensure(ctx, adm, spec("a"))
		if !errors.Is(err, kerr.InvalidReplicationFactor) || !strings.HasPrefix(err.Error(), "creating a on dst: ") {
			t.Fatalf("Ensure: %v", err)
		}
	})
}
