package mm2props

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Config provider classes kmirror implements (KIP-297, KIP-887).
const (
	EnvVarConfigProvider    = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
	FileConfigProvider      = "org.apache.kafka.common.config.provider.FileConfigProvider"
	DirectoryConfigProvider = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
)

// placeholderRE is Kafka's ConfigTransformer pattern:
// ${provider:[path:]key}.
var placeholderRE = regexp.MustCompile(`\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}`)

type provider struct {
	name, class string
	params      map[string]string
	allow       *regexp.Regexp // EnvVarConfigProvider allowlist.pattern
	allowed     []string       // FileConfigProvider/DirectoryConfigProvider allowed.paths
}

type providers struct {
	byName map[string]*provider
	broken map[string]bool // declared but misconfigured: reported once, its placeholders are not resolved
	opts   *Options
	files  map[string][]Entry // FileConfigProvider cache
}

// newProviders reads config.providers and config.providers.<name>.*. The
// error joins one *Error per misconfigured provider; the others are
// usable.
func newProviders(top map[string]Setting, o *Options) (*providers, []Warning, error) {
	p := &providers{byName: map[string]*provider{}, broken: map[string]bool{}, opts: o, files: map[string][]Entry{}}
	var warns []Warning
	var errs []error
	list, ok := top["config.providers"]
	if !ok {
		for k, s := range top {
			if strings.HasPrefix(k, "config.providers.") {
				warns = append(warns, Warning{Key: k, Line: s.Line, Message: "config.providers is not set, so this provider setting has no effect"})
			}
		}
		return p, warns, nil
	}
	for _, name := range parseList(list.Value) {
		if name == "" {
			errs = append(errs, &Error{Key: "config.providers", Value: list.Value, Line: list.Line, Reason: "contains an empty provider name"})
			continue
		}
		ck := "config.providers." + name + ".class"
		cs, ok := top[ck]
		if !ok {
			errs = append(errs, &Error{Key: ck, Line: list.Line, Reason: fmt.Sprintf("provider %q is listed in config.providers but has no class", name)})
			p.broken[name] = true
			continue
		}
		pr := &provider{name: name, class: strings.TrimSpace(cs.Value), params: map[string]string{}}
		prefix := "config.providers." + name + ".param."
		for k, s := range top {
			if strings.HasPrefix(k, prefix) {
				pr.params[strings.TrimPrefix(k, prefix)] = strings.TrimSpace(s.Value)
			}
		}
		bad := false
		switch pr.class {
		case EnvVarConfigProvider:
			if pat, ok := pr.params["allowlist.pattern"]; ok {
				re, err := regexp.Compile(`^(?:` + pat + `)$`)
				if err != nil {
					errs = append(errs, &Error{Key: prefix + "allowlist.pattern", Value: pat, Line: top[prefix+"allowlist.pattern"].Line, Reason: "not a valid regular expression"})
					bad = true
				}
				pr.allow = re
			}
		case FileConfigProvider, DirectoryConfigProvider:
			if ap, ok := pr.params["allowed.paths"]; ok {
				for _, a := range parseList(ap) {
					if !filepath.IsAbs(a) {
						errs = append(errs, &Error{Key: prefix + "allowed.paths", Value: ap, Line: top[prefix+"allowed.paths"].Line, Reason: fmt.Sprintf("%q is not an absolute path", a)})
						bad = true
						break
					}
					pr.allowed = append(pr.allowed, filepath.Clean(a))
				}
			}
		default:
			if full := providerClassNamed(pr.class); full != "" {
				errs = append(errs, &Error{Key: ck, Value: cs.Value, Line: cs.Line, Reason: fmt.Sprintf("no class has this name: write %s = %s (MM2 cannot load a class named %s either: it fails to start)", ck, full, pr.class)})
				bad = true
				break
			}
			warns = append(warns, Warning{Key: ck, Line: cs.Line, Message: fmt.Sprintf("config provider class %s is not supported (kmirror implements EnvVarConfigProvider, FileConfigProvider and DirectoryConfigProvider): placeholders ${%s:...} fail to load", pr.class, name)})
		}
		if bad {
			p.broken[name] = true
			continue
		}
		p.byName[name] = pr
	}
	return p, warns, errors.Join(errs...)
}

// Unresolved returns the first config-provider placeholder left in s's
// value, as written ("${vault:db:password}"): its provider is not
// declared in config.providers or is misconfigured. It is "" when none is
// left.
func Unresolved(s Setting) string { return placeholderRE.FindString(s.Value) }

// providerClassNamed returns the full name of the provider class kmirror
// implements whose simple name is class ("EnvVarConfigProvider", any
// case, or with another package), or "".
func providerClassNamed(class string) string {
	simple := class[strings.LastIndex(class, ".")+1:]
	for _, full := range []string{EnvVarConfigProvider, FileConfigProvider, DirectoryConfigProvider} {
		if strings.EqualFold(simple, full[strings.LastIndex(full, ".")+1:]) && class != full {
			return full
		}
	}
	return ""
}

