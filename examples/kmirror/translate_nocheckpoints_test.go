package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestNuTranslateCheckpointsDisabledSaysSo: with a file that disables the
// flow's checkpoints (emit.checkpoints.enabled = false, as several MM2
// files do), kmirror translate answered that the checkpoints topic does
// not exist and "the mirror creates it when its flow starts, so retry if
// it has just started", which never comes true. It says that the file
// disables them.
func TestNuTranslateCheckpointsDisabledSaysSo(t *testing.T) {
	b := fakeCluster(t, "B")
	props := filepath.Join(t.TempDir(), "mm2.properties")
	body := fmt.Sprintf("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = %s\n"+
		"A->B.enabled = true\nA->B.topics = orders\nA->B.emit.checkpoints.enabled = false\n", b.ListenAddrs()[0])
	if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := translateMain(context.Background(), []string{"-config", props, "-groups", ".*", "-timeout", "5s"}, &out, &errOut)
	if code != drRefused || !strings.Contains(errOut.String(), "the file disables the flow's checkpoints (A->B.emit.checkpoints.enabled = false") {
		t.Errorf("translate with checkpoints disabled: exit %d, stderr %q; want %d and the file's setting named", code, errOut.String(), drRefused)
	}
}

// TestTranslateStaleCheckpointsOfDisabledFlowSaid (an operator's find):
// with a file that disables the flow's checkpoints but a checkpoints
// topic left from before, translate printed those checkpoints as current
// (exit 0), their age the only hint. It still prints them, and says the
// file disables checkpoints, so they no longer move.
func TestTranslateStaleCheckpointsOfDisabledFlowSaid(t *testing.T) {
	w := newRerunWorld(t)
	f, err := os.OpenFile(w.props, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("A->B.emit.checkpoints.enabled = false\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out, errOut bytes.Buffer
	code := translateMain(context.Background(), []string{"-config", w.props, "-groups", "g", "-timeout", "10s"}, &out, &errOut)
	if code != drOK || !strings.Contains(out.String(), "A.orders") ||
		!strings.Contains(errOut.String(), "the file disables the flow's checkpoints (A->B.emit.checkpoints.enabled = false") {
		t.Errorf("translate of leftover checkpoints: exit %d, stdout %q, stderr %q; want %d, g's translation, and the disabled checkpoints said", code, out.String(), errOut.String(), drOK)
	}
}

// TestTranslateTargetRefusingConnectionsAtOnce (an operator's find):
// translate against a target that refuses connections retried for its
// whole -timeout before saying so; it probes the target first and says it
// is unreachable (exit 3) well within -timeout, which the test sets
// beyond its own deadline.
func TestTranslateTargetRefusingConnectionsAtOnce(t *testing.T) {
	props := filepath.Join(t.TempDir(), "mm2.properties")
	body := fmt.Sprintf("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:%d\nA->B.enabled = true\n", freeLoopbackPort(t))
	if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := translateMain(ctx, []string{"-config", props, "-groups", ".*", "-timeout", "10m"}, &out, &errOut)
	if code != drUnreachable || !strings.Contains(errOut.String(), "connection refused") || ctx.Err() != nil {
		t.Errorf("translate against a refusing target: exit %d, stderr %q, test deadline %v; want %d naming the refused connection before the deadline", code, errOut.String(), ctx.Err(), drUnreachable)
	}
}

// TestNuFTranslateTargetClosingConnectionsSaysWhy: a target whose listener
// closes the connections of the file's clients (SASL settings for a
// listener without SASL, credentials it rejects) made translate wait its
// -timeout and end with "context deadline exceeded", where the runner
// names the keys to check. translate says so once its probe gave up.
func TestNuFTranslateTargetClosingConnectionsSaysWhy(t *testing.T) {
	p := testcluster.NewFakePair(t, "A", "B")
	props := writeProps(t, "clusters = A, B\nA.bootstrap.servers = "+p.Source.Brokers[0]+"\nB.bootstrap.servers = "+p.Target.Brokers[0]+"\n"+
		"B.security.protocol = SASL_PLAINTEXT\nB.sasl.mechanism = PLAIN\n"+
		"B.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"pw\";\nA->B.enabled = true\n")
	var out, errOut bytes.Buffer
	code := translateMain(context.Background(), []string{"-config", props, "-groups", ".*", "-timeout", "15s"}, &out, &errOut)
	want := "kmirror translate: reading the checkpoints of A->B on B: target B unreachable: cluster B: EOF (the broker closed the connection: a broker stopping does that; " +
		"if this cluster never answered, a security.protocol the listener does not speak, or SASL credentials it rejects, look like this: check B.security.protocol and B.sasl.*)\n"
	if code != drUnreachable || errOut.String() != want || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr\n%s\nwant exit %d, stderr\n%s", code, out.String(), errOut.String(), drUnreachable, want)
	}
}
