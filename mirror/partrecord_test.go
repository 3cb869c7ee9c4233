package mirror

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// TestPartitionRecordRoundTrip: a partition's status survives the status
// topic (the cluster view other members answer from) field for field.
// Retries did not (a new user's finding: the README's retries was in the
// restart answer but missing from /connectors/{flow}/status).
func TestPartitionRecordRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ps := PartitionStatus{Topic: "orders", RemoteTopic: "a.orders", Partition: 3, State: StateFailed, Error: "TOPIC_AUTHORIZATION_FAILED",
		SourceEnd: 90, Replicated: 80, Committed: 79, Lag: 10, LagUnknown: true, Records: 80, Bytes: 8000, Since: at,
		NextRetry: at.Add(20 * time.Second), Retries: 3}
	b, err := json.Marshal(partitionRecord(ps))
	if err != nil {
		t.Fatal(err)
	}
	var pr statustopic.PartitionRecord
	if err := json.Unmarshal(b, &pr); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ps, partitionStatus(pr)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
