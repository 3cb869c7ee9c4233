package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/faultproxy"
)

// soak is one run of a profile: the clusters, the proxies, the runner
// binary and the output.
type soak struct {
	o   *options
	out io.Writer
	dir string
	rng *rand.Rand

	kafkaEnv   map[string]string // from kafka.sh env
	srcDirect  string            // broker addresses, not proxied
	dstDirect  string
	proxy      map[side]*faultproxy.Proxy
	srcCl      *kgo.Client
	dstCl      *kgo.Client
	srcAdm     *kadm.Client
	dstAdm     *kadm.Client
	bin        string
	startedBrk bool // the soak started the clusters (and stops them)

	outMu sync.Mutex
}

// newSoak checks the environment and prepares everything the scenarios
// share: it starts the clusters if they are down, builds the runner and
// opens the proxies.
func newSoak(ctx context.Context, o *options, out io.Writer) (*soak, error) {
	s := &soak{o: o, out: out, rng: rand.New(rand.NewPCG(uint64(o.seed), 0x50a6)), proxy: map[side]*faultproxy.Proxy{}}
	if err := s.open(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *soak) open(ctx context.Context) (err error) {
	o := s.o
	if _, err := os.Stat(o.kafkaSh); err != nil {
		return fmt.Errorf("-kafka-sh %s: %w (run from the repository root, or pass the script's path)", o.kafkaSh, err)
	}
	if s.dir = o.work; s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "kmirror-soak-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	s.printf("soak: profile %s, seed %d, work dir %s\n", o.profile, o.seed, s.dir)

	if code, _ := s.kafka(ctx, "status"); code != 0 {
		s.printf("soak: the clusters are not running: starting them (kafka.sh start)\n")
		if code, outp := s.kafka(ctx, "start"); code != 0 {
			return fmt.Errorf("kafka.sh start failed (exit %d):\n%s", code, outp)
		}
		s.startedBrk = true
	}
	_, envOut := s.kafka(ctx, "env")
	s.kafkaEnv = parseExports(envOut)
	s.srcDirect, s.dstDirect = s.kafkaEnv["KMIRROR_SOURCE_BROKERS"], s.kafkaEnv["KMIRROR_TARGET_BROKERS"]
	for _, k := range []string{"KMIRROR_SOURCE_BROKERS", "KMIRROR_TARGET_BROKERS", "KMIRROR_SOURCE_PROXIED_BROKERS",
		"KMIRROR_TARGET_PROXIED_BROKERS", "KMIRROR_SOURCE_PROXIED_LISTENER", "KMIRROR_TARGET_PROXIED_LISTENER"} {
		if s.kafkaEnv[k] == "" {
			return fmt.Errorf("kafka.sh env did not print %s (a kafka.sh without proxied listeners?):\n%s", k, envOut)
		}
	}
	for _, sd := range []side{source, target} {
		up := strings.ToUpper(string(sd))
		p, err := faultproxy.New(s.kafkaEnv["KMIRROR_"+up+"_PROXIED_BROKERS"], s.kafkaEnv["KMIRROR_"+up+"_PROXIED_LISTENER"])
		if err != nil {
			return fmt.Errorf("%s fault proxy (is another soak or TestProxiedListenerThroughFaultProxy running on these clusters?): %w", sd, err)
		}
		s.proxy[sd] = p
	}
	if s.srcCl, err = kgo.NewClient(kgo.SeedBrokers(strings.Split(s.srcDirect, ",")...)); err != nil {
		return err
	}
	if s.dstCl, err = kgo.NewClient(kgo.SeedBrokers(strings.Split(s.dstDirect, ",")...)); err != nil {
		return err
	}
	s.srcAdm, s.dstAdm = kadm.NewClient(s.srcCl), kadm.NewClient(s.dstCl)
	for _, a := range []*kadm.Client{s.srcAdm, s.dstAdm} {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := a.BrokerMetadata(actx)
		cancel()
		if err != nil {
			return fmt.Errorf("clusters %s / %s: %w", s.srcDirect, s.dstDirect, err)
		}
	}

	if s.bin = o.runner; s.bin == "" {
		s.bin = filepath.Join(s.dir, "kmirror")
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", s.bin, "./examples/kmirror")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./examples/kmirror: %w\n%s", err, b)
		}
		s.printf("soak: built the runner in %.1fs\n", time.Since(start).Seconds())
	}
	return nil
}

func (s *soak) close() {
	for _, p := range s.proxy {
		_ = p.Close()
	}
	if s.srcCl != nil {
		s.srcCl.Close()
	}
	if s.dstCl != nil {
		s.dstCl.Close()
	}
	if s.startedBrk {
		s.printf("soak: stopping the clusters it started\n")
		s.kafka(context.Background(), "stop")
	}
}

func (s *soak) printf(format string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.out, format, args...)
}

// kafka runs kafka.sh with args and the soak's environment, plus the
// broker session timeout for the brokers it (re)starts. It returns the
// exit code (-1 if it could not run) and the combined output.
func (s *soak) kafka(ctx context.Context, args ...string) (int, string) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{s.o.kafkaSh}, args...)...)
	cmd.Env = append(os.Environ(), "KMIRROR_KAFKA_BROKER_SESSION_TIMEOUT_MS="+strconv.FormatInt(s.o.sessionTimeout.Milliseconds(), 10))
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, b.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), b.String()
	}
	return -1, b.String() + err.Error()
}

// parseExports reads `export A=1 B=2` lines (kafka.sh env) into a map.
func parseExports(s string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "export" {
			continue
		}
		for _, kv := range f[1:] {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = strings.Trim(v, `"'`)
			}
		}
	}
	return out
}

// restartBroker runs kafka.sh restart for one cluster and returns how long
// the broker was away.
func (s *soak) restartBroker(ctx context.Context, sd side, sig string) (time.Duration, error) {
	start := time.Now()
	code, out := s.kafka(ctx, "restart", string(sd), sig)
	if code != 0 {
		return 0, fmt.Errorf("kafka.sh restart %s %s (exit %d):\n%s", sd, sig, code, lastLines(out, 20))
	}
	return time.Since(start), nil
}

// machine describes the host for the results table.
func machine() string {
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, v, _ := strings.Cut(l, ":")
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, err := procKB(b, "MemTotal:"); err == nil {
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%d cores (%s)%s, %s/%s, %s", runtime.NumCPU(), cpu, mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// procKB reads a "Key:   123 kB" line of a /proc file.
func procKB(b []byte, key string) (int64, error) {
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, key); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s line", key)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
