package clientconf

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSecurityKeysWithoutTheirProtocolWarn (a new user's finding): sasl.*
// and ssl.* keys under a security.protocol that does not use them were
// dropped without a word, so a file that forgot security.protocol passed
// -check -strict. Each family warns once, naming its first key and no value.
func TestSecurityKeysWithoutTheirProtocolWarn(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="S3CRET";`
	for _, tc := range []struct {
		name string
		s    map[string]string
		want []string
	}{
		{"no protocol", map[string]string{"sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas, "ssl.truststore.location": "/t.jks", "ssl.truststore.password": "S3CRET"},
			[]string{"sasl.jaas.config: security.protocol is PLAINTEXT, without SASL: the sasl.* settings have no effect (set security.protocol=SASL_SSL, or SASL_PLAINTEXT without TLS)",
				"ssl.truststore.location: security.protocol is PLAINTEXT, without TLS: the ssl.* settings have no effect (set security.protocol=SSL, or SASL_SSL with SASL)"}},
		{"SSL with sasl keys", map[string]string{"security.protocol": "SSL", "sasl.mechanism": "PLAIN"},
			[]string{"sasl.mechanism: security.protocol is SSL, without SASL: the sasl.* settings have no effect (set security.protocol=SASL_SSL, or SASL_PLAINTEXT without TLS)"}},
		{"SASL_PLAINTEXT with ssl keys", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas, "ssl.keystore.password": "S3CRET"},
			[]string{"ssl.keystore.password: security.protocol is SASL_PLAINTEXT, without TLS: the ssl.* settings have no effect (set security.protocol=SSL, or SASL_SSL with SASL)"}},
		{"SASL_SSL uses both", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas}, nil},
		{"empty values", map[string]string{"ssl.truststore.location": " ", "sasl.mechanism": ""}, nil},
	} {
		b, err := Build(Client, tc.s, Env{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, w := range b.Warnings {
			got = append(got, w.Key+": "+w.Message)
			if strings.Contains(w.Message, "S3CRET") {
				t.Errorf("%s: a warning shows a secret: %s", tc.name, w.Message)
			}
		}
		sort.Strings(got)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: warnings (-want +got):\n%s", tc.name, diff)
		}
	}
}
