package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/policy"
)

const (
	primary    = "primary"
	secondary  = "secondary"
	partitions = 3
)

// switchConfig sizes one -switch demo.
type switchConfig struct {
	Interval time.Duration // between two POSTs
	Warmup   time.Duration // on primary before the switch
	After    time.Duration // on secondary after the switch
	Naive    bool          // move the consumer with the producer, without waiting
	LogDir   string        // if set, send_message.log and received.log are written there
	Verbose  bool
}

// switchReport is what the demo measured. Messages are distinct strings.
type switchReport struct {
	Sent          int           // messages the producer accepted (HTTP 200)
	Received      int           // "received:" log lines
	Distinct      int           // distinct messages received
	Lost          int           // sent, never received
	Duplicates    int           // Received - Distinct
	SentPrimary   int           // accepted by the producer on primary
	SafeWait      time.Duration // consumer stopped on primary -> SafeToSwitch
	ConsumerPause time.Duration // consumer stopped on primary -> first line on secondary
}

// env is a deployment manifest's environment.
type env map[string]string

func (e env) get(k string) string { return e[k] }

func runSwitch(ctx context.Context, cfg switchConfig, out io.Writer) (rep switchReport, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	began := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "[%5.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	logger := slog.New(slog.DiscardHandler)
	if cfg.Verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	sent, received := &lineLog{}, &lineLog{}
	if cfg.LogDir != "" {
		if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil { // a new directory, as -logdir /tmp/run1 reads
			return rep, err
		}
		for name, l := range map[string]*lineLog{"send_message.log": sent, "received.log": received} {
			f, err := os.Create(filepath.Join(cfg.LogDir, name))
			if err != nil {
				return rep, err
			}
			defer f.Close()
			l.file = f
		}
	}

	pri, err := kfake.NewCluster(kfake.ClusterID(primary), kfake.NumBrokers(1))
	if err != nil {
		return rep, err
	}
	defer pri.Close()
	sec, err := kfake.NewCluster(kfake.ClusterID(secondary), kfake.NumBrokers(1))
	if err != nil {
		return rep, err
	}
	defer sec.Close()
	priBrokers, secBrokers := strings.Join(pri.ListenAddrs(), ","), strings.Join(sec.ListenAddrs(), ",")
	for _, c := range []*kfake.Cluster{pri, sec} {
		if err := c.CreateTopic(defaultTopic, partitions, nil); err != nil {
			return rep, err
		}
	}
	say("clusters %s (%s) and %s (%s); %s has %d partitions on both", primary, priBrokers, secondary, secBrokers, defaultTopic, partitions)
	pol, err := policy.NewDefault()
	if err != nil {
		return rep, err
	}
	remote := pol.FormatRemoteTopic(primary, defaultTopic)

	priAdm, err := kadm.NewOptClient(kgo.SeedBrokers(pri.ListenAddrs()...))
	if err != nil {
		return rep, err
	}
	defer priAdm.Close()
	secAdm, err := kadm.NewOptClient(kgo.SeedBrokers(sec.ListenAddrs()...), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return rep, err
	}
	defer secAdm.Close()

	// connect-mirror-maker.properties of the walkthrough:
	//   primary->secondary.enabled = true, topics = .*
	//   secondary->primary.enabled = false
	//   primary->secondary.sync.group.offsets.enabled = true
	// with short intervals so the demo takes seconds.
	m, err := mirror.New(
		mirror.WithCluster(mirror.ClusterConfig{Alias: primary, Client: []kgo.Opt{kgo.SeedBrokers(pri.ListenAddrs()...)}}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: secondary, Client: []kgo.Opt{kgo.SeedBrokers(sec.ListenAddrs()...)}}),
		mirror.WithFlow(mirror.FlowConfig{
			Source:                   primary,
			Target:                   secondary,
			SyncGroupOffsets:         true,
			SyncGroupOffsetsInterval: 500 * time.Millisecond,
			EmitCheckpointsInterval:  200 * time.Millisecond,
			OffsetFlushInterval:      200 * time.Millisecond,
			RefreshTopicsInterval:    time.Second,
			EmitHeartbeatsInterval:   time.Second,
		}),
		mirror.WithLogger(logger),
	)
	if err != nil {
		return rep, err
	}
	mirrorDone := make(chan error, 1)
	go func() { mirrorDone <- m.Run(ctx) }()
	defer func() {
		m.Close()
		if merr := <-mirrorDone; merr != nil && err == nil {
			err = fmt.Errorf("mirror: %w", merr)
		}
	}()
	// Step 1: the flow primary->secondary with group offset sync.
	say("step 1: replicating %s->%s (%s), sync.group.offsets.enabled=true every 500 ms, checkpoints every 200 ms", primary, secondary, remote)

	// Steps 2 and 3: the deployments, each with its manifest's environment.
	priEnv := env{envBrokers: priBrokers}
	urlA, stopA, err := deployProducer(ctx, priEnv)
	if err != nil {
		return rep, err
	}
	defer stopA()
	say("step 2: producer deployed: %s=%s, POST http://%s/", envBrokers, priBrokers, urlA)
	consumerEnv := env{envBrokers: priBrokers, envReset: "earliest"}
	cons, err := deployConsumer(ctx, consumerEnv, received)
	if err != nil {
		return rep, err
	}
	defer cons.stop()
	say("step 3: consumer deployed: %s=%s %s=earliest, group %s", envBrokers, priBrokers, envReset, defaultGroup)

	// Step 4: traffic.
	var target atomic.Pointer[string]
	target.Store(&urlA)
	snd := startSender(ctx, &target, cfg.Interval, sent)
	defer snd.stop()
	say("step 4: sender: one POST every %v, each accepted message appended to send_message.log", cfg.Interval)
	if err := sleepCtx(ctx, cfg.Warmup); err != nil {
		return rep, err
	}
	if err := cons.failed(); err != nil {
		return rep, fmt.Errorf("consumer on %s: %w", primary, err)
	}

	// Step 5: the producer moves first. A new instance starts with the
	// changed manifest, the traffic is switched to it, the old one drains.
	secEnv := env{envBrokers: secBrokers}
	urlB, stopB, err := deployProducer(ctx, secEnv)
	if err != nil {
		return rep, err
	}
	defer stopB()
	target.Store(&urlB)
	stopA()
	priEnd, err := endOffsets(ctx, priAdm, defaultTopic) // no longer grows
	if err != nil {
		return rep, err
	}
	rep.SentPrimary = int(sum(priEnd))
	say("step 5: producer redeployed with %s=%s (POST http://%s/); %d messages went to %s", envBrokers, secBrokers, urlB, rep.SentPrimary, primary)
	if !cfg.Naive {
		// Step 6: wait until the consumer's log stops: it has read and
		// committed everything on primary.
		if err := waitCommitted(ctx, priAdm, defaultGroup, defaultTopic, priEnd, cons); err != nil {
			return rep, fmt.Errorf("waiting for the consumer to drain %s: %w", primary, err)
		}
		say("step 6: the consumer's log stopped: group %s committed all of %s/%s", defaultGroup, primary, defaultTopic)
	}
	if err := cons.stop(); err != nil {
		return rep, fmt.Errorf("consumer on %s: %w", primary, err)
	}
	stoppedAt := time.Now()
	if cfg.Naive {
		say("step 6 (naive): consumer stopped on %s right after the producer, without waiting", primary)
	} else {
		say("        consumer stopped on %s (final offsets committed); waiting for the group status SafeToSwitch", primary)
		if err := waitSafe(ctx, m, secAdm, remote, priEnd, say); err != nil {
			return rep, err
		}
		rep.SafeWait = time.Since(stoppedAt)
		say("        %s is SafeToSwitch after %v: its offsets on %s are the translation of its final ones", defaultGroup,
			rep.SafeWait.Round(time.Millisecond), secondary)
	}
	// messages on secondary is new to the group: with auto.offset.reset=none
	// every partition needs a committed offset. It only holds messages
	// sent since step 5, so the group starts it at the beginning.
	if err := commitStart(ctx, secAdm, defaultGroup, defaultTopic); err != nil {
		return rep, err
	}
	synced, err := committed(ctx, secAdm, defaultGroup, remote)
	if err != nil {
		return rep, err
	}
	say("        group %s on %s: %s synced at %v; %s starts at 0 (only messages sent since step 5)", defaultGroup, secondary, remote, fmtOffsets(synced), defaultTopic)
	linesBefore := received.Len()
	cons, err = deployConsumer(ctx, env{envBrokers: secBrokers, envReset: "none"}, received)
	if err != nil {
		return rep, err
	}
	defer cons.stop()
	say("        consumer redeployed with %s=%s %s=none", envBrokers, secBrokers, envReset)
	for received.Len() == linesBefore {
		if err := cons.failed(); err != nil {
			return rep, fmt.Errorf("consumer on %s: %w", secondary, err)
		}
		if err := sleepCtx(ctx, 2*time.Millisecond); err != nil {
			return rep, err
		}
	}
	rep.ConsumerPause = time.Since(stoppedAt)
	say("        the consumer logs again after a pause of %v", rep.ConsumerPause.Round(time.Millisecond))

	if err := sleepCtx(ctx, cfg.After); err != nil {
		return rep, err
	}
	if err := snd.stop(); err != nil {
		return rep, err
	}
	// Step 7: compare send_message.log with the consumer's log.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(missing(sent.Lines(), received.Lines())) > 0 {
		if err := cons.failed(); err != nil {
			return rep, fmt.Errorf("consumer on %s: %w", secondary, err)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return rep, err
		}
	}
	if err := cons.stop(); err != nil {
		return rep, fmt.Errorf("consumer on %s: %w", secondary, err)
	}
	rep.compare(sent.Lines(), received.Lines())
	rep.print(out, cfg)
	if rep.Lost > 0 {
		return rep, fmt.Errorf("%d messages lost, e.g. %q", rep.Lost, missing(sent.Lines(), received.Lines())[0])
	}
	return rep, nil
}

