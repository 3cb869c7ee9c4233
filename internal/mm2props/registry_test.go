package mm2props

import (
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/mm2keys"
)

// TestRegistryDrivesCheck checks that the allow-lists and suggestions of
// Resolve (what `kmirror -check` reports) come from the key registry: every
// mapped flow row is accepted at top level and per flow, every mapped
// cluster row per cluster, and a misspelling of each (its last letter
// dropped) is unknown and names the row's key as the suggestion (except
// admin.timeout.ms: a misspelt admin.* key reads as an admin client key).
func TestRegistryDrivesCheck(t *testing.T) {
	const base = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"
	for _, r := range mm2keys.Rows {
		if r.Effect != mm2keys.Mapped || (r.Scope != mm2keys.Flow && r.Scope != mm2keys.Cluster) || r.Key == "enabled" {
			continue
		}
		var keys []string
		if r.Scope == mm2keys.Flow {
			keys = []string{r.Key, "a->b." + r.Key}
		} else {
			keys = []string{"b." + r.Key}
		}
		v := r.Default
		if v == "" {
			v = "1"
		}
		for _, k := range keys {
			c := resolve(t, base+k+" = "+v+"\n", Options{})
			for _, w := range c.Warnings {
				if w.Key == k && strings.Contains(w.Message, "unknown") {
					t.Errorf("%s: a registry row, reported unknown: %s", k, w.Message)
				}
			}
			if strings.HasPrefix(r.Key, "admin.") {
				// admin.* misspelt reads as an admin client key, with
				// advice of its own.
				continue
			}
			typo := k[:len(k)-1]
			c = resolve(t, base+typo+" = "+v+"\n", Options{})
			want := "did you mean " + strings.TrimSuffix(k, r.Key)
			found := false
			for _, w := range c.Warnings {
				found = found || (w.Key == typo && strings.Contains(w.Message, want) && strings.Contains(w.Message, r.Key))
			}
			if !found {
				t.Errorf("%s: no suggestion of %s; warnings: %q", typo, k, warnings(c))
			}
		}
	}
}
