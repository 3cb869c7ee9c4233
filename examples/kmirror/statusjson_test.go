package main

import (
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/mirror"
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

// TestMemberLagNullWhenUnknown (a new user's finding): against clusters
// that do not answer, /status showed the flow's lag null with lag_unknown
// true, but its member's "lag": 0 beside "lag_unknown": true, where the
// README says an unknown lag is never 0. A member's lag is null when
// unknown, its number otherwise.
func TestMemberLagNullWhenUnknown(t *testing.T) {
	cf := mirror.ClusterFlowStatus{Name: "a->b", Lag: 0, LagUnknown: true, Members: []mirror.ClusterMember{
		{MemberID: "m1", WorkerID: "w1", Lag: 0, LagUnknown: true},
		{MemberID: "m2", WorkerID: "w2", Lag: 42},
	}}
	b, err := json.Marshal(toFlowDoc("a->b", cf, mirror.FlowStatus{}, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Lag     *int64 `json:"lag"`
		Members []struct {
			MemberID   string `json:"member_id"`
			Lag        *int64 `json:"lag"`
			LagUnknown bool   `json:"lag_unknown"`
		} `json:"members"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Lag != nil || len(doc.Members) != 2 || doc.Members[0].Lag != nil || !doc.Members[0].LagUnknown ||
		doc.Members[1].Lag == nil || *doc.Members[1].Lag != 42 || doc.Members[1].LagUnknown {
		t.Errorf("flow document %s: want the flow's and m1's lag null (unknown), m2's 42", b)
	}
}
