package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDRCommandsNeverPrintSecrets (breaker, holds): a file with SASL
// passwords on both clusters, broken in ways that make each command fail
// (an unknown mechanism, an unterminated JAAS entry, both clusters
// unreachable): every command exits 2 or 3 and neither stdout nor stderr
// holds a password.
func TestDRCommandsNeverPrintSecrets(t *testing.T) {
	base := "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\nA->B.enabled = true\nB->A.enabled = true\n" +
		"A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = PLAIN\n" +
		"A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"S3CRET-A\";\n" +
		"B.security.protocol = SASL_PLAINTEXT\nB.sasl.mechanism = SCRAM-SHA-512\n" +
		"B.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"S3CRET-B\";\n"
	for name, body := range map[string]string{
		"unreachable":  base,
		"mechanism":    strings.Replace(base, "B.sasl.mechanism = SCRAM-SHA-512", "B.sasl.mechanism = SCRAM-SHA-5122", 1),
		"unterminated": strings.Replace(base, `password="S3CRET-B";`, `password="S3CRET-B`, 1),
	} {
		props := filepath.Join(t.TempDir(), name+".properties")
		if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		for cmd, main := range drCommands {
			code, out, errOut, _ := runDR(t, main, "-config", props, "-flow", "A->B", "-groups", "g", "-timeout", "1s", "-json")
			if code != drUsage && code != drUnreachable {
				t.Errorf("%s %s: exit %d, want 2 or 3\n%s\n%s", cmd, name, code, out, errOut)
			}
			if strings.Contains(out+errOut, "S3CRET") {
				t.Errorf("%s %s printed a password:\n%s\n%s", cmd, name, out, errOut)
			}
		}
	}
}