// deployProducer starts a producer instance on a loopback port; stop
// drains it (idempotent).
func deployProducer(ctx context.Context, e env) (string, func(), error) {
	p, err := newProducer(e.get)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.cl.Close()
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.serve(ctx, ln)
	}()
	var once sync.Once
	return ln.Addr().String(), func() { once.Do(func() { cancel(); <-done }) }, nil
}

// deployment is a running consumer instance.
type deployment struct {
	cancel context.CancelFunc
	done   chan error
	err    error
	ended  bool
}

func deployConsumer(ctx context.Context, e env, log io.Writer) (*deployment, error) {
	c, err := newConsumerConfig(e.get)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	d := &deployment{cancel: cancel, done: make(chan error, 1)}
	go func() { d.done <- consume(ctx, c, log) }()
	return d, nil
}

// stop stops the instance (idempotent) and returns its error.
func (d *deployment) stop() error {
	d.cancel()
	if !d.ended {
		d.err, d.ended = <-d.done, true
	}
	return d.err
}

// failed returns the instance's error if it already ended by itself.
func (d *deployment) failed() error {
	if d.ended {
		return d.err
	}
	select {
	case err := <-d.done:
		d.err, d.ended = err, true
		if err == nil {
			err = errors.New("stopped unexpectedly")
		}
		return err
	default:
		return nil
	}
}

