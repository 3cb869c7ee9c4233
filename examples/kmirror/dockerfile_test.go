package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile keeps examples/kmirror/Dockerfile in step with the code:
// the builder's Go version is go.mod's, the binary is static (CGO off) and
// built from this package with the -ldflags variable that -version reads,
// and the image runs as a numeric non-root user with an exec-form
// entrypoint. (CI lints the file with hadolint; no Docker engine builds
// it.)
func TestDockerfile(t *testing.T) {
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}
	text := string(df)
	var froms, users []string
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "FROM":
			froms = append(froms, l)
		case "USER":
			users = append(users, f[1])
		}
	}
	if len(froms) != 2 {
		t.Fatalf("want a two-stage build, got FROM lines %q", froms)
	}
	if want := "golang:" + string(m[1]) + " AS build"; !strings.Contains(froms[0], want) {
		t.Errorf("builder stage %q: want %q (go.mod says go %s)", froms[0], want, m[1])
	}
	if !strings.Contains(froms[1], "distroless/static") || !strings.HasSuffix(froms[1], ":nonroot") {
		t.Errorf("final stage %q: want a distroless static nonroot image (no shell, CA certificates)", froms[1])
	}
	if len(users) == 0 || !regexp.MustCompile(`^[1-9]\d*:[1-9]\d*$`).MatchString(users[len(users)-1]) {
		t.Errorf("last USER %q: want a numeric non-root uid:gid", users)
	}
	for _, want := range []string{"CGO_ENABLED=0", "./examples/kmirror", "github.com/kmirror/kmirror/examples/kmirror@", "-X main.ldRevision=", `ENTRYPOINT ["/usr/local/bin/kmirror"]`} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if ldRevision != "" {
		t.Errorf("ldRevision is %q in a test build, want empty (set only by -ldflags)", ldRevision)
	}
}
