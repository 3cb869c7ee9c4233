package mirror

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/heartbeat"
	"github.com/kmirror/kmirror/internal/mm2keys"
)

// TestRegistryRowsHaveReaders checks that the properties loader reads every
// mapped row of the key registry: by its handler, or by its type into a
// FlowConfig field of the matching Go type; and that every handler belongs
// to a mapped row.
func TestRegistryRowsHaveReaders(t *testing.T) {
	ft := reflect.TypeOf(FlowConfig{})
	want := map[mm2keys.Type][]reflect.Type{
		mm2keys.Bool:    {reflect.TypeOf(false)},
		mm2keys.Enum:    {reflect.TypeOf(false)},
		mm2keys.Seconds: {reflect.TypeOf(time.Duration(0))},
		mm2keys.Millis:  {reflect.TypeOf(time.Duration(0))},
		mm2keys.RF:      {reflect.TypeOf(int16(0))},
		mm2keys.List:    {reflect.TypeOf([]string(nil))},
		mm2keys.Bytes:   {reflect.TypeOf(int32(0)), reflect.TypeOf(0)},
		mm2keys.Count:   {reflect.TypeOf(0)},
	}
	rows := map[string]bool{}
	for _, r := range mm2keys.Rows {
		if r.Effect != mm2keys.Mapped || r.Scope == mm2keys.Top {
			continue
		}
		rows[r.Key] = true
		_, handled := flowHandlers[r.Key]
		if r.Field == "" {
			if !handled {
				t.Errorf("%s: no Field and no handler in flowHandlers: the loader would not read it", r.Key)
			}
			continue
		}
		f, ok := ft.FieldByName(r.Field)
		if !ok {
			t.Errorf("%s: FlowConfig has no field %s", r.Key, r.Field)
			continue
		}
		if !handled {
			ok := false
			for _, w := range want[r.Type] {
				ok = ok || f.Type == w
			}
			if !ok {
				t.Errorf("%s: field %s is a %s, which the loader cannot read as %s", r.Key, r.Field, f.Type, r.Type)
			}
		}
	}
	for k := range flowHandlers {
		if !rows[k] {
			t.Errorf("flowHandlers has %s, which is not a mapped row of the registry", k)
		}
	}
}

// TestRegistryDefaultsAreEngineDefaults checks that the default the
// effective configuration shows for a row is the value the engine uses for
// a zero field (FlowConfig.withDefaults): one default per key.
func TestRegistryDefaultsAreEngineDefaults(t *testing.T) {
	d := reflect.ValueOf(FlowConfig{}.withDefaults())
	checked := 0
	for _, r := range mm2keys.Rows {
		if r.Effect != mm2keys.Mapped || r.Field == "" || r.Default == "" || r.Invert || r.Type == mm2keys.Bool || r.Type == mm2keys.Enum {
			continue
		}
		v := d.FieldByName(r.Field)
		var got string
		switch x := v.Interface().(type) {
		case time.Duration:
			if r.Type == mm2keys.Seconds {
				got = strconv.FormatInt(int64(x/time.Second), 10)
			} else {
				got = strconv.FormatInt(x.Milliseconds(), 10)
			}
		case int16, int32, int, int64:
			got = strconv.FormatInt(v.Int(), 10)
		case []string:
			got = strings.Join(x, ", ")
		default:
			t.Errorf("%s: field %s of type %T not compared", r.Key, r.Field, x)
			continue
		}
		if got != r.Default {
			t.Errorf("%s: the registry's default is %s, FlowConfig.withDefaults gives %s", r.Key, r.Default, got)
		}
		checked++
	}
	if checked < 15 {
		t.Errorf("compared %d defaults, want every row with a field and a default", checked)
	}
	// offset.lag.max is read by its handler into OffsetLagMax.
	if row, _ := mm2keys.Lookup(mm2keys.Flow, "offset.lag.max"); row.Default != strconv.FormatInt(FlowConfig{}.withDefaults().OffsetLagMax, 10) {
		t.Errorf("offset.lag.max: registry default %s, engine %d", row.Default, FlowConfig{}.withDefaults().OffsetLagMax)
	}
}

