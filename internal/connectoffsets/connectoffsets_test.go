package connectoffsets

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGoldenSpecExample(t *testing.T) {
	// Spec section 2.6 example.
	if got, want := string(SourceKey("us-west", "orders", 0)), `["MirrorSourceConnector",{"cluster":"us-west","partition":0,"topic":"orders"}]`; got != want {
		t.Errorf("SourceKey =\n%s\nwant\n%s", got, want)
	}
	if got, want := string(SourceValue(123)), `{"offset":123}`; got != want {
		t.Errorf("SourceValue = %s, want %s", got, want)
	}
	tests := []struct{ got, want string }{
		{string(SourceKey("a", "t", 2147483647)), `["MirrorSourceConnector",{"cluster":"a","partition":2147483647,"topic":"t"}]`},
		{string(SourceValue(0)), `{"offset":0}`},
		{string(SourceValue(9223372036854775807)), `{"offset":9223372036854775807}`},
		{string(CheckpointKey("g1", "us-west.orders", 3)), `["MirrorCheckpointConnector",{"partition":3,"topic":"us-west.orders","group":"g1"}]`},
		{string(HeartbeatKey("us-west", "us-east")), `["MirrorHeartbeatConnector",{"sourceClusterAlias":"us-west","targetClusterAlias":"us-east"}]`},
		{string(ZeroValue()), `{"offset":0}`},
		{TopicName("us-west"), "mm2-offsets.us-west.internal"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got  %s\nwant %s", tt.got, tt.want)
		}
	}
	if DefaultPartitions != 25 {
		t.Errorf("DefaultPartitions = %d", DefaultPartitions)
	}
}

