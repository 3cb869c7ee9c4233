package checkpoint

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTopicIDsAfterRecreationNotFromCache: the emitter lists the source
// topics' IDs after fetching the groups' offsets, so that a commit on a
// re-created topic is never translated with the old topic's runs. The
// listing answered from franz-go's metadata cache, as old as the client's
// MetadataMinAge (1 s in a flow): a group that committed on the new topic
// within it had its commit translated into the old log's copies (a race
// run in CI committed 5, the old copy of source offset 5, where the new
// log's copies began at 100). The listing now asks the brokers.
func TestTopicIDsAfterRecreationNotFromCache(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("recreated")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	// A long minimum age: the cache would answer for the whole test.
	srcCl := testcluster.Client(t, &p.Source, kgo.MetadataMinAge(time.Minute), kgo.MetadataMaxAge(time.Minute))
	r := &run{e: &Emitter{cfg: EmitterConfig{AdminTimeout: 10 * time.Second}}, src: kadm.NewClient(srcCl), srcCl: srcCl}
	ctx := context.Background()
	first, err := r.topicIDs(ctx, []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	// kadm's listing fills the cache, as the flow's other listings do.
	if _, err := r.src.ListTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	adm := testcluster.Admin(t, &p.Source)
	if _, err := adm.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "topic deleted", func() (bool, string) {
		tds, err := kadm.NewClient(testcluster.Client(t, &p.Source)).ListTopics(ctx, topic) // a client with no cache
		return err == nil && tds[topic].Err != nil, ""
	})
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("listing the new topic: %v %v", err, tds[topic].Err)
	}
	want := tds[topic].ID
	if want == first[topic] {
		t.Fatalf("the re-created topic has the old ID %x", want)
	}
	got, err := r.topicIDs(ctx, []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	if got[topic] != want {
		t.Errorf("topic ID after re-creation %x, want the new topic's %x (the old one was %x)", got[topic], want, first[topic])
	}
}