// sender is the walkthrough's shell loop: POST a date every interval and
// log what was accepted. A message the producer refused is sent again.
type sender struct {
	cancel context.CancelFunc
	done   chan error
}

func startSender(ctx context.Context, url *atomic.Pointer[string], every time.Duration, log io.Writer) *sender {
	ctx, cancel := context.WithCancel(ctx)
	s := &sender{cancel: cancel, done: make(chan error, 1)}
	go func() {
		client := &http.Client{Timeout: 5 * time.Second}
		t := time.NewTicker(every)
		defer t.Stop()
		for seq := 1; ; seq++ {
			msg := fmt.Sprintf("%06d %s", seq, time.Now().Format("Mon Jan 2 15:04:05.000 MST 2006"))
			for {
				select {
				case <-ctx.Done():
					s.done <- nil
					return
				case <-t.C:
				}
				resp, err := client.Post("http://"+*url.Load()+"/", "text/plain", bytes.NewBufferString(msg))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						fmt.Fprintln(log, msg)
						break
					}
				}
			}
		}
	}()
	return s
}

func (s *sender) stop() error {
	s.cancel()
	err := <-s.done
	s.done <- err
	return err
}

// compare fills the report from the sent log and the received log.
func (r *switchReport) compare(sent, received []string) {
	got := map[string]bool{}
	for _, l := range received {
		msg, ok := strings.CutPrefix(l, "received: ")
		if !ok {
			continue
		}
		r.Received++
		got[msg] = true
	}
	r.Distinct = len(got)
	r.Duplicates = r.Received - r.Distinct
	r.Sent = len(sent)
	r.Lost = len(missing(sent, received))
}

