package mirror

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"testing/quick"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// realID is a cluster ID as Apache Kafka reports it: 22 characters of
// URL-safe base64 (a UUID).
const (
	idA = "MkU3OEVBNTcwNTJENDM2Qk"
	idB = "4L6g3nShT-eMCtK--X86sw"
	idC = "q1Sh-9_ISia_zwGINzRvyQ"
)

func mustProv(t testing.TB, src, dst string) *provenance {
	t.Helper()
	p, err := newProvenance(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func provValue(h []kgo.RecordHeader) (string, int) {
	n, v := 0, ""
	for _, x := range h {
		if x.Key == ProvenanceHeader {
			n++
			v = string(x.Value)
		}
	}
	return v, n
}

func TestProvenanceFormatParseRoundTrip(t *testing.T) {
	t.Parallel()
	for _, ids := range [][]string{
		{idA},
		{idA, idB, idC},
		{"kfake"},
		{`a,b`, `c\d`, `\`, `,`, `x\,y`},
		{""},
	} {
		v := FormatProvenance(ids...)
		if got := ParseProvenance(v); !cmp.Equal(ids, got) {
			t.Errorf("ParseProvenance(FormatProvenance(%q) = %q) = %q", ids, v, got)
		}
	}
	if got := string(FormatProvenance(`a,b`, `c\d`)); got != `a\,b,c\\d` {
		t.Errorf("FormatProvenance = %q, want %q", got, `a\,b,c\\d`)
	}
	if got := string(FormatProvenance(idA, idB)); got != idA+","+idB {
		t.Errorf("Kafka cluster IDs need no escaping: %q", got)
	}
	// Property: any list of IDs survives a round trip.
	f := func(ids []string) bool {
		if len(ids) == 0 {
			return FormatProvenance() == nil
		}
		return cmp.Equal(ids, ParseProvenance(FormatProvenance(ids...)))
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
	// Lenient: malformed values still parse.
	if got := ParseProvenance([]byte(`a,b\`)); !cmp.Equal([]string{"a", `b\`}, got) {
		t.Errorf("trailing backslash: %q", got)
	}
}

func TestProvenanceCheckVerdicts(t *testing.T) {
	t.Parallel()
	ab := mustProv(t, idA, idB)
	h := func(kv ...string) []kgo.RecordHeader {
		var out []kgo.RecordHeader
		for i := 0; i < len(kv); i += 2 {
			out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		headers []kgo.RecordHeader
		want    provVerdict
	}{
		{"no headers", nil, provPass},
		{"other headers", h("trace", "x", "__mskmr", "opaque"), provPass},
		{"from C", h(ProvenanceHeader, idC), provPass},
		{"came from the target", h(ProvenanceHeader, idB), provTarget},
		{"target later in the list", h(ProvenanceHeader, idC+","+idB), provTarget},
		{"target first", h(ProvenanceHeader, idB+","+idC), provTarget},
		{"looped back to the source", h(ProvenanceHeader, idC+","+idA), provLooped},
		{"prefix of an ID is not the ID", h(ProvenanceHeader, idB[:10]+","+idB+"x"), provPass},
		{"escaped comma does not split", h(ProvenanceHeader, `x\,`+idB), provPass},
		{"Redpanda origin is the target", h(redpandaProvenanceHeader, idB), provRedpanda},
		{"Redpanda origin is the source", h(redpandaProvenanceHeader, idA), provRedpanda},
		{"Redpanda origin elsewhere", h(redpandaProvenanceHeader, idC), provPass},
		{"MSK header is not judged", h("__mskmr", idB), provPass},
		{"two kmirror headers, second names the target", h(ProvenanceHeader, idC, ProvenanceHeader, idB), provTarget},
	} {
		v, _ := ab.check(tc.headers)
		if v != tc.want {
			t.Errorf("%s: verdict %v, want %v", tc.name, v, tc.want)
		}
		if (v != provPass) != v.skipped() {
			t.Errorf("%s: skipped() inconsistent", tc.name)
		}
	}
	// IDs with the separator and the escape character compare exactly.
	odd := mustProv(t, `src,1`, `dst\2`)
	for value, want := range map[string]provVerdict{
		`dst\\2`:     provTarget,
		`x,src\,1`:   provLooped,
		`dst\2`:      provPass, // unescaped: a different ID
		`src,1`:      provPass, // two IDs "src" and "1"
		`dst\\2\`:    provPass,
		`a\,dst\\2`:  provPass, // one ID `a,dst\2`
		`a\\,dst\\2`: provTarget,
	} {
		if v, _ := odd.check([]kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte(value)}}); v != want {
			t.Errorf("IDs src,1/dst\\2, value %q: %v, want %v", value, v, want)
		}
	}
}

func TestNewProvenanceRefusesUnusableIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range [][2]string{{"", idB}, {idA, ""}, {idA, idA}} {
		if _, err := newProvenance(tc[0], tc[1]); err == nil || !strings.Contains(err.Error(), "provenance.header.enabled=false") {
			t.Errorf("newProvenance(%q, %q) = %v, want an error naming provenance.header.enabled=false", tc[0], tc[1], err)
		}
	}
}

// TestProvenanceStampNeverWritesSharedMemory: kgo slices header values out
// of the fetch buffer, so a value usually has spare capacity that belongs
// to the next bytes of the batch; appending in place would corrupt them.
func TestProvenanceStampNeverWritesSharedMemory(t *testing.T) {
	t.Parallel()
	bc := mustProv(t, idB, idC)
	buf := []byte(idA + "NEXT-RECORD-BYTES")
	h := []kgo.RecordHeader{{Key: "k", Value: []byte("v")}, {Key: ProvenanceHeader, Value: buf[:len(idA)]}}
	out, v := bc.apply(h)
	if v != provPass {
		t.Fatalf("verdict %v", v)
	}
	if string(buf) != idA+"NEXT-RECORD-BYTES" {
		t.Errorf("fetch buffer overwritten: %q", buf)
	}
	if got, n := provValue(out); got != idA+","+idB || n != 1 {
		t.Errorf("stamped value %q (%d headers), want %q once", got, n, idA+","+idB)
	}
	// First hop: the header slice is new, the input untouched.
	in := make([]kgo.RecordHeader, 1, 8)
	in[0] = kgo.RecordHeader{Key: "k", Value: []byte("v")}
	out, _ = bc.apply(in)
	if len(in) != 1 || cap(in) != 8 || len(out) != 2 || &out[0] == &in[0] {
		t.Errorf("first-hop stamp reused the input slice: in %v out %v", in, out)
	}
	if in[:2][1].Key != "" {
		t.Errorf("first-hop stamp wrote into the input's spare capacity: %+v", in[:2])
	}
	if diff := cmp.Diff([]kgo.RecordHeader{{Key: "k", Value: []byte("v")}, {Key: ProvenanceHeader, Value: []byte(idB)}}, out); diff != "" {
		t.Errorf("first-hop headers (-want +got):\n%s", diff)
	}
}

// TestProvenanceDisabledIsByteExact: a nil provenance (the flow's
// provenance.header.enabled=false) passes every record and adds nothing.
func TestProvenanceDisabledIsByteExact(t *testing.T) {
	t.Parallel()
	var off *provenance
	h := []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte(idB)}}
	out, v := off.apply(h)
	if v != provPass || len(out) != 1 || !bytes.Equal(out[0].Value, []byte(idB)) {
		t.Errorf("disabled: %v %+v", v, out)
	}
}

// hop copies records along one flow as the wired poll loop does: apply,
// skip or append.
func hop(pv *provenance, in [][]kgo.RecordHeader) (out [][]kgo.RecordHeader, skipped int) {
	for _, h := range in {
		h2, v := pv.apply(append([]kgo.RecordHeader(nil), h...))
		if v.skipped() {
			skipped++
			continue
		}
		out = append(out, h2)
	}
	return out, skipped
}

// TestCaseB28IdentityBothWaysStopsAtOneHop: identity A->B and B->A: every
// record crosses once; what comes back is skipped and counted (pure
// simulation of the data path, case B28).
func TestCaseB28IdentityBothWaysStopsAtOneHop(t *testing.T) {
	t.Parallel()
	ab, ba := mustProv(t, idA, idB), mustProv(t, idB, idA)
	onA := [][]kgo.RecordHeader{nil, {{Key: "trace", Value: []byte("1")}}, nil} // 3 local records on A
	onB := [][]kgo.RecordHeader{nil, nil}                                       // 2 local records on B
	toB, s1 := hop(ab, onA)
	toA, s2 := hop(ba, onB)
	onA, onB = append(onA, toA...), append(onB, toB...)
	// The next round reads everything again (worst case: replayed after a
	// restart): nothing new crosses, and exactly the copies come back.
	toB2, s3 := hop(ab, onA)
	toA2, s4 := hop(ba, onB)
	if s1 != 0 || s2 != 0 || len(toB) != 3 || len(toA) != 2 {
		t.Fatalf("first round: %d/%d copied, %d/%d skipped", len(toB), len(toA), s1, s2)
	}
	if len(toB2) != 3 || len(toA2) != 2 || s3 != 2 || s4 != 3 {
		t.Errorf("second round: copied %d to B and %d to A (want the 3 and 2 local records again, as a replay), skipped %d and %d (want 2 and 3: the records that came back)",
			len(toB2), len(toA2), s3, s4)
	}
	if v, _ := provValue(toB[1]); v != idA {
		t.Errorf("record on B carries %q, want %q", v, idA)
	}
}

// TestProvenanceThreeClusterRing: A->B->C->A with identity names: a record
// goes round once and stops before re-entering its origin.
func TestProvenanceThreeClusterRing(t *testing.T) {
	t.Parallel()
	ab, bc, ca := mustProv(t, idA, idB), mustProv(t, idB, idC), mustProv(t, idC, idA)
	rec := [][]kgo.RecordHeader{nil}
	onB, _ := hop(ab, rec)
	onC, _ := hop(bc, onB)
	back, skipped := hop(ca, onC)
	if len(onB) != 1 || len(onC) != 1 || len(back) != 0 || skipped != 1 {
		t.Fatalf("ring: B %d, C %d, back on A %d, skipped %d", len(onB), len(onC), len(back), skipped)
	}
	if v, _ := provValue(onC[0]); v != idA+","+idB {
		t.Errorf("on C: %q, want %q", v, idA+","+idB)
	}
	// A hop that ignores the header (MM2, or a kmirror flow with provenance
	// off) brings the record back to A; the next kmirror hop out of A stops
	// it as a loop instead of copying it to B a second time.
	if again, skipped := hop(ab, onC); len(again) != 0 || skipped != 1 {
		t.Errorf("looped record copied again: %d copied, %d skipped", len(again), skipped)
	}
}

// TestProvenanceRedpandaMigratorEstate: a record the Redpanda migrator
// copied from B (its header: origin B) is not written back to B by kmirror;
// one from elsewhere passes and keeps the migrator's header unchanged.
func TestProvenanceRedpandaMigratorEstate(t *testing.T) {
	t.Parallel()
	ab := mustProv(t, idA, idB)
	fromB := []kgo.RecordHeader{{Key: redpandaProvenanceHeader, Value: []byte(idB)}}
	if _, v := ab.apply(fromB); v != provRedpanda {
		t.Errorf("migrator record from B: %v, want skipped", v)
	}
	fromC := []kgo.RecordHeader{{Key: redpandaProvenanceHeader, Value: []byte(idC)}, {Key: "__mskmr", Value: []byte{1, 2, 3}}}
	out, v := ab.apply(fromC)
	if v != provPass {
		t.Fatalf("migrator record from C: %v", v)
	}
	want := append(append([]kgo.RecordHeader(nil), fromC...), kgo.RecordHeader{Key: ProvenanceHeader, Value: []byte(idA)})
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

// BenchmarkProvenance measures the per-record cost of the header on the
// hot path against provenance off, same run: go test -run '^$' -bench
// Provenance -benchmem ./mirror.
func BenchmarkProvenance(b *testing.B) {
	pv := mustProv(b, idA, idB)
	three := []kgo.RecordHeader{{Key: "trace-id", Value: []byte("0af7651916cd43dd8448eb211c80319c")},
		{Key: "content-type", Value: []byte("application/json")}, {Key: "tenant", Value: []byte("acme")}}
	for _, bc := range []struct {
		name string
		pv   *provenance
		h    []kgo.RecordHeader
	}{
		{"off/no-headers", nil, nil},
		{"off/3-headers", nil, three},
		{"on/first-hop/no-headers", pv, nil},
		{"on/first-hop/3-headers", pv, three},
		{"on/second-hop/3-headers", pv, append(append([]kgo.RecordHeader(nil), three...), kgo.RecordHeader{Key: ProvenanceHeader, Value: []byte(idC)})},
		{"on/skip/came-from-target", pv, append(append([]kgo.RecordHeader(nil), three...), kgo.RecordHeader{Key: ProvenanceHeader, Value: []byte(idC + "," + idB)})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			val := -1
			for _, x := range bc.h {
				if x.Key == ProvenanceHeader {
					val = len(x.Value)
				}
			}
			orig := append([]kgo.RecordHeader(nil), bc.h...)
			h := append([]kgo.RecordHeader(nil), bc.h...) // never bc.h: apply writes the header value of its slice
			b.ReportAllocs()
			var sink int
			for b.Loop() {
				if val >= 0 {
					// apply replaces the header's value in place; start each
					// record from the fetched value again (not timed as
					// allocation: a slice header copy).
					copy(h, orig)
				}
				out, v := bc.pv.apply(h)
				sink += len(out) + int(v)
			}
			_ = fmt.Sprint(sink)
		})
	}
}

// TestProvenanceStampArena: headers stamped out of one batch arena are
// capped per record (appending to one never touches the next), carry the
// source ID on a first hop, extend an existing header on a later hop, and
// a full arena falls back to a per-record allocation.
func TestProvenanceStampArena(t *testing.T) {
	t.Parallel()
	pv, err := newProvenance("SRC", "DST")
	if err != nil {
		t.Fatal(err)
	}
	arena := make([]kgo.RecordHeader, 0, 3) // room for two first-hop records: [] and [h]
	recs := [][]kgo.RecordHeader{nil, {{Key: "h", Value: []byte("v")}}, {{Key: ProvenanceHeader, Value: []byte("A")}}, nil}
	var got [][]kgo.RecordHeader
	for _, h := range recs {
		v, idx := pv.check(h)
		if v.skipped() {
			t.Fatalf("%v skipped: %v", h, v)
		}
		var out []kgo.RecordHeader
		arena, out = pv.stampArena(arena, h, idx)
		got = append(got, out)
	}
	got[0] = append(got[0], kgo.RecordHeader{Key: "x"}) // must not overwrite got[1]
	want := [][]kgo.RecordHeader{
		{{Key: ProvenanceHeader, Value: []byte("SRC")}, {Key: "x"}},
		{{Key: "h", Value: []byte("v")}, {Key: ProvenanceHeader, Value: []byte("SRC")}},
		{{Key: ProvenanceHeader, Value: []byte("A,SRC")}},
		{{Key: ProvenanceHeader, Value: []byte("SRC")}}, // arena full: allocated
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stamped headers (-want +got):\n%s", diff)
	}
	if len(arena) != 3 {
		t.Errorf("arena holds %d headers, want 3", len(arena))
	}
}
