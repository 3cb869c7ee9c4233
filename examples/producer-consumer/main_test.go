package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSwitch runs the Active/Standby switch both ways: waiting for
// SafeToSwitch (no loss, no duplicates) and naively (no loss; duplicates
// possible and accounted for).
func TestSwitch(t *testing.T) {
	for _, naive := range []bool{false, true} {
		t.Run(fmt.Sprintf("naive=%v", naive), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			var out bytes.Buffer
			dir := filepath.Join(t.TempDir(), "logs") // -logdir need not exist (it failed: no such file or directory)
			rep, err := runSwitch(ctx, switchConfig{Interval: 10 * time.Millisecond, Warmup: time.Second, After: time.Second, Naive: naive, LogDir: dir}, &out)
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Lost != 0 {
				t.Errorf("lost %d messages", rep.Lost)
			}
			if got := rep.Distinct + rep.Lost; got != rep.Sent {
				t.Errorf("distinct received + lost = %d, want sent = %d", got, rep.Sent)
			}
			if got := rep.Distinct + rep.Duplicates; got != rep.Received {
				t.Errorf("distinct + duplicates = %d, want received = %d", got, rep.Received)
			}
			if rep.Duplicates < 0 {
				t.Errorf("duplicates %d", rep.Duplicates)
			}
			if !naive && rep.Duplicates != 0 {
				t.Errorf("%d duplicates after waiting for SafeToSwitch, want 0", rep.Duplicates)
			}
			if rep.SentPrimary <= 0 || rep.SentPrimary >= rep.Sent {
				t.Errorf("sent %d to primary of %d: want some on each cluster", rep.SentPrimary, rep.Sent)
			}
			if !naive && rep.SafeWait <= 0 {
				t.Errorf("SafeToSwitch wait %v", rep.SafeWait)
			}
			// The log files hold what the report counted.
			for name, want := range map[string]int{"send_message.log": rep.Sent, "received.log": rep.Received} {
				b, err := osReadFile(dir, name)
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Count(string(b), "\n"); got != want {
					t.Errorf("%s has %d lines, want %d", name, got, want)
				}
			}
		})
	}
}

// TestProducerHTTP checks the producer's HTTP surface against a kfake
// cluster: a POST body becomes a record, other requests are refused.
func TestProducerHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, brokers := producerServer(t, kfake.SeedTopics(1, "messages"))

	tests := []struct {
		method, path, body string
		status             int
		reply              string
	}{
		{http.MethodPost, "/", "Mon Jan 2 15:04:05 JST 2006", http.StatusOK, "stored messages[0]@0\n"},
		{http.MethodPost, "/", "second", http.StatusOK, "stored messages[0]@1\n"},
		{http.MethodGet, "/", "", http.StatusMethodNotAllowed, "POST a message\n"},
		{http.MethodGet, "/healthz", "", http.StatusOK, "ok\n"},
		{http.MethodPost, "/other", "x", http.StatusNotFound, "404 page not found\n"},
	}
	for _, tc := range tests {
		req, _ := http.NewRequestWithContext(ctx, tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || string(b) != tc.reply {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, b, tc.status, tc.reply)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("messages"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %q: %v", got, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if diff := cmp.Diff([]string{"Mon Jan 2 15:04:05 JST 2006", "second"}, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

func TestConsumerConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     env
		want    consumerConfig
		wantErr string
	}{
		{"defaults", env{envBrokers: "a:9092, b:9092"},
			consumerConfig{brokers: []string{"a:9092", "b:9092"}, group: defaultGroup, pattern: defaultPattern, reset: "earliest"}, ""},
		{"after a switch", env{envBrokers: "s:9092", envGroup: "g", envReset: "none", envPattern: "^messages$"},
			consumerConfig{brokers: []string{"s:9092"}, group: "g", pattern: "^messages$", reset: "none"}, ""},
		{"no brokers", env{}, consumerConfig{}, "KAFKA_BROKERS is not set"},
		{"bad reset", env{envBrokers: "a:1", envReset: "smallest"}, consumerConfig{}, `KAFKA_AUTO_OFFSET_RESET="smallest": want earliest, latest or none`},
		{"bad pattern", env{envBrokers: "a:1", envPattern: "("}, consumerConfig{}, `KAFKA_TOPIC_PATTERN="("`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newConsumerConfig(tc.env.get)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(consumerConfig{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultPattern: the consumer's default subscription covers the local
// topic and its remote copies, nothing else.
func TestDefaultPattern(t *testing.T) {
	re := mustCompile(t, defaultPattern)
	for topic, want := range map[string]bool{
		"messages": true, "primary.messages": true, "secondary.messages": true,
		"messages2": false, "old-messages": false, "a.b.messages": false, "primary.checkpoints.internal": false,
	} {
		if got := re.MatchString(topic); got != want {
			t.Errorf("%q matches: %v, want %v", topic, got, want)
		}
	}
}

func TestLineLog(t *testing.T) {
	var l lineLog
	for _, chunk := range []string{"received: a\nrece", "ived: b\n", "partial"} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"received: a", "received: b"}, l.Lines()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var r switchReport
	r.compare([]string{"a", "b", "c"}, []string{"received: a", "received: b", "received: a", "noise"})
	if diff := cmp.Diff(switchReport{Sent: 3, Received: 3, Distinct: 2, Lost: 1, Duplicates: 1}, r); diff != "" {
		t.Errorf("compare (-want +got):\n%s", diff)
	}
}

func osReadFile(dir, name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }

func mustCompile(t *testing.T, expr string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

// producerServer serves the producer over HTTP against a new one-broker
// kfake cluster made with opts, and returns the server and the cluster's
// addresses; both stop when the test ends.
func producerServer(t *testing.T, opts ...kfake.Opt) (*httptest.Server, []string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p, err := newProducer(env{envBrokers: strings.Join(c.ListenAddrs(), ",")}.get)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.cl.Close)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, c.ListenAddrs()
}
