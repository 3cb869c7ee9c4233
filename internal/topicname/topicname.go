// Package topicname builds the names of kmirror's own topics that carry a
// cluster alias, such as the coordination topic
// "mm2-kmirror-units.<source>.internal" and the status topic
// "mm2-kmirror-status.<source>.internal", for every alias MM2 accepts.
//
// MM2 accepts any cluster alias that never appears in a topic name: the
// source alias of a heartbeats-only flow (a disabled reverse flow, say
// "eu+prod" or "backup.target-with-url-reserved-chars!@#") appears only in
// heartbeat records. kmirror names its coordination and status topics after
// the source alias of every flow, heartbeats-only ones included, so such an
// alias must still give a legal topic name.
package topicname

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxLength is the longest topic name Kafka accepts, in bytes.
const MaxLength = 249

// hashLen is the number of hex digits of the alias's SHA-256 that stand
// for an alias that cannot appear as it is.
const hashLen = 8

// Legal reports whether s contains only bytes legal in a Kafka topic name
// ([a-zA-Z0-9._-]).
func Legal(s string) bool {
	for i := 0; i < len(s); i++ {
		if !LegalByte(s[i]) {
			return false
		}
	}
	return true
}

// LegalByte reports whether b may appear in a Kafka topic name
// ([a-zA-Z0-9._-]).
func LegalByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-'
}

// WithAlias returns prefix + alias + suffix when that is a legal topic
// name (legal bytes only, at most [MaxLength] bytes), as every alias that
// can prefix a remote topic does: those names are unchanged. Otherwise the
// alias part is the alias with each character illegal in a topic name replaced by '_', cut short
// enough for the name to fit, then '-' and the first 8 hex digits of the
// alias's SHA-256, so that two aliases that differ only in illegal bytes
// still get two names: WithAlias("mm2-kmirror-units.", "eu+prod",
// ".internal") is "mm2-kmirror-units.eu_prod-<8 hex>.internal". prefix
// and suffix must be legal; the result is the same on every member.
func WithAlias(prefix, alias, suffix string) string {
	name := prefix + alias + suffix
	if Legal(alias) && alias != "" && len(name) <= MaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(alias))
	tag := "-" + hex.EncodeToString(sum[:])[:hashLen]
	room := max(MaxLength-len(prefix)-len(suffix)-len(tag), 0)
	b := make([]byte, 0, min(len(alias), room))
	for _, r := range alias {
		if len(b) == room {
			break
		}
		if r < 0x80 && LegalByte(byte(r)) {
			b = append(b, byte(r))
		} else {
			b = append(b, '_')
		}
	}
	return prefix + string(b) + tag + suffix
}
