package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkError runs -check on the properties text and returns its error.
func checkError(t *testing.T, props string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"-check", "-config", path}, io.Discard, io.Discard)
	if err == nil {
		t.Fatalf("-check accepted:\n%s", props)
	}
	return err.Error()
}

// TestBrk1207ClustersWhiteSpaceKeepsOtherAliases: "clusters = x, a b"
// (one alias holding a space) was told to write "clusters = a, b", which
// drops the alias x listed before it; the suggested line is the whole
// list, every alias split at its white space.
func TestBrk1207ClustersWhiteSpaceKeepsOtherAliases(t *testing.T) {
	msg := checkError(t, "clusters = x, a b\nx.bootstrap.servers = h:1\na.bootstrap.servers = h:2\nb.bootstrap.servers = h:3\na->b.enabled = true\n")
	if !strings.Contains(msg, `alias "a b" contains white space`) || !strings.Contains(msg, "clusters = x, a, b") {
		t.Errorf("error %q; want it to name the alias \"a b\" and suggest clusters = x, a, b", msg)
	}
}

// TestBrk1207ClustersNoBreakSpace: a UTF-8 no-break space in clusters
// (bytes C2 A0, as pasted from a web page), read as ISO-8859-1 as MM2
// reads the file, is "Â" and U+00A0. Between two aliases it was told
// "alias "Â\u00a0b" contains white space: ... clusters = Â, b", a line
// that keeps the stray Â; after the last alias it made the alias "bÂ" and
// the error asked for bÂ.bootstrap.servers. Both now name the no-break
// space and suggest clusters = a, b.
func TestBrk1207ClustersNoBreakSpace(t *testing.T) {
	for _, clusters := range []string{"a,\xc2\xa0b", "a, b\xc2\xa0", `a,\u00a0b`} {
		msg := checkError(t, "clusters = "+clusters+"\na.bootstrap.servers = h:1\nb.bootstrap.servers = h:2\na->b.enabled = true\n")
		if !strings.Contains(msg, "no-break space") || !strings.Contains(msg, "clusters = a, b") || strings.Contains(msg, "clusters = \u00c2") || strings.Contains(msg, "b\u00c2.") {
			t.Errorf("clusters = %q: error %q; want it to name the no-break space and suggest clusters = a, b", clusters, msg)
		}
	}
}

// TestBrk1207TopicsThatMatchNoTopicWarn: a topics (or topics.exclude)
// entry holding a space, a quote or a semicolon ("orders payments",
// "\"orders\"", "orders;payments": a list written as in another tool)
// matches no topic, since no topic name holds those characters: the flow
// replicated nothing (or excluded nothing) and -check said nothing. It
// warns now, with the list to write.
func TestBrk1207TopicsThatMatchNoTopicWarn(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"a->b.topics = orders payments", "a->b.topics = orders, payments"},
		{`a->b.topics = "orders", payments`, "a->b.topics = orders, payments"},
		{"a->b.topics = orders;payments", "a->b.topics = orders, payments"},
		{`topics.exclude = 'secret.*'`, "topics.exclude = secret.*"},
	} {
		path := filepath.Join(t.TempDir(), "mm2.properties")
		props := "clusters = a, b\na.bootstrap.servers = h:1\nb.bootstrap.servers = h:2\na->b.enabled = true\n" + c.line + "\n"
		if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		err := run(context.Background(), []string{"-check", "-strict", "-config", path}, &out, io.Discard)
		if err == nil || !strings.Contains(out.String(), "matches no topic") || !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: -check -strict: %v; want a warning that it matches no topic, suggesting %q:\n%s", c.line, err, c.want, out.String())
		}
	}
	// A space or quote in a character class matches topics: no warning.
	path := filepath.Join(t.TempDir(), "mm2.properties")
	props := "clusters = a, b\na.bootstrap.servers = h:1\nb.bootstrap.servers = h:2\na->b.enabled = true\na->b.topics = [^ ;\"]+\n"
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"-check", "-strict", "-config", path}, &out, io.Discard); err != nil || strings.Contains(out.String(), "matches no topic") {
		t.Errorf(`a->b.topics = [^ ;"]+: -check -strict: %v; want no warning:\n%s`, err, out.String())
	}
}

