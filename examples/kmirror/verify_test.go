package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/verify"
)

// verifySetup creates topic t (2 partitions, 10 records each) on the
// source and its remote topic on the target, copies the records listed by
// copies (partition -> source record numbers, in target order), and writes
// a properties file for the flow.
func verifySetup(t *testing.T, copies map[int32][]int) (props, topic string) {
	t.Helper()
	p := testcluster.New(t, "src", "dst")
	topic = p.Topic("orders")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 2, nil)
	testcluster.CreateTopic(t, &p.Target, remote, 2, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	rec := func(topic string, part int32, i int) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%d/%d", part, i)), Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
	}
	var src, dst []*kgo.Record
	for part := range int32(2) {
		for i := range 10 {
			src = append(src, rec(topic, part, i))
		}
		for _, i := range copies[part] {
			dst = append(dst, rec(remote, part, i))
		}
	}
	testcluster.Produce(t, &p.Source, src...)
	testcluster.Produce(t, &p.Target, dst...)
	props = writeVerifyProps(t, p.Source.Alias, p.Target.Alias, strings.Join(p.Source.Brokers, ","), strings.Join(p.Target.Brokers, ","), p.TopicsPattern())
	return props, topic
}

func writeVerifyProps(t *testing.T, src, dst, srcBrokers, dstBrokers, topics string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mm2.properties")
	body := fmt.Sprintf("clusters = %[1]s, %[2]s\n%[1]s.bootstrap.servers = %[3]s\n%[2]s.bootstrap.servers = %[4]s\n%[1]s->%[2]s.enabled = true\n%[1]s->%[2]s.topics = %[5]s\n",
		src, dst, srcBrokers, dstBrokers, topics)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runVerify(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code = verifyMain(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestVerifyCommandOK(t *testing.T) {
	props, topic := verifySetup(t, map[int32][]int{0: ids(0, 9), 1: append(ids(0, 9), 8, 9)})
	code, out, errOut := runVerify(t, "-config", props, "-progress", "1h")
	if code != verifyOK {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"remote topic",
		"deleted on target",
		"OK: 20 source records compared in 2 partition(s), none missing, 2 duplicates (allowed at least once)",
		topic + "[1]: 2 duplicated: target offset 10 replays source offset 8 (2 records)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// The final progress line goes to stderr (not a terminal: a line).
	if !strings.Contains(errOut, "verify: 100% read 42/42 records of both sides (source 20 + target 22), ") || !strings.Contains(errOut, "partitions 2/2") {
		t.Errorf("stderr lacks the final progress line:\n%s", errOut)
	}

	// -exactly-once: the duplicates fail.
	code, out, _ = runVerify(t, "-config", props, "-progress", "0", "-exactly-once")
	if code != verifyMismatch || !strings.Contains(out, "MISMATCH: 2 duplicated (exactly-once) of 20") {
		t.Errorf("-exactly-once: exit code %d, want 1:\n%s", code, out)
	}
}

func TestVerifyCommandMismatchJSON(t *testing.T) {
	props, topic := verifySetup(t, map[int32][]int{0: cat(ids(0, 2), ids(5, 9)), 1: ids(0, 9)})
	code, out, errOut := runVerify(t, "-config", props, "-progress", "0", "-json")
	if code != verifyMismatch {
		t.Fatalf("exit code %d, want 1\n%s\n%s", code, out, errOut)
	}
	var rep verify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-json output: %v\n%s", err, out)
	}
	if rep.Totals.Missing != 2 || len(rep.Topics) != 1 || rep.Topics[0].Topic != topic {
		t.Fatalf("totals %+v topics %+v", rep.Totals, rep.Topics)
	}
	p0 := rep.Topics[0].Partitions[0]
	if len(p0.MissingRanges) != 1 || p0.MissingRanges[0] != (verify.Range{From: 3, To: 4, Records: 2}) {
		t.Errorf("partition 0 missing ranges %+v, want 3-4 (2 records)", p0.MissingRanges)
	}
	if errOut != "" {
		t.Errorf("stderr with -progress 0: %q", errOut)
	}

	// The table names the offsets too.
	_, out, _ = runVerify(t, "-config", props, "-progress", "0")
	if !strings.Contains(out, topic+"[0]: 2 missing, source offsets 3-4 (2 records)") || !strings.Contains(out, "MISMATCH: 2 missing of 20") {
		t.Errorf("table output:\n%s", out)
	}
}

// TestVerifyCommandNothingSelected: a -topics regex that matches none of
// the flow's topics (a typo) is a usage error naming the flow's topics,
// not an OK over 0 records (found by a new user's try: a fail-over drill
// gated on verify passed on a misspelt topic).
func TestVerifyCommandNothingSelected(t *testing.T) {
	props, topic := verifySetup(t, map[int32][]int{0: ids(0, 9), 1: ids(0, 9)})
	code, out, errOut := runVerify(t, "-config", props, "-progress", "0", "-topics", "ordres")
	want := `kmirror verify: -topics "ordres" matches no source topic of flow `
	if code != verifyUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, "(a full match of the regex): its source topics are "+topic+"\n") || out != "" {
		t.Errorf("-topics ordres: exit code %d, want %d; stderr %q, want it to name the flow's topic %s; stdout %q", code, verifyUsage, errOut, topic, out)
	}
	// The right name compares the topic.
	if code, out, _ := runVerify(t, "-config", props, "-progress", "0", "-topics", topic); code != verifyOK || !strings.Contains(out, "OK: 20 source records compared in 2 partition(s)") {
		t.Errorf("-topics %s: exit code %d:\n%s", topic, code, out)
	}
}

func TestVerifyCommandUsageAndUnreachable(t *testing.T) {
	good := writeVerifyProps(t, "a", "b", "127.0.0.1:1", "127.0.0.1:1", ".*")
	two := filepath.Join(t.TempDir(), "two.properties")
	os.WriteFile(two, []byte("clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:1\na->b.enabled = true\nb->a.enabled = true\n"), 0o600)
	disabled := filepath.Join(t.TempDir(), "disabled.properties")
	os.WriteFile(disabled, []byte("clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:1\na->b.enabled = true\nb->a.enabled = false\n"), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no config", nil, verifyUsage, "-config is required"},
		{"missing file", []string{"-config", "/nonexistent/mm2.properties"}, verifyUsage, "/nonexistent/mm2.properties"},
		{"both windows", []string{"-config", good, "-last", "5", "-since", "1h"}, verifyUsage, "-last and -since both set"},
		{"bad since", []string{"-config", good, "-since", "yesterday"}, verifyUsage, `-since "yesterday"`},
		{"bad topics regex", []string{"-config", good, "-topics", "("}, verifyUsage, `-topics "("`},
		{"unknown flow", []string{"-config", good, "-flow", "a->c"}, verifyUsage, `-flow "a->c": no enabled flow of that name; the configuration has a->b`},
		{"arrow unquoted", []string{"-config", good, "-flow", "a-"}, verifyUsage, `-flow "a-": no enabled flow of that name; quote the arrow (-flow 'a-><target>'): unquoted, the shell reads >B as a redirection to a file B; the configuration has a->b`},
		{"several flows", []string{"-config", two}, verifyUsage, "choose one with -flow (a->b, b->a)"},
		{"disabled flow", []string{"-config", disabled, "-flow", "b->a"}, verifyUsage, `-flow "b->a": the flow is disabled (b->a.enabled is not true), so nothing replicates it; the configuration's enabled flows: a->b`},
		{"unknown flag", []string{"-config", good, "-bogus"}, verifyUsage, "-bogus"},
		{"unreachable", []string{"-config", good, "-timeout", "2s", "-progress", "0"}, verifyIncomplete, `source cluster "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runVerify(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit code %d, want %d; stderr %q should contain %q (stdout %q)", code, tc.code, errOut, tc.want, out)
			}
		})
	}
}

func TestParseVerifySince(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2h":                   now.Add(-2 * time.Hour),
		"2025-02-28T10:00:00Z": time.Date(2025, 2, 28, 10, 0, 0, 0, time.UTC),
	} {
		o, err := parseVerifyFlags([]string{"-config", "x", "-since", in}, &bytes.Buffer{}, now)
		if err != nil || !o.since.Equal(want) {
			t.Errorf("-since %s: %v %v, want %v", in, o, err, want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1234: "1.2k", 3_400_000: "3.4M", 7_000_000_000: "7.0G"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

func ids(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func cat(parts ...[]int) []int {
	var out []int
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestNuFVerifySourceClosingConnectionsSaysWhy: verify against a source
// whose listener closes the connections of the file's clients (SASL
// settings for a listener without SASL, as with an old copy of the file)
// said only "listing topics: EOF"; it names the keys to check, as the
// runner does.
func TestNuFVerifySourceClosingConnectionsSaysWhy(t *testing.T) {
	p := testcluster.NewFakePair(t, "A", "B")
	props := writeProps(t, "clusters = A, B\nA.bootstrap.servers = "+p.Source.Brokers[0]+"\nB.bootstrap.servers = "+p.Target.Brokers[0]+"\n"+
		"A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = PLAIN\n"+
		"A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"pw\";\nA->B.enabled = true\n")
	code, out, errOut := runVerify(t, "-config", props, "-timeout", "15s")
	want := `kmirror verify: source cluster "A": listing topics: EOF (the broker closed the connection: a broker stopping does that; ` +
		"if this cluster never answered, a security.protocol the listener does not speak, or SASL credentials it rejects, look like this: check A.security.protocol and A.sasl.*)\n"
	if code != verifyIncomplete || errOut != want || out != "" {
		t.Errorf("exit %d, stdout %q, stderr\n%s\nwant exit %d, stderr\n%s", code, out, errOut, verifyIncomplete, want)
	}
}
