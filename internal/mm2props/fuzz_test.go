package mm2props

import (
	"errors"
	"testing"
)

// FuzzParseResolve: no input makes the reader or the resolver panic;
// errors are *SyntaxError (Parse) and *Error (Resolve) only, and Parse
// returns an entry for every logical line it did not reject.
func FuzzParseResolve(f *testing.F) {
	for _, s := range []string{
		"clusters=A,B\nA->B.enabled=true\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\n",
		"clusters : A , B\r\nA->B.topics = x\\\r\n  y\r\n! c\r\n# d\\\nA\\u002eb=\\u00e9\n",
		"\xef\xbb\xbfclusters=A\n=v\n\\\n\\u12",
		"clusters=A,B\nconfig.providers=env,file,dir\nconfig.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider\n" +
			"config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider\n" +
			"config.providers.dir.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider\n" +
			"A.sasl.jaas.config=${env:X} ${file:/p:k} ${dir:/d:f} ${none:x}\nA->B.topics.blacklist=x\nA -> B.enabled=true\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		entries, err := ParseString(in)
		for _, e := range flat(err) {
			var se *SyntaxError
			if !errors.As(e, &se) || se.Line < 1 {
				t.Fatalf("Parse error %T %v is not a *SyntaxError with a line", e, e)
			}
		}
		_, err = Resolve(entries, Options{
			LookupEnv: func(k string) (string, bool) { return "v", k != "" },
			ReadFile:  func(string) ([]byte, error) { return []byte("k=v\n"), nil },
		})
		for _, e := range flat(err) {
			var me *Error
			if !errors.As(e, &me) {
				t.Fatalf("Resolve error %T %v is not an *Error", e, e)
			}
		}
	})
}

func flat(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flat(e)...)
		}
		return out
	}
	return []error{err}
}
