package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
)

// fingerprintOf returns the effective configuration of flow fc (with
// defaults) as key -> value, one key per FlowConfig field (its Go name;
// the policy as its type and separator), and the hash of it that members
// compare: members whose fingerprints differ run the flow differently.
// FlowConfig holds no secret (credentials live in the clusters' client
// options, which are not part of it); keys added with WithConfigKeys are
// masked by the caller.
func fingerprintOf(fc FlowConfig) (string, map[string]string) {
	kv := map[string]string{}
	v := reflect.ValueOf(fc)
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		fv := v.Field(i)
		switch x := fv.Interface().(type) {
		case time.Duration:
			kv[sf.Name] = x.String()
		case []string:
			kv[sf.Name] = strings.Join(x, ",")
		case fmt.Stringer:
			if fv.Kind() == reflect.Interface && fv.IsNil() {
				kv[sf.Name] = ""
				continue
			}
			kv[sf.Name] = x.String()
		default:
			if sf.Name == "Policy" {
				if fc.Policy == nil {
					kv[sf.Name] = ""
				} else {
					kv[sf.Name] = fmt.Sprintf("%T separator=%q", fc.Policy, fc.Policy.Separator())
				}
				continue
			}
			kv[sf.Name] = fmt.Sprint(x)
		}
	}
	return hashConfig(kv), kv
}

// hashConfig is the fingerprint of kv: the first 16 hex digits of the
// SHA-256 of its sorted key=value lines.
func hashConfig(kv map[string]string) string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, kv[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

var (
	versionOnce sync.Once
	version     string
)

// moduleVersion is kmirror's module version in this binary ("(devel)" in
// a build from a checkout, "" when the binary has no build information).
func moduleVersion() string {
	versionOnce.Do(func() {
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			return
		}
		if bi.Main.Path == "github.com/kmirror/kmirror" {
			version = bi.Main.Version
			return
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/kmirror/kmirror" {
				version = d.Version
				return
			}
		}
	})
	return version
}