// TestRunErrorTracedToFileSetting (an operator's find): with a top-level
// "replication.factor = 3" against a one-broker target, the runner exited
// with an error naming A->B.replication.factor, a key the file does not
// hold, and no line. It names the file's setting and its line too.
func TestRunErrorTracedToFileSetting(t *testing.T) {
	a, b := fakeCluster(t, "A"), fakeCluster(t, "B")
	path := filepath.Join(t.TempDir(), "mm2.properties")
	props := "clusters = A, B\nA.bootstrap.servers = " + a.ListenAddrs()[0] + "\nB.bootstrap.servers = " + b.ListenAddrs()[0] +
		"\nA->B.enabled = true\nreplication.factor = 3\n"
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run(ctx, []string{"-config", path, "-listen", ""}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "A->B.replication.factor") || !strings.Contains(err.Error(), "(set in the file by replication.factor, line 5)") {
		t.Errorf("run: %v; want the flow's key and the file's setting with its line", err)
	}
}

// TestBrkNCheckRefusesJavaUnicodeFlag: "A->B.groups = (?U)\\w+" (Java's
// UNICODE_CHARACTER_CLASS flag, which Go's RE2 reads as "ungreedy") passed
// -check, and the flow then skipped the groups with non-ASCII names MM2
// copies. -check refuses it now, naming the key, the regex and the line,
// with the pattern to write.
func TestBrkNCheckRefusesJavaUnicodeFlag(t *testing.T) {
	msg := checkError(t, "clusters = A, B\nA.bootstrap.servers = h:1\nB.bootstrap.servers = h:2\nA->B.enabled = true\nA->B.groups = (?U)\\\\w+\n")
	want := `mirror: A->B.groups="(?U)\\w+": line 5: Java reads (?U) as UNICODE_CHARACTER_CLASS (\w, \d, \s, \b and the POSIX classes take every Unicode letter and digit), Go's RE2 as ungreedy, keeping them ASCII, so the pattern would select other names than in MM2: write \w+ instead, with Unicode categories where other letters or digits must match (e.g. [\p{L}\p{M}\p{Nd}\p{Pc}] for \w, \p{Nd} for \d), each backslash doubled in a properties file, whose reader drops one`
	if msg != want {
		t.Errorf("error\n%q\nwant\n%q", msg, want)
	}
}

// TestBrkNUnresolvedPlaceholderNamedInError: a placeholder that no config
// provider replaced (its provider undeclared, or misconfigured as in
// config.providers.env.class = EnvVarConfigProvider) was checked as the
// value itself, and the error said only `"${env:KAFKA}" has an invalid
// port` or "must be a whole number": it now says the placeholder was not
// replaced and where to look.
func TestBrkNUnresolvedPlaceholderNamedInError(t *testing.T) {
	msg := checkError(t, "config.providers = env\n"+
		"config.providers.env.class = EnvVarConfigProvider\n"+
		"clusters = A, B\n"+
		"A.bootstrap.servers = ${env:KAFKA}\n"+
		"B.bootstrap.servers = b:1\n"+
		"A->B.enabled = true\n"+
		"tasks.max = ${vault:mm2:tasks}\n")
	want := "mirror: 3 configuration errors:\n" +
		"\tconfig.providers.env.class=\"EnvVarConfigProvider\": line 2: no class has this name: write config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider (MM2 cannot load a class named EnvVarConfigProvider either: it fails to start)\n" +
		"\tA.bootstrap.servers=\"${env:KAFKA}\": line 4: \"${env:KAFKA}\" has an invalid port (the value still holds the placeholder ${env:KAFKA}, which no config provider replaced: see the message about config.providers)\n" +
		"\ttasks.max=\"${vault:mm2:tasks}\": line 7: must be a whole number of slots between 1 and 1024 (the value still holds the placeholder ${vault:mm2:tasks}, which no config provider replaced: see the message about config.providers)\n" +
		"1 warning(s) as well:\n" +
		"\tline 7: tasks.max: placeholder ${vault:...} left as written: config provider \"vault\" is not declared in config.providers (MM2 does the same)"
	if msg != want {
		t.Errorf("error\n%s\nwant\n%s", msg, want)
	}
}
