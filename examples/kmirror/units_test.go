package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
)

// TestUnitsResize: `kmirror units -resize` creates the coordination topic
// with tasks.max partitions, refuses bad flags with exit code 2, and
// resizes to a new tasks.max (fencing the old slots' transactional ids);
// the second run has nothing to change.
func TestUnitsResize(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	props := writeVerifyProps(t, p.Source.Alias, p.Target.Alias, strings.Join(p.Source.Brokers, ","), strings.Join(p.Target.Brokers, ","), p.TopicsPattern())
	ctx := context.Background()
	units := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := unitsMain(ctx, args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	if code, _, errOut := units("-config", props); code != 2 || !strings.Contains(errOut, "nothing to do without -resize") {
		t.Errorf("without -resize: exit %d, stderr %q; want 2 and what -resize does", code, errOut)
	}
	if code, _, errOut := units("-resize"); code != 2 || !strings.Contains(errOut, "usage: kmirror units") {
		t.Errorf("without -config: exit %d, stderr %q; want 2 and the usage", code, errOut)
	}
	flow := p.Source.Alias + "->" + p.Target.Alias
	if code, out, errOut := units("-config", props, "-resize"); code != 0 || !strings.Contains(out, flow+": 8 slots (coordination topic created)") {
		t.Errorf("first resize: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	body, err := os.ReadFile(props)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(props, append(body, "tasks.max = 3\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	group := "kmirror." + flow
	var fenced []string
	for k := range 8 {
		fenced = append(fenced, fmt.Sprintf("%s-%d", group, k))
	}
	back := p.Target.Alias + "->" + p.Source.Alias // the heartbeats-only reverse flow: nothing to fence
	want := fmt.Sprintf("%s: 8 -> 3 slots; fenced %s\n%s: 8 -> 3 slots (heartbeats only: no producer to fence)\n", flow, strings.Join(fenced, ", "), back)
	if code, out, errOut := units("-config", props, "-resize"); code != 0 || out != want {
		t.Errorf("resize to 3: exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errOut, want)
	}
	if code, out, _ := units("-config", props, "-resize"); code != 0 || out != flow+": 3 slots, nothing to change\n"+back+": 3 slots, nothing to change\n" {
		t.Errorf("again: exit %d, stdout %q", code, out)
	}
}

// TestUnitsTargetStateLine: `kmirror units` says nothing of a RUNNING flow,
// reminds the operator that a PAUSED or STOPPED flow's members stay so when
// started after the resize, and reports a status topic it could not read.
func TestUnitsTargetStateLine(t *testing.T) {
	at := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		r    mirror.SlotsResize
		want string
	}{
		{mirror.SlotsResize{Flow: "a->b", TargetState: mirror.TargetRunning}, ""},
		{mirror.SlotsResize{Flow: "a->b", TargetState: mirror.TargetRunning, TargetStateBy: "ops", TargetStateAt: at}, ""},
		{mirror.SlotsResize{Flow: "a->b", TargetState: mirror.TargetStopped, TargetStateBy: "kmirror failover", TargetStateAt: at},
			"a->b: target state STOPPED (written by kmirror failover at 2026-12-02T14:00:00Z): members started now stay stopped until resumed (PUT /connectors/a-%3Eb/resume)"},
		{mirror.SlotsResize{Flow: "a->b", TargetState: mirror.TargetPaused, TargetStateBy: "w1", TargetStateAt: at},
			"a->b: target state PAUSED (written by w1 at 2026-12-02T14:00:00Z): members started now stay paused until resumed (PUT /connectors/a-%3Eb/resume)"},
		{mirror.SlotsResize{Flow: "a->b", TargetStateErr: "reading mm2-kmirror-status.a.internal: TOPIC_AUTHORIZATION_FAILED"},
			"a->b: target state unknown (reading mm2-kmirror-status.a.internal: TOPIC_AUTHORIZATION_FAILED): members apply it when they start"},
	} {
		if got := targetStateLine(c.r); got != c.want {
			t.Errorf("targetStateLine(%+v) = %q; want %q", c.r, got, c.want)
		}
	}
}
