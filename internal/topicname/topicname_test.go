package topicname

import (
	"strings"
	"testing"
)

func TestWithAlias(t *testing.T) {
	const pre, suf = "mm2-kmirror-units.", ".internal"
	long := strings.Repeat("a", 240)
	for _, tc := range []struct {
		alias, want string
	}{
		{"us-east-1", "mm2-kmirror-units.us-east-1.internal"},
		{"a.b_c", "mm2-kmirror-units.a.b_c.internal"},
		{"eu+prod", "mm2-kmirror-units.eu_prod-" + "dd95ba61" + ".internal"},
		{"eu prod", "mm2-kmirror-units.eu_prod-" + "43f3bf89" + ".internal"},
		{"", "mm2-kmirror-units.-" + "e3b0c442" + ".internal"},
		{"größe", "mm2-kmirror-units.gr__e-" + "d353a267" + ".internal"},
		{long, pre + long[:249-len(pre)-len(suf)-9] + "-" + "9b304390" + suf},
	} {
		got := WithAlias(pre, tc.alias, suf)
		if got != tc.want {
			t.Errorf("WithAlias(%q) = %q, want %q", tc.alias, got, tc.want)
		}
		if len(got) > MaxLength || !Legal(got) {
			t.Errorf("WithAlias(%q) = %q: not a legal topic name (%d bytes)", tc.alias, got, len(got))
		}
	}
	// Two aliases that differ only in illegal bytes get two names.
	if a, b := WithAlias(pre, "eu+prod", suf), WithAlias(pre, "eu/prod", suf); a == b {
		t.Errorf("eu+prod and eu/prod share %q", a)
	}
}
