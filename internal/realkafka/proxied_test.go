package realkafka

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/faultproxy"
)

func TestProxiedListeners(t *testing.T) {
	all := map[string]string{SourceProxiedBrokersEnv: " 127.0.0.1:19095 ", SourceProxiedListenerEnv: "127.0.0.1:19094",
		TargetProxiedBrokersEnv: "127.0.0.1:19195", TargetProxiedListenerEnv: "127.0.0.1:19194"}
	for name, v := range all {
		t.Setenv(name, v)
	}
	src, dst, ok := ProxiedListeners()
	want := []Proxied{{"127.0.0.1:19095", "127.0.0.1:19094"}, {"127.0.0.1:19195", "127.0.0.1:19194"}}
	if diff := cmp.Diff(want, []Proxied{src, dst}); !ok || diff != "" {
		t.Fatalf("ProxiedListeners() ok %v (-want +got):\n%s", ok, diff)
	}
	for name := range all {
		t.Run("without "+name, func(t *testing.T) {
			t.Setenv(name, "")
			if err := os.Unsetenv(name); err != nil {
				t.Fatal(err)
			}
			if s, d, ok := ProxiedListeners(); ok || s != (Proxied{}) || d != (Proxied{}) {
				t.Fatalf("ProxiedListeners() = %v, %v, %v; want nothing", s, d, ok)
			}
		})
	}
}

// TestProxiedListenerThroughFaultProxy runs a fault proxy at each cluster's
// advertised PROXIED address and checks, with a franz-go client that
// bootstraps through it: the metadata names the proxy as the broker (so
// the client stays behind the proxy), records go through, during a Cut
// requests fail, records wait unacknowledged and nothing reaches the
// broker, and after Restore the same client works again, every record
// written once.
func TestProxiedListenerThroughFaultProxy(t *testing.T) {
	source, target, ok := Brokers()
	if !ok {
		t.Skip(SkipMessage)
	}
	psrc, pdst, ok := ProxiedListeners()
	if !ok {
		t.Skip("the clusters have no proxied listeners: " + SourceProxiedBrokersEnv + " etc. are unset (start them with this kafka.sh and eval its env)")
	}
	for _, c := range []struct {
		name    string
		direct  []string
		proxied Proxied
	}{{"source", source, psrc}, {"target", target, pdst}} {
		t.Run(c.name, func(t *testing.T) { testThroughProxy(t, c.direct, c.proxied) })
	}
}

func testThroughProxy(t *testing.T, direct []string, px Proxied) {
	p, err := faultproxy.New(px.Advertised, px.Listener)
	if err != nil {
		t.Fatalf("start a fault proxy at the advertised PROXIED address (is a soak running?): %v", err)
	}
	defer p.Close()

	topic := fmt.Sprintf("realkafka-proxied-%d", time.Now().UnixNano())
	directCl, err := kgo.NewClient(kgo.SeedBrokers(direct...))
	if err != nil {
		t.Fatal(err)
	}
	defer directCl.Close()
	adm := kadm.NewClient(directCl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	defer func() {
		if _, err := adm.DeleteTopic(context.Background(), topic); err != nil {
			t.Errorf("delete topic %s: %v", topic, err)
		}
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(px.Advertised), kgo.DefaultProduceTopic(topic),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("metadata through the proxy: %v", err)
	}
	for _, b := range md.Brokers {
		if got := fmt.Sprintf("%s:%d", b.Host, b.Port); got != px.Advertised {
			t.Fatalf("broker %d is advertised at %s through the proxy, want %s", b.NodeID, got, px.Advertised)
		}
	}
	produce := func(ctx context.Context, v string) error {
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
	}
	for i := range 3 {
		if err := produce(ctx, fmt.Sprintf("before-%d", i)); err != nil {
			t.Fatalf("produce through the proxy: %v", err)
		}
	}
	if st := p.Stats(); st.BytesUp == 0 || st.BytesDown == 0 {
		t.Fatalf("proxy stats %+v: the client did not go through it", st)
	}

	// While cut: an admin request fails, a record is not acknowledged, and
	// no byte reaches the broker. franz-go's idempotent producer does not
	// fail a record that may have been sent, so the record waits (it is not
	// lost and not duplicated) and is written once the link is back.
	p.Cut()
	upAtCut := p.Stats().BytesUp
	acked := make(chan error, 1)
	cl.Produce(ctx, &kgo.Record{Value: []byte("during")}, func(_ *kgo.Record, err error) { acked <- err })
	mctx, mcancel := context.WithTimeout(ctx, 2*time.Second)
	// (Not a Metadata request: franz-go may answer it from its cache.)
	lo, err := kadm.NewClient(cl).ListEndOffsets(mctx, topic)
	mcancel()
	if err == nil {
		err = lo.Error()
	}
	if err == nil {
		t.Fatal("a ListOffsets request through the proxy succeeded while the link was cut")
	}
	t.Logf("ListOffsets while cut: %v", err)
	select {
	case err := <-acked:
		t.Fatalf("the record produced while cut was acknowledged (err %v) before Restore", err)
	case <-time.After(time.Second):
	}
	if st := p.Stats(); st.BytesUp != upAtCut || st.Reset == 0 {
		t.Fatalf("proxy stats while cut %+v: want no byte up since the cut (%d) and resets", st, upAtCut)
	}

	p.Restore()
	select {
	case err := <-acked:
		if err != nil {
			t.Fatalf("the record produced while cut failed after Restore: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("the record produced while cut was not acknowledged after Restore: %v", ctx.Err())
	}
	if err := produce(ctx, "after"); err != nil {
		t.Fatalf("produce after Restore: %v", err)
	}

	// What the broker holds: every record once, in order.
	rd, err := kgo.NewClient(kgo.SeedBrokers(direct...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) < 5 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back %q: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	if diff := cmp.Diff([]string{"before-0", "before-1", "before-2", "during", "after"}, got); diff != "" || end.Offset != 5 {
		t.Fatalf("records on the broker, end offset %d (-want +got):\n%s", end.Offset, diff)
	}
}
