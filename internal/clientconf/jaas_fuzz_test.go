package clientconf

import (
	"strings"
	"testing"
)

// FuzzParseJAASSecret: no sasl.jaas.config value makes ParseJAAS panic, and the
// error for a value whose password option is followed by more text never
// contains the password.
func FuzzParseJAASSecret(f *testing.F) {
	for _, s := range []string{
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`,
		`org.apache.kafka.common.security.scram.ScramLoginModule required username=u password='p\"q' /* c */;`,
		`x required a=1;`, `"`, `/*`, `a b c=d e`,
	} {
		f.Add(s, "Xyzzy42")
	}
	f.Fuzz(func(t *testing.T, rest, pw string) {
		if _, err := ParseJAAS(rest); err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
		if len(pw) < 4 || strings.ContainsAny(pw, "\"\\\r\n") {
			return
		}
		in := `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + pw + `" ` + rest
		if _, err := ParseJAAS(in); err != nil && strings.Contains(err.Error(), pw) && !strings.Contains(rest, pw) {
			t.Fatalf("error %q contains the password", err)
		}
	})
}
