package mm2props

import (
	"strings"
	"testing"
)

// TestFileProviderBOMNamed: a credentials file saved with a UTF-8 byte
// order mark (as Windows editors do) holds, for Kafka's FileConfigProvider
// (a UTF-8 reader that keeps the mark), the key "\ufeffpassword", so
// ${file:...:password} finds nothing in MM2 as in kmirror. kmirror said
// only "has no key password" of a file that visibly has it; it now names
// the mark. The password is not shown.
func TestFileProviderBOMNamed(t *testing.T) {
	text := "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n" +
		"config.providers = file\nconfig.providers.file.class = " + FileConfigProvider + "\n" +
		"A.ssl.truststore.password = ${file:/etc/kmirror/creds.properties:password}\n"
	_, err := tryResolve(text, Options{ReadFile: func(string) ([]byte, error) {
		return []byte("\xef\xbb\xbfpassword=S3CRET\nuser=alice\n"), nil
	}})
	if err == nil {
		t.Fatal("no error for a key the provider cannot find")
	}
	want := "${file:/etc/kmirror/creds.properties:password}: /etc/kmirror/creds.properties has no key password: it starts with a UTF-8 byte order mark (bytes EF BB BF), which Kafka's FileConfigProvider reads as part of its first key"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q\nwant it to contain %q", err, want)
	}
	if strings.Contains(err.Error(), "S3CRET") {
		t.Errorf("the error shows the secret: %q", err)
	}
	// A key that is not the first one is still simply missing.
	_, err = tryResolve(strings.Replace(text, ":password}", ":nokey}", 1), Options{ReadFile: func(string) ([]byte, error) {
		return []byte("\xef\xbb\xbfpassword=S3CRET\n"), nil
	}})
	if err == nil || strings.Contains(err.Error(), "byte order mark") || !strings.Contains(err.Error(), "has no key nokey") {
		t.Errorf("missing key beside a BOM: %v", err)
	}
}
