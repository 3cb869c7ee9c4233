package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

const strictBase = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"

// TestCheckStrict: exit codes of -check and -strict: 0 valid, 3 valid
// with warnings under -strict, 2 errors (with or without -strict); and
// -strict without -check refuses to start.
func TestCheckStrict(t *testing.T) {
	typo := writeProps(t, strictBase+"a->b.topcis = orders\n")
	clean := writeProps(t, strictBase)
	bad := writeProps(t, strictBase+"a->b.topcis = orders\na->b.replication.factor = two\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a substring of stdout
		msg    string // the error printed, exactly ("" for none)
	}{
		{"typo, -check", []string{"-check", "-config", typo}, 0, "# line 5: a->b.topcis: unknown flow setting: ignored (did you mean a->b.topics?)", ""},
		{"typo, -check -strict", []string{"-check", "-strict", "-config", typo}, 3, "# line 5: a->b.topcis: unknown flow setting", "kmirror: -strict: the configuration has 1 warning(s); fix them, or run without -strict\n"},
		{"clean, -check -strict", []string{"-check", "-strict", "-config", clean}, 0, "# configuration valid: 2 flow(s): a->b, b->a (heartbeats only)", ""},
		{"error and warning, -check -strict", []string{"-check", "-strict", "-config", bad}, 2, "",
			"kmirror: mirror: a->b.replication.factor=\"two\": line 6: not a replication factor (a whole number up to 32767, or -1 for the broker default)\n" +
				"1 warning(s) as well:\n\tline 5: a->b.topcis: unknown flow setting: ignored (did you mean a->b.topics?); " +
				"without it the flow's topics is the top-level topics or MM2's default .*, which selects every topic\n"},
		{"typo, -strict without -check", []string{"-strict", "-config", typo}, 3, "", "kmirror: -strict: the configuration has 1 warning(s); fix them, or run without -strict\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr, msg bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			if code := exitCode(err, &msg); code != tc.code {
				t.Errorf("exit code %d (%v), want %d", code, err, tc.code)
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout.String())
			}
			if msg.String() != tc.msg {
				t.Errorf("error printed:\n%q\nwant\n%q", msg.String(), tc.msg)
			}
			if strings.Contains(stderr.String(), "msg=starting") {
				t.Errorf("the runner started:\n%s", stderr.String())
			}
		})
	}
}

// TestCheckEveryError: -check reports every error of the file at once,
// each with its line number, then the file's warnings, and exits 2.
func TestCheckEveryError(t *testing.T) {
	cfg := writeProps(t, strictBase+
		"a->b.topcis = x\n"+ // 5: a warning only
		"a->b.replication.factor = two\n"+ // 6
		"b->b.topics = x\n"+ // 7
		"emit.checkpoints.interval.seconds = 0\n"+ // 8
		"a->b.topics = (?!internal).*\n"+ // 9
		"a.consumer.auto.offset.reset = none\n") // 10
	var msg bytes.Buffer
	err := run(context.Background(), []string{"-check", "-config", cfg}, io.Discard, io.Discard)
	if code := exitCode(err, &msg); code != 2 {
		t.Fatalf("exit code %d (%v), want 2", code, err)
	}
	lines := strings.Split(strings.TrimSuffix(msg.String(), "\n"), "\n")
	want := []string{
		"kmirror: mirror: 5 configuration errors:",
		"\ta->b.replication.factor=\"two\": line 6: not a replication factor",
		"\tb->b.topics=\"x\": line 7: a flow needs two different clusters",
		"\temit.checkpoints.interval.seconds=\"0\": line 8: an interval of 0 is invalid",
		"\ta->b.topics=\"(?!internal).*\": line 9: ",
		"\ta.consumer.auto.offset.reset=\"none\": line 10: ",
		// The file's warnings follow its errors (a new user's try, stop 38).
		"1 warning(s) as well:",
		"\tline 5: a->b.topcis: unknown flow setting: ignored (did you mean a->b.topics?)",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), msg.String())
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d:\n got %q\nwant %q...", i, lines[i], want[i])
		}
	}
}

// TestCheckWarnsTimestampGuardsCopied (issue 18): a config.properties.exclude
// of the user's own is honoured as written, but -check warns when it lets
// the topic timestamp guards through (MM2 4.3's own default does: it lists
// only the broker keys), naming each guard it lets through; kmirror's
// default list and a list that excludes them draw no such warning.
func TestCheckWarnsTimestampGuardsCopied(t *testing.T) {
	const mm2Default = `follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, ` +
		`message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, unclean\.leader\.election\.enable, min\.insync\.replicas, ` +
		`log\.message\.timestamp\.before\.max\.ms, log\.message\.timestamp\.after\.max\.ms`
	tests := []struct {
		name    string
		extra   string
		guards  string // the guards the warning names; "" for no warning
		strictC int    // exit code under -check -strict
	}{
		{"default list", "", "", 0},
		{"MM2 4.3's default", "a->b.config.properties.exclude = " + mm2Default + "\n",
			"message.timestamp.before.max.ms, message.timestamp.after.max.ms", 3},
		{"only retention.ms", "a->b.config.properties.exclude = retention\\.ms\n",
			"message.timestamp.difference.max.ms, message.timestamp.before.max.ms, message.timestamp.after.max.ms", 3},
		{"guards excluded by a wildcard", "a->b.config.properties.exclude = " + mm2Default + `, message\.timestamp\..*` + "\n", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeProps(t, strictBase+tc.extra)
			var out bytes.Buffer
			if err := run(context.Background(), []string{"-check", "-config", cfg}, &out, io.Discard); err != nil {
				t.Fatalf("-check: %v", err)
			}
			const lead = "a->b.config.properties.exclude: lets the topic timestamp guards "
			n := strings.Count(out.String(), lead)
			switch {
			case tc.guards == "" && n != 0:
				t.Errorf("-check warns about timestamp guards:\n%s", out.String())
			case tc.guards != "" && n != 1:
				t.Errorf("the timestamp-guard warning is printed %d times, want once:\n%s", n, out.String())
			case tc.guards != "":
				want := "# line 5: " + lead + tc.guards + " through: copied to a remote topic, a guard makes the target refuse every copied record older (or newer) than it allows (INVALID_TIMESTAMP"
				if !strings.Contains(out.String(), want) {
					t.Errorf("-check output lacks\n%s\n%s", want, out.String())
				}
			}
			var msg bytes.Buffer
			if code := exitCode(run(context.Background(), []string{"-check", "-strict", "-config", cfg}, io.Discard, io.Discard), &msg); code != tc.strictC {
				t.Errorf("-check -strict exit code %d (%s), want %d", code, msg.String(), tc.strictC)
			}
		})
	}
}
