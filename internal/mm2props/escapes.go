package mm2props

import (
	"fmt"
	"regexp/syntax"
	"strings"

	"github.com/kmirror/kmirror/internal/mm2keys"
)

// regexListKeys are the connector keys whose values are regex lists of
// topic or group names. config.properties.exclude is left out: its names
// are dotted words, which "message.timestamp..*" (written with single
// backslashes, as MM2's documented default is often copied) selects as
// message\.timestamp\..* does.
var regexListKeys = func() []string {
	var ks []string
	for _, row := range mm2keys.Select(mm2keys.Flow, mm2keys.Mapped) {
		if row.Type == mm2keys.List && !strings.HasPrefix(row.Key, "config.properties.") {
			ks = append(ks, row.Key)
		}
	}
	for old, name := range DeprecatedAliases {
		if !strings.HasPrefix(name, "config.properties.") {
			ks = append(ks, old)
		}
	}
	return ks
}()

// escapeWarnings warns where the properties reader's escapes changed a
// value whose author most likely meant its backslashes literally, as
// MM2's reader changes it too: a regex list ("orders\.eu" reads as
// orders.eu, whose . matches any character) and a file path
// ("C:\kafka\ts.pem" reads as C:kafka<tab>s.pem). escaped maps a key to
// the value with those backslashes kept ([Entry].Escaped).
func (r *resolver) escapeWarnings(escaped map[string]string) {
	for _, k := range sortedKeys(escaped) {
		kept := escaped[k]
		s, ok := r.all[k]
		if kept == "" || !ok || s.FromProvider {
			continue
		}
		write := strings.ReplaceAll(kept, `\`, `\\`)
		switch {
		case isRegexListKey(k) && !sameRegex(s.Value, kept):
			r.warn(k, s.Line, fmt.Sprintf("the properties reader drops a backslash before a character other than t, n, r, f and u (MM2's too), so the regex list is %s, not %s: write %s = %s",
				s.Value, kept, k, write))
		case strings.HasSuffix(k, ".location") && kept != s.Value:
			r.warn(k, s.Line, fmt.Sprintf("MM2 and kmirror read this path as %q (a backslash starts an escape in a properties file): write %s = %s, or / between directories",
				s.Value, k, write))
		}
	}
}

func isRegexListKey(k string) bool {
	for _, name := range regexListKeys {
		if k == name || strings.HasSuffix(k, "."+name) {
			return true
		}
	}
	return false
}

// sameRegex reports whether a and b are regexes Go reads alike.
func sameRegex(a, b string) bool {
	ra, errA := syntax.Parse(a, syntax.Perl)
	rb, errB := syntax.Parse(b, syntax.Perl)
	return errA == nil && errB == nil && ra.Simplify().String() == rb.Simplify().String()
}
