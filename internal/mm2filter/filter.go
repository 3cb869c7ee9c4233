// Package mm2filter compiles MM2's include/exclude regex lists (topics and
// topics.exclude, groups and groups.exclude, config.properties.exclude):
// the behaviour of MM2's DefaultTopicFilter, DefaultGroupFilter and
// DefaultConfigPropertyFilter, with Go RE2 regexes.
package mm2filter

import (
	"fmt"
	"regexp"
	"strings"
)

// Filter is a compiled include/exclude pair: a name passes when it fully
// matches an include regex and no exclude regex. The zero Filter matches
// nothing.
type Filter struct {
	include, exclude *regexp.Regexp
}

// RegexError is a regex Go cannot compile, with advice on what to write
// instead.
type RegexError struct {
	Key    string // the configuration key that holds the regex
	Regex  string
	Reason string
}

func (e *RegexError) Error() string { return fmt.Sprintf("%s=%q: %s", e.Key, e.Regex, e.Reason) }

// New compiles include and exclude regex lists (Go RE2 syntax, each
// anchored to match the whole name, as Java's Matcher.matches). An empty
// include list matches nothing; an empty exclude list excludes nothing.
// The error is a *RegexError naming the key and the regex and, for
// Java-only syntax (lookaround, backreferences, possessive quantifiers),
// saying what to write instead.
func New(includeKey string, include []string, excludeKey string, exclude []string) (Filter, error) {
	var f Filter
	var err error
	if f.include, err = compileList(includeKey, include); err != nil {
		return Filter{}, err
	}
	if f.exclude, err = compileList(excludeKey, exclude); err != nil {
		return Filter{}, err
	}
	return f, nil
}

// Match reports whether name passes the filter.
func (f Filter) Match(name string) bool {
	if f.include == nil || !f.include.MatchString(name) {
		return false
	}
	return f.exclude == nil || !f.exclude.MatchString(name)
}

func compileList(key string, list []string) (*regexp.Regexp, error) {
	var parts []string
	for _, re := range list {
		if _, err := regexp.Compile(re); err != nil {
			return nil, &RegexError{Key: key, Regex: re, Reason: regexAdvice(re, err)}
		}
		parts = append(parts, "(?:"+re+")")
	}
	if len(parts) == 0 {
		return nil, nil
	}
	return regexp.MustCompile("^(?:" + strings.Join(parts, "|") + ")$"), nil
}

// regexAdvice explains a regex Go cannot compile, with a rewrite hint for
// the Java-only constructs MM2 users write.
func regexAdvice(re string, err error) string {
	switch {
	case strings.Contains(re, "(?!"):
		return fmt.Sprintf("Go's RE2 has no negative lookahead (?!...): list the names to skip in the matching *.exclude key instead (%v)", err)
	case strings.Contains(re, "(?="), strings.Contains(re, "(?<=") || strings.Contains(re, "(?<!"):
		return fmt.Sprintf("Go's RE2 has no lookaround: match the whole name with the include key and put what must not match in the *.exclude key (%v)", err)
	case backrefRE.MatchString(re):
		return fmt.Sprintf("Go's RE2 has no backreferences (\\1): list the alternatives explicitly (%v)", err)
	case strings.Contains(re, "*+") || strings.Contains(re, "++") || strings.Contains(re, "?+"):
		return fmt.Sprintf("Go's RE2 has no possessive quantifiers: drop the trailing + (RE2 never backtracks) (%v)", err)
	case strings.HasPrefix(re, "*") || strings.HasPrefix(re, "?"):
		// A glob, as in a shell (a new user's try, stop 38).
		glob := strings.NewReplacer(".", `\.`, "*", ".*", "?", ".").Replace(re)
		return fmt.Sprintf("a pattern is a regular expression, not a glob: for names matching %s write %s (%v)", re, glob, err)
	}
	return fmt.Sprintf("not a valid regular expression: %v", err)
}

var backrefRE = regexp.MustCompile(`\\[1-9]`)
