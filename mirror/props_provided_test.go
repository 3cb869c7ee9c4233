package mirror

import (
	"errors"
	"strings"
	"testing"
)

// TestProvidedValuesShownAsWritten: a value a config provider supplies
// (${env:...}, ${file:...}) is often a secret under a key that does not
// name one (a username, a broker list kept out of the file). The
// effective configuration (-check, the REST API's config, the settings
// every member publishes in the status topic) and the errors showed the
// resolved value; they now show the placeholder as written, as Kafka
// Connect shows a connector's configuration.
func TestProvidedValuesShownAsWritten(t *testing.T) {
	t.Parallel()
	env := map[string]string{"KM_TOPICS": "orders-hush-7", "KM_BOOT": "hush-host-9", "KM_USER": "svc-hush-3", "KM_GOOD_BOOT": "a.example:9092"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	head := "config.providers = env\nconfig.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n" +
		"clusters = A, B\nB.bootstrap.servers = b.example:9092\nA->B.enabled = true\n"

	p, err := ParseProperties(strings.NewReader(head+"A.bootstrap.servers = ${env:KM_GOOD_BOOT}\nA->B.topics = ${env:KM_TOPICS}\n"+
		"A.client.id = ${env:KM_USER}\n"), WithLookupEnv(lookup))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Flows()[0].Topics; len(got) != 1 || got[0] != "orders-hush-7" {
		t.Errorf("topics %q, want the provided orders-hush-7", got)
	}
	eff := p.Effective()
	for _, want := range []string{"A->B.topics = ${env:KM_TOPICS}", "A.bootstrap.servers = ${env:KM_GOOD_BOOT}", "A.client.id = ${env:KM_USER}"} {
		if !strings.Contains(eff, want) {
			t.Errorf("effective configuration lacks %q:\n%s", want, eff)
		}
	}
	settings := p.FlowSettings("A->B")
	for _, leak := range []string{"hush", "a.example"} {
		if strings.Contains(eff, leak) {
			t.Errorf("effective configuration shows the provided value %q:\n%s", leak, eff)
		}
		for k, v := range settings {
			if strings.Contains(v, leak) {
				t.Errorf("flow setting %s = %q shows the provided value %q", k, v, leak)
			}
		}
	}

	// The members' comparison still tells two values apart.
	if v := settings["A->B.topics"]; !strings.HasPrefix(v, "${env:KM_TOPICS} (provided value sha256:") {
		t.Errorf("flow setting A->B.topics = %q, want the placeholder and a fingerprint of the value", v)
	}
	env["KM_TOPICS"] = "payments"
	p2, err := ParseProperties(strings.NewReader(head+"A.bootstrap.servers = ${env:KM_GOOD_BOOT}\nA->B.topics = ${env:KM_TOPICS}\n"), WithLookupEnv(lookup))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := settings["A->B.topics"], p2.FlowSettings("A->B")["A->B.topics"]; a == b {
		t.Errorf("two members whose providers answer differently publish the same A->B.topics %q", a)
	}

	_, err = ParseProperties(strings.NewReader(head+"A.bootstrap.servers = ${env:KM_BOOT}\n"), WithLookupEnv(lookup))
	var ce *ConfigError
	if !errors.As(err, &ce) || strings.Contains(err.Error(), "hush") || !strings.Contains(err.Error(), "${env:KM_BOOT}") {
		t.Errorf("a provided broker list without a port: %v; want the error to name ${env:KM_BOOT}, not the value", err)
	}
}

// TestProvidedPiecesHidden: a provided broker list written with spaces
// after its commas ("h1:9092, h2:9092") and a username a placeholder
// supplies inside sasl.jaas.config were shown resolved in the connection
// summary (A.client, which members publish) and in the credentials note of
// the -check dump: HideProvided looked only for the whole value, which
// neither shows as written.
func TestProvidedPiecesHidden(t *testing.T) {
	t.Parallel()
	env := map[string]string{"KM_B": "hushA:9092, hushB:9092", "KM_U": "usr-hush", "KM_P": "pw-hush"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	p, err := ParseProperties(strings.NewReader("config.providers = env\n"+
		"config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"+
		"clusters = A, B\nB.bootstrap.servers = b.example:9092\nA->B.enabled = true\n"+
		"A.bootstrap.servers = ${env:KM_B}\nA.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = PLAIN\n"+
		"A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"${env:KM_U}\" password=\"${env:KM_P}\";\n"),
		WithLookupEnv(lookup))
	if err != nil {
		t.Fatal(err)
	}
	eff := p.Effective()
	for _, want := range []string{`A.client = bootstrap=${env:KM_B},${env:KM_B} protocol=SASL_PLAINTEXT sasl=PLAIN user="${env:KM_U}"`,
		`# credentials of PLAIN (user "${env:KM_U}")`} {
		if !strings.Contains(eff, want) {
			t.Errorf("effective configuration lacks %q:\n%s", want, eff)
		}
	}
	if strings.Contains(eff, "hush") {
		t.Errorf("effective configuration shows a provided value:\n%s", eff)
	}
	for k, v := range p.FlowSettings("A->B") {
		if strings.Contains(v, "hush") {
			t.Errorf("flow setting %s = %q shows a provided value", k, v)
		}
	}
}