// TestJacksonEscaping pins the string escaping of Jackson's default
// generator (CharTypes output escape table: '"', '\\', \b \t \n \f \r short
// escapes, other C0 controls as \u00XX with upper-case hex, nothing else
// escaped) and shows where Go's encoding/json differs even with HTML
// escaping off.
func TestJacksonEscaping(t *testing.T) {
	tests := []struct {
		in, jackson string
		goDiffers   bool // encoding/json with SetEscapeHTML(false) writes something else
	}{
		{"plain-topic_1.x", `"plain-topic_1.x"`, false},
		{`a"b\c`, `"a\"b\\c"`, false},
		{"\b\t\n\f\r", `"\b\t\n\f\r"`, false},
		{"\x00\x01\x1f", `"\u0000\u0001\u001F"`, true}, // Go: lower-case hex
		{"\x0b\x1a", `"\u000B\u001A"`, true},
		{"\x7f", "\"\x7f\"", false},
		{"/<>&", `"/<>&"`, false},
		{"é日本", `"é日本"`, false},
		{"😀", `"😀"`, false},
		{"\u2028\u2029", "\"\u2028\u2029\"", true}, // Go always escapes these
		{"a\xffb", "\"a\uFFFDb\"", true},           // Go: escaped \ufffd
		{"\xe2\x82", "\"\uFFFD\uFFFD\"", true},     // one U+FFFD per invalid byte
	}
	for _, tt := range tests {
		got := string(appendJSONString(nil, tt.in))
		if got != tt.jackson {
			t.Errorf("appendJSONString(%q) = %s, want %s", tt.in, got, tt.jackson)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(tt.in); err != nil {
			t.Fatal(err)
		}
		goOut := strings.TrimSuffix(buf.String(), "\n")
		if (goOut != tt.jackson) != tt.goDiffers {
			t.Errorf("encoding/json writes %s for %q (Jackson %s): goDiffers should be %t", goOut, tt.in, tt.jackson, !tt.goDiffers)
		}
		// Whatever we write, a JSON parser reads back the (UTF-8-repaired)
		// input.
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != string([]rune(tt.in)) {
			t.Errorf("decode %s = %q, %v; want %q", got, back, err, string([]rune(tt.in)))
		}
	}
	// A realistic alias with a control character inside a full key.
	if got, want := string(SourceKey("a\tb", "é", 1)), "[\"MirrorSourceConnector\",{\"cluster\":\"a\\tb\",\"partition\":1,\"topic\":\"é\"}]"; got != want {
		t.Errorf("SourceKey = %s, want %s", got, want)
	}
}

func TestParseSourceKey(t *testing.T) {
	type parsed struct {
		Connector, Alias, Topic string
		Partition               int32
	}
	tests := []struct {
		name    string
		in      string
		want    parsed
		wantErr string
	}{
		{"canonical", `["MirrorSourceConnector",{"cluster":"us-west","partition":0,"topic":"orders"}]`, parsed{"MirrorSourceConnector", "us-west", "orders", 0}, ""},
		{"reordered with spaces", " [ \"MirrorSourceConnector\" , {\n\"topic\" : \"orders\", \"partition\": 7,\t\"cluster\":\"us-west\" } ] ", parsed{"MirrorSourceConnector", "us-west", "orders", 7}, ""},
		{"escapes", `["MirrorSourceConnector",{"cluster":"a\u0009b","partition":1,"topic":"\u00e9\/x"}]`, parsed{"MirrorSourceConnector", "a\tb", "é/x", 1}, ""},
		{"extra key ignored", `["x",{"cluster":"c","partition":2,"topic":"t","extra":[1]}]`, parsed{"x", "c", "t", 2}, ""},
		{"max partition", `["x",{"cluster":"c","partition":2147483647,"topic":"t"}]`, parsed{"x", "c", "t", 2147483647}, ""},
		{"not json", `[MirrorSourceConnector`, parsed{}, "malformed offset record: key"},
		{"empty", ``, parsed{}, "malformed"},
		{"three elements", `["a",{},1]`, parsed{}, "got 3 elements"},
		{"object not array", `{"cluster":"c"}`, parsed{}, "malformed"},
		{"connector not string", `[1,{"cluster":"c","partition":0,"topic":"t"}]`, parsed{}, "connector name"},
		{"map is null", `["x",null]`, parsed{}, "not a JSON object"},
		{"missing cluster", `["MirrorCheckpointConnector",{"partition":3,"topic":"t","group":"g"}]`, parsed{}, `missing "cluster"`},
		{"missing topic", `["x",{"cluster":"c","partition":0}]`, parsed{}, `missing "topic"`},
		{"missing partition", `["x",{"cluster":"c","topic":"t"}]`, parsed{}, `missing "partition"`},
		{"cluster not string", `["x",{"cluster":1,"partition":0,"topic":"t"}]`, parsed{}, `"cluster" is not a string`},
		{"partition string", `["x",{"cluster":"c","partition":"0","topic":"t"}]`, parsed{}, `"partition": "0" is not a number`},
		{"partition fraction", `["x",{"cluster":"c","partition":1.5,"topic":"t"}]`, parsed{}, "not an integer"},
		{"partition exponent", `["x",{"cluster":"c","partition":1e2,"topic":"t"}]`, parsed{}, "not an integer"},
		{"partition negative", `["x",{"cluster":"c","partition":-1,"topic":"t"}]`, parsed{}, "-1 is outside [0, 2147483647]"},
		{"partition too big", `["x",{"cluster":"c","partition":2147483648,"topic":"t"}]`, parsed{}, "outside"},
		{"trailing data", `["x",{"cluster":"c","partition":0,"topic":"t"}] x`, parsed{}, "trailing data"},
		{"two values", `["x",{"cluster":"c","partition":0,"topic":"t"}][]`, parsed{}, "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got parsed
			var err error
			got.Connector, got.Alias, got.Topic, got.Partition, err = ParseSourceKey([]byte(tt.in))
			if tt.wantErr != "" {
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want ErrMalformed containing %q", err, tt.wantErr)
				}
				if got != (parsed{}) {
					t.Errorf("got %+v with error, want zero values", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Long keys are clipped in messages.
	_, _, _, _, err := ParseSourceKey([]byte("[" + strings.Repeat(" ", 500) + "1"))
	if err == nil || len(err.Error()) > 400 {
		t.Errorf("long key error not clipped: %d bytes", len(err.Error()))
	}
}

func TestParseSourceValue(t *testing.T) {
	tests := []struct {
		in      []byte
		want    int64
		wantErr error
		msg     string
	}{
		{[]byte(`{"offset":123}`), 123, nil, ""},
		{[]byte(" {\"offset\" : 0 }\n"), 0, nil, ""},
		{[]byte(`{"offset":9223372036854775807,"x":1}`), 9223372036854775807, nil, ""},
		{nil, 0, ErrTombstone, ""},
		{[]byte("null"), 0, ErrTombstone, ""},
		{[]byte(" null "), 0, ErrTombstone, ""},
		{[]byte{}, 0, ErrMalformed, "not a JSON object"},
		{[]byte(`[]`), 0, ErrMalformed, "not a JSON object"},
		{[]byte(`{}`), 0, ErrMalformed, `missing "offset"`},
		{[]byte(`{"offset":-1}`), 0, ErrMalformed, "outside"},
		{[]byte(`{"offset":9223372036854775808}`), 0, ErrMalformed, "not an integer in range"},
		{[]byte(`{"offset":"5"}`), 0, ErrMalformed, "not a number"},
		{[]byte(`{"offset":null}`), 0, ErrMalformed, "not a number"},
		{[]byte(`{"offset":5}}`), 0, ErrMalformed, "not a JSON object"},
	}
	for _, tt := range tests {
		got, err := ParseSourceValue(tt.in)
		if tt.wantErr == nil && (err != nil || got != tt.want) {
			t.Errorf("ParseSourceValue(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
		if tt.wantErr != nil && (!errors.Is(err, tt.wantErr) || got != 0 || !strings.Contains(err.Error(), tt.msg)) {
			t.Errorf("ParseSourceValue(%q) = %d, %v; want %v containing %q", tt.in, got, err, tt.wantErr, tt.msg)
		}
	}
}

func FuzzSourceKeyRoundTrip(f *testing.F) {
	f.Add("us-west", "orders", int32(0))
	f.Add("a\"\\\x00\x1f\u2028", "é\xff", int32(2147483647))
	f.Fuzz(func(t *testing.T, alias, topic string, partition int32) {
		if partition < 0 {
			partition = -(partition + 1)
		}
		key := SourceKey(alias, topic, partition)
		if !json.Valid(key) || !bytes.HasPrefix(key, []byte(`["MirrorSourceConnector",{"cluster":"`)) {
			t.Fatalf("SourceKey produced invalid JSON %q", key)
		}
		c, a, tp, p, err := ParseSourceKey(key)
		if err != nil || c != SourceConnector || a != string([]rune(alias)) || tp != string([]rune(topic)) || p != partition {
			t.Fatalf("round trip (%q,%q,%d) -> (%q,%q,%q,%d,%v)", alias, topic, partition, c, a, tp, p, err)
		}
		// Canonical bytes are stable: re-encoding the parsed values
		// gives the same key.
		if again := SourceKey(a, tp, p); !bytes.Equal(again, key) {
			t.Fatalf("re-encode %q != %q", again, key)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`["MirrorSourceConnector",{"cluster":"us-west","partition":0,"topic":"orders"}]`))
	f.Add([]byte(`{"offset":123}`))
	f.Add([]byte(`[1e999,{"partition":-0}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if _, a, tp, p, err := ParseSourceKey(in); err == nil {
			if p < 0 {
				t.Fatalf("negative partition %d accepted", p)
			}
			if !json.Valid(SourceKey(a, tp, p)) {
				t.Fatal("re-encoded key is invalid JSON")
			}
		}
		if o, err := ParseSourceValue(in); err == nil {
			if o < 0 {
				t.Fatalf("negative offset %d accepted", o)
			}
			if got, err := ParseSourceValue(SourceValue(o)); err != nil || got != o {
				t.Fatalf("value round trip %d -> %d, %v", o, got, err)
			}
		}
	})
}

// TestMurmur2KafkaVectors uses the murmur2 vectors of Kafka's UtilsTest.
func TestMurmur2KafkaVectors(t *testing.T) {
	for in, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := int32(murmur2([]byte(in))); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", in, got, want)
		}
	}
	if got := Partition(SourceKey("us-west", "orders", 0), 0); got != 0 {
		t.Errorf("Partition(n=0) = %d", got)
	}
}

// kgoPartition is franz-go's Kafka-compatible keyed partitioning.
func kgoPartition(key []byte, n int) int32 {
	return int32(kgo.StickyKeyPartitioner(nil).ForTopic("t").Partition(&kgo.Record{Key: key}, n))
}

func TestPartitionMatchesKafka(t *testing.T) {
	for p := int32(0); p < 50; p++ {
		for _, key := range [][]byte{SourceKey("us-west", "orders", p), CheckpointKey("g", "us-west.orders", p), HeartbeatKey("a", "b")} {
			if got, want := Partition(key, DefaultPartitions), kgoPartition(key, DefaultPartitions); got != want {
				t.Errorf("Partition(%s) = %d, kgo says %d", key, got, want)
			}
		}
	}
}

func FuzzPartition(f *testing.F) {
	f.Add([]byte("abc"), int32(25))
	f.Add([]byte{}, int32(1))
	f.Fuzz(func(t *testing.T, key []byte, n int32) {
		got := Partition(key, n)
		if n < 1 {
			if got != 0 {
				t.Fatalf("Partition(n=%d) = %d", n, got)
			}
			return
		}
		if want := kgoPartition(key, int(n)); got != want || got < 0 || got >= n {
			t.Fatalf("Partition(%x, %d) = %d, kgo %d", key, n, got, want)
		}
	})
}
