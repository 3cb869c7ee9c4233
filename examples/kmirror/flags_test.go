package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// TestFlagMistakesSaidOnceWithAHint (a new user's finding): a misspelt
// flag printed "flag provided but not defined: -embeded" twice (the flag
// package's line, then exitCode's) with no suggestion; "-listen 9093"
// said only "missing port in address". Both now say what to write.
func TestFlagMistakesSaidOnceWithAHint(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-check", "-config", "x.properties", "-embeded"}, "kmirror: flag provided but not defined: -embeded (did you mean -embedded?)"},
		{[]string{"-config", writeProps(t, "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n"), "-embedded", "-listen", "9093"},
			"(a port alone is written :9093, every interface, or 127.0.0.1:9093)"},
	} {
		var stderr bytes.Buffer
		code := exitCode(run(context.Background(), tc.args, &bytes.Buffer{}, &stderr), &stderr)
		out := stderr.String()
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.args, code, out, tc.want)
		}
		if n := strings.Count(out, "flag provided but not defined"); n > 1 {
			t.Errorf("%q: the error printed %d times:\n%s", tc.args, n, out)
		}
	}
}

// TestUsagePrintedOnce (a new user's finding): after a bad flag, and for
// -h, the usage's header was printed twice (the flag package's copy, while
// parsing, went to stderr directly), the error's one useful line below
// both; the flag list once.
func TestUsagePrintedOnce(t *testing.T) {
	for _, args := range [][]string{{"-embeded", "-config", "x"}, {"-h"}} {
		var stderr bytes.Buffer
		exitCode(run(context.Background(), args, &bytes.Buffer{}, &stderr), &stderr)
		out := stderr.String()
		if n, m := strings.Count(out, "usage: kmirror -config FILE"), strings.Count(out, "-embedded\n"); n != 1 || m != 1 {
			t.Errorf("%q: usage header printed %d times, flag list %d times, want 1 and 1:\n%s", args, n, m, out)
		}
	}
}

// TestBrk1206DRSynopsesListEveryFlag: the synopses of failover and
// failback (the usage text, the command's file comment, README's) name
// every flag of the command but the common -timeout. failover's file
// comment did not name -stop-wait, nor README's synopsis -records.
func TestBrk1206DRSynopsesListEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd, file string
		parse     func([]string, io.Writer) error
	}{
		{"failover", "failover.go", func(a []string, w io.Writer) error { _, err := parseFailoverFlags(a, w); return err }},
		{"failback", "failback.go", func(a []string, w io.Writer) error { _, err := parseFailbackFlags(a, w); return err }},
	} {
		var usage bytes.Buffer
		if err := c.parse([]string{"-h"}, &usage); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%s -h: %v", c.cmd, err)
		}
		head, defaults, ok := strings.Cut(usage.String(), "\nflags:\n")
		if !ok {
			t.Fatalf("%s usage without its flag list:\n%s", c.cmd, usage.String())
		}
		var flags []string
		for _, l := range strings.Split(defaults, "\n") {
			if name, ok := strings.CutPrefix(l, "  -"); ok {
				if name, _, _ = strings.Cut(name, " "); name != "timeout" {
					flags = append(flags, name)
				}
			}
		}
		src, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		// The file comment's synopsis: from "kmirror <cmd> -config" to the
		// first empty comment line.
		_, comment, _ := strings.Cut(string(src), "//\tkmirror "+c.cmd+" -config")
		comment, _, _ = strings.Cut(comment, "\n//\n")
		comment = " -config" + comment
		// README's: the shell block that starts with "kmirror <cmd> -config".
		_, md, _ := strings.Cut(string(readme), "```sh\nkmirror "+c.cmd+" -config")
		md, _, _ = strings.Cut(md, "```")
		md = " -config" + md
		if len(flags) < 5 || comment == " -config" || md == " -config" {
			t.Fatalf("%s: flags %q, file comment synopsis %q, README synopsis %q: not found", c.cmd, flags, comment, md)
		}
		for _, f := range flags {
			for _, s := range []struct{ where, text string }{{"usage", head}, {c.file + "'s comment", comment}, {"README.md", md}} {
				if !strings.Contains(s.text, "[-"+f+" ") && !strings.Contains(s.text, "[-"+f+"]") && !strings.Contains(s.text, " -"+f+" ") {
					t.Errorf("%s: the synopsis of %s does not name -%s:\n%s", c.cmd, s.where, f, s.text)
				}
			}
		}
	}
}

// TestBrkNEmptyClustersFlagRefused: "-clusters $REGION" with REGION unset
// (-clusters "" or -clusters ",") ran every flow of the file, the other
// nodes' flows included; MM2's --clusters "" keeps the flows into a
// cluster named "", none, and refuses to start. It is a usage error now,
// saying what to write.
func TestBrkNEmptyClustersFlagRefused(t *testing.T) {
	cfg := writeProps(t, "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n")
	for _, v := range []string{"", " , "} {
		var stderr bytes.Buffer
		code := exitCode(run(context.Background(), []string{"-check", "-config", cfg, "-clusters", v}, &bytes.Buffer{}, &stderr), &stderr)
		want := fmt.Sprintf("kmirror: -clusters %q names no alias: write the target aliases of this node's flows (e.g. -clusters B), or leave -clusters out to run every flow\n", v)
		if code != 2 || stderr.String() != want {
			t.Errorf("-clusters %q: exit %d, stderr %q; want exit 2 and %q", v, code, stderr.String(), want)
		}
	}
	if code := exitCode(run(context.Background(), []string{"-check", "-config", cfg}, io.Discard, io.Discard), io.Discard); code != 0 {
		t.Errorf("without -clusters: exit %d, want 0", code)
	}
}

// TestBrkNUnitsClustersReadLikeTheRunner: "kmirror units -clusters" split
// its value at commas without trimming, so "-clusters B, A" asked for the
// alias " A" (not listed in clusters), and -clusters "" resized every
// flow; it reads the list as the runner does now.
func TestBrkNUnitsClustersReadLikeTheRunner(t *testing.T) {
	cfg := writeProps(t, "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n")
	for _, tc := range []struct{ clusters, want string }{
		{"B, X", "kmirror units: mirror: --clusters=\"X\": not an alias listed in clusters (A, B)\n"},
		{"", "kmirror units: -clusters \"\" names no alias: write the target aliases of this node's flows (e.g. -clusters B), or leave -clusters out to run every flow\n"},
	} {
		var stderr bytes.Buffer
		if code := unitsMain(context.Background(), []string{"-config", cfg, "-clusters", tc.clusters, "-resize"}, io.Discard, &stderr); code != 2 || stderr.String() != tc.want {
			t.Errorf("-clusters %q: exit %d, stderr %q; want exit 2 and %q", tc.clusters, code, stderr.String(), tc.want)
		}
	}
}
