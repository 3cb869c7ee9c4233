package mirror

import (
	"strconv"
	"testing"
	"testing/quick"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProvenanceOffsetElement: the offset element is read only as the last
// element, ParseProvenance leaves it out wherever it stands (an older
// kmirror may have appended its ID after it), and an ID starting with "#"
// is escaped so that it is never taken for one.
func TestProvenanceOffsetElement(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value  string
		ids    []string
		offset int64
		ok     bool
	}{
		{idA + ",#41", []string{idA}, 41, true},
		{idA + "," + idB + ",#0", []string{idA, idB}, 0, true},
		{"#7", nil, 7, true},
		{idA + ",#41," + idB, []string{idA, idB}, 0, false}, // an older kmirror appended after it
		{idA, []string{idA}, 0, false},
		{idA + ",#", []string{idA}, 0, false},
		{idA + ",#-1", []string{idA}, 0, false},
		{idA + ",#+1", []string{idA}, 0, false},
		{idA + ",#12x", []string{idA}, 0, false},
		{idA + `\,#41`, []string{idA + ",#41"}, 0, false}, // an escaped comma: one ID
		{`\#41`, []string{"#41"}, 0, false},               // an ID starting with '#'
		{idA + ",#99999999999999999999", []string{idA}, 0, false},
	} {
		if got := ParseProvenance([]byte(c.value)); !cmp.Equal(c.ids, got) {
			t.Errorf("ParseProvenance(%q) = %q, want %q", c.value, got, c.ids)
		}
		off, ok := ProvenanceOffset([]byte(c.value))
		if off != c.offset || ok != c.ok {
			t.Errorf("ProvenanceOffset(%q) = %d, %v; want %d, %v", c.value, off, ok, c.offset, c.ok)
		}
	}
	if got := string(FormatProvenance("#x", idA)); got != `\#x,`+idA {
		t.Errorf("FormatProvenance(#x, idA) = %q, want %q", got, `\#x,`+idA)
	}
	// Every list of IDs, whatever its bytes, survives a round trip with an
	// offset element appended.
	if err := quick.Check(func(ids []string, off uint32) bool {
		if len(ids) == 0 {
			return true
		}
		v := append(FormatProvenance(ids...), []byte(",#"+strconv.FormatUint(uint64(off), 10))...)
		got, ok := ProvenanceOffset(v)
		return cmp.Equal(ids, ParseProvenance(v)) && ok && got == int64(off)
	}, nil); err != nil {
		t.Error(err)
	}
}

// TestProvenanceStampAt: a first hop gets "<source>,#<offset>", a later hop
// replaces the previous hop's offset element, values come out of the batch
// arena (each capped) until it is full, and the check still sees the
// source and target IDs in a value with an offset element.
func TestProvenanceStampAt(t *testing.T) {
	t.Parallel()
	pv := mustProv(t, "SRC", "DST")
	recs := [][]kgo.RecordHeader{
		nil,
		{{Key: "h", Value: []byte("v")}},
		{{Key: ProvenanceHeader, Value: []byte("A,#12")}},
		{{Key: ProvenanceHeader, Value: []byte("A,B")}},
		{{Key: ProvenanceHeader, Value: []byte("")}},
	}
	vals := make([]byte, 0, 3*pv.provValueRoom())
	arena := make([]kgo.RecordHeader, 0, 8)
	var got [][]kgo.RecordHeader
	for i, h := range recs {
		v, idx := pv.check(h)
		if v.skipped() {
			t.Fatalf("%v skipped: %v", h, v)
		}
		var out []kgo.RecordHeader
		vals, arena, out = pv.stampAt(vals, arena, h, idx, int64(100+i))
		got = append(got, out)
	}
	want := [][]kgo.RecordHeader{
		{{Key: ProvenanceHeader, Value: []byte("SRC,#100")}},
		{{Key: "h", Value: []byte("v")}, {Key: ProvenanceHeader, Value: []byte("SRC,#101")}},
		{{Key: ProvenanceHeader, Value: []byte("A,SRC,#102")}},
		{{Key: ProvenanceHeader, Value: []byte("A,B,SRC,#103")}}, // arena full: allocated
		{{Key: ProvenanceHeader, Value: []byte("SRC,#104")}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stamped headers (-want +got):\n%s", diff)
	}
	// Capped: appending to one value never reaches the next one's bytes.
	_ = append(got[0][0].Value, 'X')
	if string(got[1][1].Value) != "SRC,#101" {
		t.Errorf("a value was overwritten through its neighbour: %q", got[1][1].Value)
	}
	// The check of the next hop (DST->X) skips nothing it should not and
	// sees its own cluster in a value with an offset element.
	back := mustProv(t, "DST", "SRC")
	if v, _ := back.check(got[2]); v != provTarget {
		t.Errorf("DST->SRC check of %q = %v, want skipped (SRC listed)", got[2][0].Value, v)
	}
	next := mustProv(t, "DST", "C")
	if v, _ := next.check(got[2]); v.skipped() {
		t.Errorf("DST->C check of %q = %v, want pass", got[2][0].Value, v)
	}
	if off, ok := ProvenanceOffset(got[3][0].Value); !ok || off != 103 {
		t.Errorf("ProvenanceOffset(%q) = %d, %v", got[3][0].Value, off, ok)
	}
}

func BenchmarkProvenanceStampAt(b *testing.B) {
	pv := mustProv(b, idA, idB)
	three := []kgo.RecordHeader{{Key: "trace-id", Value: []byte("0af7651916cd43dd8448eb211c80319c")},
		{Key: "content-type", Value: []byte("application/json")}, {Key: "tenant", Value: []byte("acme")}}
	const batch = 500
	for _, name := range []string{"arena", "offset"} {
		b.Run(name+"/first-hop/3-headers/batch-500", func(b *testing.B) {
			b.ReportAllocs()
			hs := make([][]kgo.RecordHeader, batch)
			for b.Loop() {
				for i := range hs {
					hs[i] = three
				}
				arena := make([]kgo.RecordHeader, 0, batch*(len(three)+1))
				var vals []byte
				if name == "offset" {
					vals = make([]byte, 0, batch*pv.provValueRoom())
				}
				for i, h := range hs {
					_, idx := pv.check(h)
					if name == "offset" {
						vals, arena, hs[i] = pv.stampAt(vals, arena, h, idx, int64(1_000_000+i))
					} else {
						arena, hs[i] = pv.stampArena(arena, h, idx)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
		})
	}
}