// TestEmitterDefaultsAreRegistry checks that the checkpoint and heartbeat
// emitters default to the same values as the flow settings they come from.
func TestEmitterDefaultsAreRegistry(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"checkpoint.DefaultEmitInterval", checkpoint.DefaultEmitInterval, DefaultEmitCheckpointsInterval},
		{"checkpoint.DefaultSyncInterval", checkpoint.DefaultSyncInterval, DefaultSyncGroupOffsetsInterval},
		{"checkpoint.DefaultRefreshGroupsInterval", checkpoint.DefaultRefreshGroupsInterval, DefaultRefreshGroupsInterval},
		{"checkpoint.DefaultAdminTimeout", checkpoint.DefaultAdminTimeout, DefaultAdminTimeout},
		{"heartbeat.DefaultInterval", heartbeat.DefaultInterval, DefaultEmitHeartbeatsInterval},
		{"heartbeat.DefaultAdminTimeout", heartbeat.DefaultAdminTimeout, DefaultAdminTimeout},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, the flow setting's default is %v", c.name, c.got, c.want)
		}
	}
}

// propsHead is a two-cluster file with the flow A->B on lines 1-4.
const propsHead = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"

// MM2 splits a list at commas and joins the pieces with "|":
// orders-[0-9]{1,3} becomes the Java regex orders-[0-9]{1|3}, which Java
// refuses (the connector fails). kmirror compiled the pieces alone (Go
// reads "orders-[0-9]{1" and "3}" with literal braces) and replicated no
// orders-NNN topic, without a word. It is now an error on the key, with
// its line, the value as written and a rewrite.
func TestPropsRegexWithCommaInRepetitionIsAnError(t *testing.T) {
	for _, v := range []string{"orders-[0-9]{1,3}", "orders-[0-9]{1, 3}"} {
		_, err := ParseProperties(strings.NewReader(propsHead + "A->B.topics = " + v + "\n"))
		want := &ConfigError{Key: "A->B.topics", Value: v, Reason: "line 5: MM2 splits this list at its commas and joins the pieces with |, so the regex is orders-[0-9]{1|3}, " +
			"which Java refuses (PatternSyntaxException: the connector fails): a regex in this list cannot contain a comma; " +
			"write orders-[0-9][0-9]?[0-9]? (the same repetition without a comma), or orders-[0-9]+"}
		var ce *ConfigError
		if !errors.As(err, &ce) || *ce != *want {
			t.Errorf("A->B.topics = %s: error\n%v\nwant\n%v", v, err, want)
		}
	}
	// The same in an exclude list names that key and its line.
	_, err := ParseProperties(strings.NewReader(propsHead + "A->B.groups = .*\nA->B.groups.exclude = tmp-[a-z]{2,}\n"))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "A->B.groups.exclude" || ce.Value != "tmp-[a-z]{2,}" || !strings.HasPrefix(ce.Reason, "line 6: ") ||
		!strings.HasSuffix(ce.Reason, "write tmp-[a-z][a-z]+ (the same repetition without a comma), or tmp-[a-z]+") {
		t.Errorf("groups.exclude = tmp-[a-z]{2,}: error %v", err)
	}
}

// MM2 joins the pieces of "(orders, payments)\..*" into the valid Java
// regex (orders|payments)..* (Properties drops the backslash) and
// replicates orders.eu and payments.eu. kmirror compiled each piece alone
// and refused the file, naming "(orders", which is not what it says.
func TestPropsRegexGroupAcrossCommaMatchesAsMM2(t *testing.T) {
	p, err := ParseProperties(strings.NewReader(propsHead + "A->B.topics = (orders, payments)\\..*\n"))
	if err != nil {
		t.Fatalf("ParseProperties: %v\nwant it accepted as MM2 does: (orders|payments)..*", err)
	}
	f := p.Flows()[0]
	if want := []string{"(orders", "payments)..*"}; !reflect.DeepEqual(f.Topics, want) {
		t.Errorf("Topics = %q, want %q", f.Topics, want)
	}
	flt, ces := newFilter("topics", f.Topics, "topics.exclude", DefaultTopicsExclude)
	if len(ces) > 0 {
		t.Fatal(ces[0])
	}
	for name, want := range map[string]bool{"orders.eu": true, "payments.eu": true, "billing.eu": false, "orders": false} {
		if got := flt.Match(name); got != want {
			t.Errorf("topic %s replicated = %v, want %v", name, got, want)
		}
	}
}

