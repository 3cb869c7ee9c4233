package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestUnitsResize: `kmirror units -resize` creates the coordination topic
// with tasks.max partitions, refuses bad flags with exit code 2, and
// resizes to a new tasks.max (fencing the old slots' transactional ids);
// the second run has nothing to change.
func TestUnitsResize(t *testing.T) {
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
