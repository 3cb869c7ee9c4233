package clientconf

import "strings"

// Masked replaces secret values in dumps and messages.
const Masked = "[hidden]"

// IsSecret reports whether the value of key (a client key such as
// "sasl.jaas.config", or a prefixed one such as
// "primary.consumer.ssl.key.password") must never be shown: JAAS
// configurations, passwords, private keys and keystores (every ssl.key*
// key), user-info credentials ("basic.auth.user.info", "user:password"),
// and any key mentioning a secret, token, credential or JAAS. The
// test is by name only, case-insensitive, and deliberately broad: a false
// positive hides a harmless value, a false negative leaks a secret.
func IsSecret(key string) bool {
	k := strings.ToLower(key)
	for _, s := range []string{"password", "secret", "token", "credential", "jaas", "ssl.key", "private", "user.info", "userinfo"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	// Kafka's Password-typed keys all match the substrings above; AWS
	// style names are covered here.
	return strings.Contains(k, "accesskey") || strings.Contains(k, "access.key") || strings.Contains(k, "apikey") || strings.Contains(k, "api.key")
}

// Mask returns value, or [Masked] when key names a secret ([IsSecret]).
// An empty secret value stays empty so that "set but empty" remains
// visible. This is what effective-configuration dumps print.
func Mask(key, value string) string {
	if value != "" && IsSecret(key) {
		return Masked
	}
	return value
}
