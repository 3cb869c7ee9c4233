package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// digest hashes records [from, to) of o, every byte of key, value and
// headers, in order.
func digest(o *Orders, from, to int64) [32]byte {
	h := sha256.New()
	for i := from; i < to; i++ {
		k, v, hs := o.Record(i)
		fmt.Fprintf(h, "%d|%s|%s|", i, k, v)
		for _, x := range hs {
			fmt.Fprintf(h, "%s=%s;", x.Key, x.Value)
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func TestOrdersDeterministic(t *testing.T) {
	a, b := NewOrders(7), NewOrders(7)
	if digest(a, 0, 500) != digest(b, 0, 500) {
		t.Fatal("two generators with seed 7 gave different records")
	}
	// Record i does not depend on the records generated before it.
	k1, v1, h1 := a.Record(12345)
	for i := int64(0); i < 100; i++ {
		a.Record(i)
	}
	k2, v2, h2 := a.Record(12345)
	if !bytes.Equal(k1, k2) || !bytes.Equal(v1, v2) || !slices.EqualFunc(h1, h2, func(x, y kgo.RecordHeader) bool {
		return x.Key == y.Key && bytes.Equal(x.Value, y.Value)
	}) {
		t.Fatalf("record 12345 changed after generating others:\n%s\n%s", v1, v2)
	}
	if digest(NewOrders(7), 0, 200) == digest(NewOrders(8), 0, 200) {
		t.Fatal("seeds 7 and 8 gave the same records")
	}
	// Concurrent generation (in any order) gives the same bytes.
	var wg sync.WaitGroup
	parts := make([][32]byte, 4)
	for w := range 4 {
		wg.Go(func() { parts[w] = digest(a, int64(w*100), int64(w*100+100)) })
	}
	wg.Wait()
	for w := range 4 {
		if parts[w] != digest(b, int64(w*100), int64(w*100+100)) {
			t.Errorf("records %d..%d differ when generated concurrently", w*100, w*100+99)
		}
	}
}

// TestOrdersFirstRecord pins record 0 of seed 1, so that a change to the
// generator (which changes every benchmark's data) is a deliberate one.
func TestOrdersFirstRecord(t *testing.T) {
	k, v, h := NewOrders(1).Record(0)
	if string(k) != "cust-4653473" {
		t.Errorf("key = %q, want cust-4653473", k)
	}
	const wantPrefix = `{"order_id":"27b91446-a0f3-4715-d50d-56cb6d8eb446","event":"OrderShipped","created_at":"2026-01-01T00:00:00.002Z",`
	if !strings.HasPrefix(string(v), wantPrefix) {
		t.Errorf("value = %s\nwant prefix %s", v, wantPrefix)
	}
	var names []string
	for _, x := range h {
		names = append(names, x.Key)
	}
	if want := []string{"event-type", "content-type", "schema-version", "trace-id"}; !slices.Equal(names, want) {
		t.Errorf("header keys = %q, want %q", names, want)
	}
	if string(h[0].Value) != "OrderShipped" || string(h[1].Value) != "application/json" || string(h[2].Value) != "3" || len(h[3].Value) != 32 {
		t.Errorf("header values = %q %q %q %q", h[0].Value, h[1].Value, h[2].Value, h[3].Value)
	}
}

// order is the shape of the JSON value, for checking that every record
// parses and holds consistent fields.
type order struct {
	OrderID   string `json:"order_id"`
	Event     string `json:"event"`
	CreatedAt string `json:"created_at"`
	Customer  struct {
		ID    string `json:"id"`
		Email string `json:"email"`
	} `json:"customer"`
	Items []struct {
		SKU       string  `json:"sku"`
		Quantity  int     `json:"quantity"`
		UnitPrice float64 `json:"unit_price"`
	} `json:"items"`
	Amounts struct {
		Currency string  `json:"currency"`
		Subtotal float64 `json:"subtotal"`
		Shipping float64 `json:"shipping"`
		Tax      float64 `json:"tax"`
		Total    float64 `json:"total"`
	} `json:"amounts"`
	ShippingAddress struct {
		City, Country string
	} `json:"shipping_address"`
}

func TestOrdersShape(t *testing.T) {
	o := NewOrders(3)
	const n = 5000
	var sum, lo, hi int
	lo = 1 << 30
	events, cities := map[string]bool{}, map[string]bool{}
	var prev time.Time
	for i := int64(0); i < n; i++ {
		k, v, h := o.Record(i)
		var x order
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("record %d is not JSON: %v\n%s", i, err, v)
		}
		if string(k) != x.Customer.ID || !strings.HasPrefix(x.Customer.ID, "cust-") || len(x.Customer.ID) != 12 {
			t.Fatalf("record %d: key %q, customer.id %q", i, k, x.Customer.ID)
		}
		if len(x.OrderID) != 36 || string(h[0].Value) != x.Event || len(x.Items) < 1 || len(x.Items) > 4 {
			t.Fatalf("record %d: order_id %q, event %q vs header %q, %d items", i, x.OrderID, x.Event, h[0].Value, len(x.Items))
		}
		var sub float64
		for _, it := range x.Items {
			sub += float64(it.Quantity) * it.UnitPrice
		}
		a := x.Amounts
		if diff := sub - a.Subtotal; diff > 0.005 || diff < -0.005 {
			t.Fatalf("record %d: items sum to %.2f, subtotal %.2f", i, sub, a.Subtotal)
		}
		if diff := a.Subtotal + a.Shipping + a.Tax - a.Total; diff > 0.005 || diff < -0.005 {
			t.Fatalf("record %d: amounts do not add up: %+v", i, a)
		}
		ts, err := time.Parse("2006-01-02T15:04:05.000Z", x.CreatedAt)
		if err != nil {
			t.Fatalf("record %d: created_at %q: %v", i, x.CreatedAt, err)
		}
		// 3 ms per record plus up to 3 ms of jitter: never more than 3 ms back.
		if i > 0 && ts.Before(prev.Add(-3*time.Millisecond)) {
			t.Fatalf("record %d: created_at %s more than 3 ms before record %d's %s", i, ts, i-1, prev)
		}
		prev = ts
		events[x.Event], cities[x.ShippingAddress.City] = true, true
		sum += len(v)
		lo, hi = min(lo, len(v)), max(hi, len(v))
		if p := PayloadBytes(k, v, h); p != len(k)+len(v)+len("event-type")+len(x.Event)+len("content-type")+16+len("schema-version")+1+len("trace-id")+32 {
			t.Fatalf("record %d: PayloadBytes %d", i, p)
		}
	}
	mean := sum / n
	if mean < 950 || mean > 1150 || lo < 700 || hi > 1500 {
		t.Errorf("value sizes: mean %d (want 950..1150), min %d (want >= 700), max %d (want <= 1500)", mean, lo, hi)
	}
	if len(events) != 7 || len(cities) < 25 {
		t.Errorf("%d event types, %d cities: want 7 and at least 25", len(events), len(cities))
	}
}

// compressionRatio encodes records [0, n) as Kafka v2 records (kmsg.Record,
// the bytes a producer compresses), cuts them into batches of batchBytes and
// returns payload bytes / compressed bytes (plus the 61-byte batch header
// each batch carries on disk), using franz-go's own compressor.
func compressionRatio(t *testing.T, o *Orders, n int, codec kgo.CompressionCodec, batchBytes int) float64 {
	t.Helper()
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	var payload, stored int
	var buf []byte
	flush := func() {
		var dst bytes.Buffer
		out, _ := comp.Compress(&dst, buf)
		stored += len(out) + 61
		buf = buf[:0]
	}
	for i := int64(0); i < int64(n); i++ {
		k, v, hs := o.Record(i)
		payload += PayloadBytes(k, v, hs)
		rec := kmsg.Record{Key: k, Value: v, OffsetDelta: int32(i)}
		for _, h := range hs {
			rec.Headers = append(rec.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		buf = rec.AppendTo(buf)
		if len(buf) >= batchBytes {
			flush()
		}
	}
	if len(buf) > 0 {
		flush()
	}
	return float64(payload) / float64(stored)
}

// TestOrdersCompress checks the property the compressed benchmark workloads
// rely on: the records compress 3–6× with lz4 and zstd in the large batches
// a fast producer writes, and a little less in 64 KiB batches.
func TestOrdersCompress(t *testing.T) {
	o := NewOrders(1)
	for _, tc := range []struct {
		name       string
		codec      kgo.CompressionCodec
		batchBytes int
		lo, hi     float64
	}{
		{"lz4 1MB", kgo.Lz4Compression(), 1 << 20, 3.0, 4.0},
		{"zstd 1MB", kgo.ZstdCompression(), 1 << 20, 4.5, 6.0},
		{"lz4 64KiB", kgo.Lz4Compression(), 64 << 10, 2.6, 3.4},
		{"zstd 64KiB", kgo.ZstdCompression(), 64 << 10, 3.8, 4.8},
	} {
		r := compressionRatio(t, o, 8000, tc.codec, tc.batchBytes)
		t.Logf("%s: payload / stored = %.2f", tc.name, r)
		if r < tc.lo || r > tc.hi {
			t.Errorf("%s: payload / stored = %.2f, want %.1f..%.1f", tc.name, r, tc.lo, tc.hi)
		}
	}
}

func BenchmarkOrdersRecord(b *testing.B) {
	o := NewOrders(1)
	var n int
	for i := 0; b.Loop(); i++ {
		k, v, h := o.Record(int64(i))
		n += PayloadBytes(k, v, h)
	}
	b.SetBytes(int64(n / b.N))
}
