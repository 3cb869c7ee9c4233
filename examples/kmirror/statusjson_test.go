package main

import (
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStatusJSONKeysSnakeCase: every field of every struct /status (and the
// Connect endpoints, which use the same documents) can show has an explicit
// snake_case JSON name, like the rest of the document (safe_to_switch,
// lag_unknown): checkpoint.PartitionStatus had none, so the groups'
// partitions showed Topic, SourceOffset, CheckpointExact next to
// safe_to_switch.
func TestStatusJSONKeysSnakeCase(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	marshaler := reflect.TypeFor[json.Marshaler]()
	textMarshaler := reflect.TypeFor[encoding.TextMarshaler]()
	seen := map[reflect.Type]bool{}
	var bad []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) ||
			t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				walk(f.Type, path)
				continue
			}
			if !snake.MatchString(name) {
				bad = append(bad, t.String()+"."+f.Name+" ("+path+"): json name "+strconv.Quote(name))
			}
			walk(f.Type, path+"."+name)
		}
	}
	walk(reflect.TypeFor[statusDoc](), "status")
	walk(reflect.TypeFor[restartDoc](), "restart")
	walk(reflect.TypeFor[infoDoc](), "info")
	walk(reflect.TypeFor[taskConfigDoc](), "task config")
	walk(reflect.TypeFor[readinessDoc](), "readyz")
	walk(reflect.TypeFor[livenessDoc](), "healthz")
	for _, b := range bad {
		t.Error(b)
	}
}