// resolve replaces the placeholders of declared providers in s.Value, as
// Kafka's ConfigTransformer does (one pass, no recursion). Placeholders
// naming an undeclared provider are left as written, with a warning. A
// placeholder whose variable cannot be found is an error (MM2 would keep
// the literal text and fail later, e.g. authenticating with it).
func (p *providers) resolve(s Setting) (Setting, []Warning, error) {
	if !strings.Contains(s.Value, "${") {
		return s, nil, nil
	}
	var warns []Warning
	var out strings.Builder
	var provided []providedValue
	var fails []string
	last := 0
	for _, m := range placeholderRE.FindAllStringSubmatchIndex(s.Value, -1) {
		name := s.Value[m[2]:m[3]]
		path := ""
		if m[6] >= 0 {
			path = s.Value[m[6]:m[7]]
		}
		key := s.Value[m[8]:m[9]]
		pr, ok := p.byName[name]
		if p.broken[name] {
			continue // its configuration error is reported
		}
		if !ok {
			warns = append(warns, Warning{Key: s.Key, Line: s.Line, Message: fmt.Sprintf("placeholder ${%s:...} left as written: config provider %q is not declared in config.providers (MM2 does the same)", name, name)})
			continue
		}
		v, err := pr.lookup(p, path, key)
		if err != nil {
			fails = append(fails, err.Error()) // every one, not only the first: one run of -check names them all
			continue
		}
		out.WriteString(s.Value[last:m[0]])
		out.WriteString(v)
		provided = append(provided, providedValue{value: v, placeholder: s.Value[m[0]:m[1]]})
		last = m[1]
	}
	if len(fails) > 0 {
		return s, nil, &Error{Key: s.Key, Line: s.Line, Reason: strings.Join(fails, "; ")}
	}
	if last == 0 {
		return s, warns, nil
	}
	out.WriteString(s.Value[last:])
	if !s.FromProvider {
		s.Written = s.Value
	}
	s.Value = out.String()
	s.FromProvider = true
	s.provided = append(s.provided[:len(s.provided):len(s.provided)], provided...)
	return s, warns, nil
}

func (pr *provider) lookup(p *providers, path, key string) (string, error) {
	switch pr.class {
	case EnvVarConfigProvider:
		if path != "" {
			return "", fmt.Errorf("${%s:%s:%s}: EnvVarConfigProvider takes no path: write ${%s:%s}", pr.name, path, key, pr.name, key)
		}
		if pr.allow != nil && !pr.allow.MatchString(key) {
			return "", fmt.Errorf("${%s:%s}: environment variable %s is not matched by config.providers.%s.param.allowlist.pattern", pr.name, key, key, pr.name)
		}
		v, ok := p.opts.LookupEnv(key)
		if !ok {
			return "", fmt.Errorf("${%s:%s}: environment variable %s is not set", pr.name, key, key)
		}
		return v, nil
	case FileConfigProvider:
		if err := pr.checkPath(path); err != nil {
			return "", err
		}
		es, ok := p.files[path]
		if !ok {
			data, err := p.opts.ReadFile(path)
			if err != nil {
				return "", fmt.Errorf("${%s:%s:%s}: cannot read %s", pr.name, path, key, path)
			}
			// FileConfigProvider reads the file with a UTF-8 Reader.
			es, err = ParseString(string(data))
			if err != nil {
				return "", fmt.Errorf("${%s:%s:%s}: %s is not a valid properties file", pr.name, path, key, path)
			}
			p.files[path] = es
		}
		v, ok := Last(es, key)
		if !ok {
			if len(es) > 0 && es[0].Line == 1 && es[0].Key == "\ufeff"+key {
				// Kafka reads the file as UTF-8 without dropping a byte
				// order mark: the first key starts with U+FEFF.
				return "", fmt.Errorf("${%s:%s:%s}: %s has no key %s: it starts with a UTF-8 byte order mark (bytes EF BB BF), which Kafka's FileConfigProvider reads as part of its first key, so MM2 finds no %s either; save the file without the mark (as UTF-8 without BOM, or ASCII)",
					pr.name, path, key, path, key, key)
			}
			return "", fmt.Errorf("${%s:%s:%s}: %s has no key %s", pr.name, path, key, path, key)
		}
		return v, nil
	case DirectoryConfigProvider:
		if err := pr.checkPath(path); err != nil {
			return "", err
		}
		if strings.ContainsAny(key, `/\`) || key == ".." || key == "." {
			return "", fmt.Errorf("${%s:%s:%s}: the key must be a file name in the directory", pr.name, path, key)
		}
		data, err := p.opts.ReadFile(filepath.Join(path, key))
		if err != nil {
			return "", fmt.Errorf("${%s:%s:%s}: cannot read %s", pr.name, path, key, filepath.Join(path, key))
		}
		return string(data), nil
	}
	return "", fmt.Errorf("${%s:...}: config provider class %s is not supported (use EnvVarConfigProvider, FileConfigProvider or DirectoryConfigProvider)", pr.name, pr.class)
}

func (pr *provider) checkPath(path string) error {
	if path == "" {
		return fmt.Errorf("${%s:...}: %s needs a path: ${%s:<path>:<key>}", pr.name, pr.class[strings.LastIndex(pr.class, ".")+1:], pr.name)
	}
	if len(pr.allowed) == 0 {
		return nil
	}
	clean := filepath.Clean(path)
	for _, a := range pr.allowed {
		if clean == a || strings.HasPrefix(clean, a+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("${%s:%s:...}: path is not under config.providers.%s.param.allowed.paths", pr.name, path, pr.name)
}
