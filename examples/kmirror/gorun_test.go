package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// The go-run test runs this test binary in two extra roles, chosen by
// environment variable before any test runs.
const (
	roleEnv = "KMIRROR_TEST_GORUN_ROLE"
	argsEnv = "KMIRROR_TEST_GORUN_ARGS" // the child's runner arguments, separated by \x1f
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "parent":
		os.Exit(goRunParent())
	case "child":
		os.Args = append([]string{"kmirror"}, strings.Split(os.Getenv(argsEnv), "\x1f")...)
		main() // exits
	}
	// The parallel tests (those that hold no fixed port, environment or
	// signal handler) mostly wait for runners: four side by side unless
	// -parallel says otherwise (see TESTING.md).
	flag.Parse()
	testcluster.SetDefaultParallel(4, 4)
	os.Exit(m.Run())
}

// goRunParent does what `go run` does once the binary is built
// (cmd/go's base.RunStdin): ignore SIGINT and SIGQUIT, start the binary
// with the same stdin, stdout and stderr, wait for it. SIGTERM is not
// caught, so it kills this process at once, as it kills the go command.
// It prints the child's pid on stdout first.
func goRunParent() int {
	signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGQUIT)
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "parent:", err)
		return 1
	}
	cmd := exec.Command(exe)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), roleEnv+"=child")
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "parent:", err)
		return 1
	}
	fmt.Printf("child pid %d\n", cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		return 1
	}
	return 0
}

// TestGoRunSIGTERM: SIGTERM to the go command of `go run ./examples/kmirror`
// stops the runner gracefully. The go command is played by a copy of this
// test binary named "go" (the runner recognizes its parent by that name)
// that behaves as cmd/go does; the runner is this test binary calling
// main() with -embedded clusters.
func TestGoRunSIGTERM(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the runner follows its go-run parent only on Linux (pidfd of the parent)")
	}
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	goCmd := filepath.Join(dir, "go")
	if err := os.Link(self, goCmd); err != nil {
		copyFile(t, self, goCmd)
	}
	cfg := filepath.Join(dir, "mm2.properties")
	if err := os.WriteFile(cfg, []byte("clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(goCmd)
	parent.Env = append(os.Environ(), roleEnv+"=parent", argsEnv+"="+strings.Join([]string{"-config", cfg, "-embedded", "-demo-topics", "orders:2"}, "\x1f"))
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	parent.Stderr = stderrW
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	stderrW.Close() // the parent and the child hold the write end now
	var childPid int
	t.Cleanup(func() {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		if childPid > 0 {
			_ = syscall.Kill(childPid, syscall.SIGKILL) // only if the test failed: it is gone otherwise
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if _, err2 := fmt.Sscanf(line, "child pid %d", &childPid); err != nil || err2 != nil {
		t.Fatalf("reading the child's pid: %q, %v %v", line, err, err2)
	}

	// Read the runner's log until EOF: every writer (parent and child) gone.
	logs := &syncBuffer{}
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(logs, stderrR)
		close(eof)
	}()
	eventually(t, "runner started", func() string {
		if strings.Contains(logs.String(), `msg=starting`) {
			return ""
		}
		return "no 'starting' log line yet:\n" + logs.String()
	})
	if err := parent.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := parent.Wait(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("the go-run stand-in ended with %v, want killed by SIGTERM", err)
	}
	select {
	case <-eof:
	case <-time.After(liveness):
		t.Fatalf("the runner (pid %d) still runs %s after its go-run parent died\nlog:\n%s", childPid, liveness, logs)
	}
	for _, want := range []string{"kmirror: the go command of `go run` exited: stopping", "msg=\"stopping: flushing records in flight and storing resume points\"", "msg=\"stopped cleanly\""} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("runner log lacks %s:\n%s", want, logs)
		}
	}
	// The child exits (it is gone, or a zombie until its new parent reaps it).
	eventually(t, "runner exited", func() string {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(childPid) + "/stat")
		if err != nil {
			return ""
		}
		if f := strings.Fields(string(b)); len(f) > 2 && (f[2] == "Z" || f[2] == "X") {
			return ""
		}
		return "state: " + string(b)
	})
	childPid = 0
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
