package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Environment variables read by the producer and the consumer; the
// deployment switches clusters by changing them (seed article: "the
// application's Kafka destination is switched by an environment variable").
const (
	envBrokers = "KAFKA_BROKERS"           // comma-separated bootstrap servers (required)
	envTopic   = "KAFKA_TOPIC"             // producer: topic to write (default messages)
	envPattern = "KAFKA_TOPIC_PATTERN"     // consumer: regex of topics to read (default: messages and its remote copies)
	envGroup   = "KAFKA_GROUP"             // consumer: group id (default messages-consumer)
	envReset   = "KAFKA_AUTO_OFFSET_RESET" // consumer: earliest, latest or none (default earliest)
)

const (
	defaultTopic = "messages"
	// defaultPattern matches messages and every remote copy of it under
	// MM2's default policy (primary.messages on the standby cluster), so
	// the same consumer reads the replicated history after a switch.
	defaultPattern = `^(?:[^.]+\.)?messages$`
	defaultGroup   = "messages-consumer"
	maxBody        = 1 << 20 // bytes accepted per POST
)

func getenvDefault(getenv func(string) string, key, def string) string {
	if v := strings.TrimSpace(getenv(key)); v != "" {
		return v
	}
	return def
}

// brokers returns the KAFKA_BROKERS list.
func brokers(getenv func(string) string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(getenv(envBrokers), ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is not set (comma-separated host:port list)", envBrokers)
	}
	return out, nil
}

// producer is the HTTP producer of the seed article: the body of every
// POST becomes one record of KAFKA_TOPIC; the response is 200 once the
// cluster acknowledged it, 503 if it could not.
type producer struct {
	cl    *kgo.Client
	topic string
}

// newProducer connects (lazily) to the cluster named by the environment.
func newProducer(getenv func(string) string) (*producer, error) {
	bs, err := brokers(getenv)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs...),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), // messages have no key: spread them
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	return &producer{cl: cl, topic: getenvDefault(getenv, envTopic, defaultTopic)}, nil
}

// ServeHTTP handles POST / (the message) and GET /healthz.
func (p *producer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz" && r.Method == http.MethodGet:
		fmt.Fprintln(w, "ok")
		return
	case r.URL.Path != "/":
		http.NotFound(w, r)
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a message", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	rec := &kgo.Record{Topic: p.topic, Value: body}
	if err := p.cl.ProduceSync(r.Context(), rec).FirstErr(); err != nil {
		msg := "not stored: " + err.Error()
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			// The client does not ask the broker to create the topic
			// (kgo's default), so a fresh cluster refuses every POST.
			msg += fmt.Sprintf(" (topic %[1]s does not exist on the cluster of %[2]s: create it, e.g. kafka-topics.sh --create --topic %[1]s, or set %[3]s to an existing topic)",
				p.topic, envBrokers, envTopic)
		}
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "stored %s[%d]@%d\n", rec.Topic, rec.Partition, rec.Offset)
}

// serve runs the producer on ln until ctx is done, then stops accepting,
// finishes the requests in flight and closes the Kafka client.
func (p *producer) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
		<-done
	}
	p.cl.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// consumerConfig is the consumer's configuration from the environment.
type consumerConfig struct {
	brokers []string
	group   string
	pattern string
	reset   string
}

func newConsumerConfig(getenv func(string) string) (consumerConfig, error) {
	bs, err := brokers(getenv)
	if err != nil {
		return consumerConfig{}, err
	}
	c := consumerConfig{brokers: bs, group: getenvDefault(getenv, envGroup, defaultGroup),
		pattern: getenvDefault(getenv, envPattern, defaultPattern), reset: getenvDefault(getenv, envReset, "earliest")}
	if _, err := regexp.Compile(c.pattern); err != nil {
		return consumerConfig{}, fmt.Errorf("%s=%q: %v", envPattern, c.pattern, err)
	}
	if _, err := startOffset(c.reset); err != nil {
		return consumerConfig{}, err
	}
	return c, nil
}

// startOffset maps auto.offset.reset to where a partition without a
// committed offset starts. "none" makes such a partition an error instead:
// after a switch, a consumer must resume from offsets that were synced or
// translated, never from an arbitrary end of the log (seed article).
func startOffset(reset string) (kgo.Offset, error) {
	switch reset {
	case "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "latest":
		return kgo.NewOffset().AtEnd(), nil
	case "none":
		return kgo.NewOffset().AtCommitted(), nil
	}
	return kgo.Offset{}, fmt.Errorf("%s=%q: want earliest, latest or none", envReset, reset)
}

// consume is the consumer of the seed article: it reads every topic
// matching the pattern as a member of the group, logs each message as one
// line "received: <message>" to log, and commits after logging (at least
// once). It stops when ctx is done, committing and leaving the group; a
// fetch error (e.g. no committed offset with auto.offset.reset=none) ends
// it with that error.
func consume(ctx context.Context, c consumerConfig, log io.Writer) (err error) {
	start, _ := startOffset(c.reset)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics(c.pattern),
		kgo.ConsumeStartOffset(start),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(500*time.Millisecond),
		kgo.MetadataMaxAge(2*time.Second),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
	)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if cerr := cl.CommitUncommittedOffsets(cctx); cerr != nil && err == nil {
			err = fmt.Errorf("final commit: %w", cerr)
		}
		_ = cl.LeaveGroupContext(cctx)
		cl.Close()
	}()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errs := fs.Errors(); len(errs) > 0 {
			e := errs[0]
			return fmt.Errorf("consuming %s[%d]: %w%s", e.Topic, e.Partition, e.Err, noCommitHint(c, e.Err))
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			fmt.Fprintf(log, "received: %s\n", r.Value)
			n++
		})
		if n == 0 {
			continue
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
}

// noCommitHint explains kgo's "partition has no prior committed offset"
// (unexported by kgo, so matched by its text) under
// KAFKA_AUTO_OFFSET_RESET=none: a group's first start, with nothing
// committed yet, needs earliest or latest; none is for a consumer resumed
// on offsets synced or translated from the other cluster.
func noCommitHint(c consumerConfig, err error) string {
	if c.reset != "none" || !strings.Contains(err.Error(), "no prior committed offset") {
		return ""
	}
	return fmt.Sprintf(" (%s=none and group %s has no committed offset there: start it once without %[1]s, which reads from the earliest offset, or commit the group's offsets translated from the other cluster first)",
		envReset, c.group)
}

// lineLog is a goroutine-safe log of lines, optionally copied to a file.
type lineLog struct {
	mu    sync.Mutex // guards the fields below
	lines []string
	part  string
	file  io.Writer
}

// Write appends complete lines; a trailing partial line waits for its end.
func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.part + string(p)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, s[:i])
		s = s[i+1:]
	}
	l.part = s
	if l.file != nil {
		if _, err := l.file.Write(p); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Lines returns a copy of the complete lines.
func (l *lineLog) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Len returns the number of complete lines.
func (l *lineLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}
