package mm2props

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBrkNProviderShortClassName: config.providers.env.class =
// EnvVarConfigProvider (the simple name, as in the KIP's prose) was
// refused with "config provider class EnvVarConfigProvider is not
// supported (use EnvVarConfigProvider, FileConfigProvider or
// DirectoryConfigProvider)", which names the value as what to write. MM2
// cannot load a class by its simple name either; the error now gives the
// full class name to write, once, at the class line.
func TestBrkNProviderShortClassName(t *testing.T) {
	text := "clusters = A, B\n" + // 1
		"config.providers = env, file, dir\n" + // 2
		"config.providers.env.class = EnvVarConfigProvider\n" + // 3
		"config.providers.file.class = org.apache.kafka.connect.FileConfigProvider\n" + // 4
		"config.providers.dir.class = directoryconfigprovider\n" + // 5
		"A.sasl.jaas.config = ${env:SECRET}\n" // 6: env is misconfigured: not resolved, no second error
	_, err := tryResolve(text, Options{LookupEnv: func(string) (string, bool) { return "pw", true }})
	got := errorTexts(t, err)
	want := []string{
		`mm2props: config.providers.env.class="EnvVarConfigProvider" (line 3): no class has this name: write config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider (MM2 cannot load a class named EnvVarConfigProvider either: it fails to start)`,
		`mm2props: config.providers.file.class="org.apache.kafka.connect.FileConfigProvider" (line 4): no class has this name: write config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider (MM2 cannot load a class named org.apache.kafka.connect.FileConfigProvider either: it fails to start)`,
		`mm2props: config.providers.dir.class="directoryconfigprovider" (line 5): no class has this name: write config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider (MM2 cannot load a class named directoryconfigprovider either: it fails to start)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
}