// missing returns the sent messages with no "received:" line.
func missing(sent, received []string) []string {
	got := make(map[string]bool, len(received))
	for _, l := range received {
		if msg, ok := strings.CutPrefix(l, "received: "); ok {
			got[msg] = true
		}
	}
	var out []string
	for _, s := range sent {
		if !got[s] {
			out = append(out, s)
		}
	}
	return out
}

func (r *switchReport) print(w io.Writer, cfg switchConfig) {
	fmt.Fprintf(w, "\nstep 7: send_message.log vs the consumer's log\n")
	fmt.Fprintf(w, "  messages sent (HTTP 200)       %6d  (%d to %s, %d to %s)\n", r.Sent, r.SentPrimary, primary, r.Sent-r.SentPrimary, secondary)
	fmt.Fprintf(w, "  received (log lines)           %6d  (%d distinct)\n", r.Received, r.Distinct)
	fmt.Fprintf(w, "  lost                           %6d\n", r.Lost)
	fmt.Fprintf(w, "  duplicates                     %6d\n", r.Duplicates)
	switch {
	case cfg.Naive && r.Duplicates > 0:
		fmt.Fprintf(w, "    the consumer moved before the group-offset sync caught up with its last commits: it resumed\n")
		fmt.Fprintf(w, "    on %s at the offsets synced up to 500 ms earlier and re-read what it had logged since\n", secondary)
		fmt.Fprintf(w, "    (the walkthrough's observation when switching both at once). Nothing is lost: auto.offset.reset=none\n")
		fmt.Fprintf(w, "    and translated offsets never skip.\n")
	case r.Duplicates > 0:
		fmt.Fprintf(w, "    the offsets synced to %s are at the last offset sync at or before the group's final commit\n", secondary)
		fmt.Fprintf(w, "    (kmirror never translates past a record it cannot place): the records between were re-read.\n")
	default:
		fmt.Fprintf(w, "    none: the consumer moved only after its final offsets were synced to %s (SafeToSwitch),\n", secondary)
		fmt.Fprintf(w, "    exactly at the end of what it had read on %s. Switch it together with the producer (-naive)\n", primary)
		fmt.Fprintf(w, "    to see the duplicates the walkthrough observed.\n")
	}
	if !cfg.Naive {
		fmt.Fprintf(w, "  waited for SafeToSwitch        %6v\n", r.SafeWait.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  consumer pause at the switch   %6v\n", r.ConsumerPause.Round(time.Millisecond))
}