// A top-level source.cluster.alias (practitioners' F4) with the identity
// policy (F3, F6, F7, F9) runs in MM2. kmirror's loader warned that it
// ignores the key and then fed it to the IdentityReplicationPolicy anyway,
// so the file was refused for a key it does not contain
// ("source->target.source.cluster.alias"), without a line and with Go API
// advice. The key is now ignored as the warning says: each flow's
// identity policy reads topics as coming from the flow's source alias.
func TestPropsIdentityPolicyIgnoresSourceClusterAlias(t *testing.T) {
	const warn = "line 5: source.cluster.alias: MM2 copies source.cluster.alias=site-a into the connectors of every flow it applies to, " +
		"overriding the source alias used in topic names (remote topics, offset-syncs and checkpoints topics) while the herders keep the aliases of clusters; " +
		"kmirror names topics after the aliases in clusters and ignores this key: rename the cluster alias instead"
	for _, key := range []string{"source.cluster.alias", "source->target.source.cluster.alias"} {
		file := "clusters = source, target\nsource.bootstrap.servers = a:9092\ntarget.bootstrap.servers = b:9092\nsource->target.enabled = true\n" +
			key + " = site-a\nreplication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
		p, err := ParseProperties(strings.NewReader(file))
		if err != nil {
			t.Fatalf("%s: ParseProperties: %v", key, err)
		}
		for _, f := range p.Flows() {
			sa, ok := f.Policy.(interface{ SourceAlias() string })
			if !ok || sa.SourceAlias() != f.Source {
				t.Errorf("%s: flow %s: policy %T, want an identity policy with source alias %q", key, f.Name(), f.Policy, f.Source)
			}
		}
		var got []string
		for _, w := range p.Warnings() {
			if w.Line == 5 {
				got = append(got, w.String())
			}
		}
		if want := strings.Replace(warn, "source.cluster.alias:", key+":", 1); len(got) != 1 || got[0] != want {
			t.Errorf("%s: warnings of line 5: %q\nwant %q", key, got, want)
		}
	}
}

// sync.group.offsets.enabled=true on a flow without a checkpoint task
// (emit.checkpoints.enabled=false, a negative emit.checkpoints.interval.seconds
// or emit.offset-syncs.enabled=false) syncs no group offset, in MM2 as in
// kmirror; the key was accepted without a word. The warning names both keys.
func TestPropsSyncGroupOffsetsWithoutCheckpointsWarns(t *testing.T) {
	for _, tc := range []struct {
		lines string
		want  Warning
	}{
		{"A->B.emit.checkpoints.enabled = false\nA->B.sync.group.offsets.enabled = true\n", Warning{Key: "A->B.sync.group.offsets.enabled", Line: 6,
			Message: "no effect: no group offset is synced, because A->B.emit.checkpoints.enabled=false (line 5) stops the checkpoint task, which syncs them (MM2 runs none either): " +
				"remove A->B.sync.group.offsets.enabled, or remove A->B.emit.checkpoints.enabled to emit checkpoints"}},
		{"sync.group.offsets.enabled = true\nemit.checkpoints.interval.seconds = -1\n", Warning{Key: "sync.group.offsets.enabled", Line: 5,
			Message: "no effect: no group offset is synced, because emit.checkpoints.interval.seconds=-1 (line 6) stops the checkpoint task, which syncs them (MM2 runs none either): " +
				"remove sync.group.offsets.enabled, or remove emit.checkpoints.interval.seconds to emit checkpoints"}},
		{"A->B.sync.group.offsets.enabled = true\nA->B.emit.offset-syncs.enabled = false\n", Warning{Key: "A->B.sync.group.offsets.enabled", Line: 5,
			Message: "no effect: no group offset is synced, because A->B.emit.offset-syncs.enabled=false (line 6) stops the checkpoint task, which syncs them (MM2 runs none either): " +
				"remove A->B.sync.group.offsets.enabled, or remove A->B.emit.offset-syncs.enabled to emit checkpoints"}},
	} {
		p, err := ParseProperties(strings.NewReader(propsHead + tc.lines))
		if err != nil {
			t.Fatal(err)
		}
		var got []Warning
		for _, w := range p.Warnings() {
			if strings.Contains(w.Key, "sync.group.offsets") {
				got = append(got, w)
			}
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: warnings %v\nwant [%v]", tc.lines, got, tc.want)
		}
	}
	// With checkpoints on, no warning.
	p, err := ParseProperties(strings.NewReader(propsHead + "A->B.sync.group.offsets.enabled = true\n"))
	if err != nil || len(p.Warnings()) != 0 {
		t.Errorf("checkpoints on: err %v, warnings %v", err, p.Warnings())
	}
}
