package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunbook runs the whole runbook with small sizes and checks that no
// acknowledged order is lost and that the report's numbers add up.
func TestRunbook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, config{Partitions: 3, Rate: 1000, Before: time.Second, Outage: time.Second, After: 500 * time.Millisecond}, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lost != 0 {
		t.Errorf("lost %d orders", rep.Lost)
	}
	checks := []struct {
		name      string
		got, want int
	}{
		{"consumed + lost = produced", rep.Consumed + rep.Lost, rep.Produced},
		{"consumed + duplicates = reads", rep.Consumed + rep.Duplicates, rep.Reads},
		{"duplicates = at failover + at fail-back", rep.DupFailover + rep.DupFailback, rep.Duplicates},
		{"at failover = before the checkpointed position + after the last checkpoint", rep.DupCheckpointed + rep.DupLate, rep.DupFailover},
		{"produced = before + outage + after", rep.ProducedBeforeFailure + rep.ProducedOutage + rep.ProducedAfter, rep.Produced},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	for name, n := range map[string]int{"produced before the failure": rep.ProducedBeforeFailure,
		"produced during the outage": rep.ProducedOutage, "produced after fail-back": rep.ProducedAfter,
		"consumed before the failure": rep.ConsumedBeforeFailure} {
		if n <= 0 {
			t.Errorf("%s: %d, want > 0", name, n)
		}
	}
	if rep.Duplicates < 0 || rep.NotReplicated < 0 || rep.NotReplicated > rep.ProducedBeforeFailure {
		t.Errorf("duplicates %d, not replicated %d (of %d)", rep.Duplicates, rep.NotReplicated, rep.ProducedBeforeFailure)
	}
	if rep.ConsumedBeforeFailure > rep.ProducedBeforeFailure {
		t.Errorf("consumed %d before the failure, more than the %d produced", rep.ConsumedBeforeFailure, rep.ProducedBeforeFailure)
	}
	if rep.Detection <= 0 || rep.RTO < rep.Detection || rep.FailbackPause <= 0 {
		t.Errorf("detection %v, RTO %v, fail-back pause %v", rep.Detection, rep.RTO, rep.FailbackPause)
	}
	if !strings.Contains(out.String(), "records lost                               0\n") {
		t.Errorf("report does not say 0 lost:\n%s", out.String())
	}
}

// TestRunbookCaughtUp: the order service pauses just before the failure,
// the consumer group catches up and kmirror checkpoints its final position
// exactly: the failover re-reads no order (case B34 of the field failures,
// the ideal).
func TestRunbookCaughtUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, config{Partitions: 3, Rate: 1000, Before: time.Second, Quiet: time.Second, Outage: 500 * time.Millisecond,
		After: 300 * time.Millisecond}, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lost != 0 || rep.DupFailover != 0 {
		t.Errorf("lost %d, read twice at failover %d; want 0 and 0", rep.Lost, rep.DupFailover)
	}
	if !strings.Contains(out.String(), "(safe to switch: true)") {
		t.Errorf("the group was not reported safe to switch before the failure:\n%s", out.String())
	}
}

func TestOrderID(t *testing.T) {
	for _, id := range []int{0, 7, 123456} {
		got, err := orderID(orderValue(id))
		if err != nil || got != id {
			t.Errorf("orderID(orderValue(%d)) = %d, %v", id, got, err)
		}
	}
	for _, bad := range []string{"", `{"order":x,`, `{"order":12`, "hello"} {
		if _, err := orderID([]byte(bad)); err == nil {
			t.Errorf("orderID(%q): no error", bad)
		}
	}
}
