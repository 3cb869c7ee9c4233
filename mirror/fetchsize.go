package mirror

import (
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchFloor is the least a fetch request asks for (bytes on the wire),
// and what the first requests ask for, before any batch is read. Kafka
// returns at least one batch whatever the request's limit, so a floor
// only keeps very compressible topics from fetching few records per round
// trip: it binds only above budget / fetchFloor times compressed (128 at
// an 8 MiB budget). A response holds up to fetchFloor × r decompressed,
// a topic compressed r times; the first one, sized before r is known,
// held up to 1 MiB × r until 2026-12-06 (issue 22's scale benchmark:
// zero-filled records of 100 B, held at about 29 times their bytes on the
// wire with the 256 bytes each record costs: up to 29 MiB in the first
// response of each unit). A first request that small costs one round trip
// more.
const fetchFloor = 64 << 10

// fetchSizer sizes a replication consumer's fetch requests
// (FetchMaxBytes) so that a response holds about its budget once read,
// not on the wire (issue 22). Kafka's fetch.max.bytes counts a batch as
// the source stores it: a batch compressed r times holds r times its size
// once decompressed, and each of its records costs a kgo.Record and its
// share of what the engine keeps per record (heldPerRecord) besides its
// bytes. The sizer keeps decayed sums of the batches read, wire bytes
// against bytes held (decompressed, plus heldPerRecord a record), and asks
// for budget × wire / held.
//
// It is a pure state machine (no I/O, no clock); not safe for concurrent
// use (fetchHook serialises it).
type fetchSizer struct {
	budget int32 // memory a response may cost, bytes
	floor  int32 // least FetchMaxBytes asked for
	// wire and held are decayed sums over the batches read: their bytes
	// on the wire, and what they hold once read.
	wire, held int64
	cur        int32 // FetchMaxBytes in force
}

// heldPerRecord is what a fetched record costs beyond its decompressed
// bytes while the engine holds it: its kgo.Record (about 170 bytes with
// its slab share) and its provenance header and in-flight entry. A
// response of 100-byte records held about three times its bytes (issue
// 22's scale benchmark: the whole backlog of 120 000 records in one
// response per unit, 27-35 MB of the peak heap).
//
// Until 2026-12-06 records were counted by their bytes only: a first try
// of this term (2026-12-03) was dropped on a side-by-side run whose 100 B
// ratio was as low without it, the machine's doing (see
// internal/bench/results/issue22-sidebyside.md).
const heldPerRecord = 256

// newFetchSizer returns a sizer for a response budget of budget bytes.
// The first requests ask for the floor, min(budget, fetchFloor): nothing
// is known of the data yet, and a first response of compressible small
// records would otherwise cost many times the budget.
func newFetchSizer(budget int32) *fetchSizer {
	floor := min(int32(fetchFloor), budget)
	return &fetchSizer{budget: budget, floor: floor, cur: floor}
}

// read accounts one batch read (wire bytes as fetched, decoded bytes
// after decompression, records in it) and returns the FetchMaxBytes to ask
// for from now on and whether it moved by more than an eighth of the one
// in force (callers update the client only then).
func (s *fetchSizer) read(wire, decoded, records int) (int32, bool) {
	if wire <= 0 {
		return s.cur, false
	}
	s.wire += int64(wire)
	s.held += int64(max(decoded, wire)) + int64(max(records, 0))*heldPerRecord
	// Older batches weigh half once the sums cover four budgets: the
	// sizer follows a topic whose records change.
	if s.wire > 4*int64(s.budget) {
		s.wire, s.held = s.wire/2, s.held/2
	}
	// In float64: budget × wire reaches 4 × budget², past int64 for a
	// budget over 1.4 GiB.
	want := int32(min(float64(s.budget), max(float64(s.floor), float64(s.budget)*float64(s.wire)/float64(max(s.held, 1)))))
	if d := want - s.cur; d > s.cur/8 || -d > s.cur/8 {
		s.cur = want
		return want, true
	}
	return s.cur, false
}

// fetchHook is a replication consumer's kgo.HookFetchBatchRead: it feeds
// every batch read to the consumer's fetchSizer and updates the client's
// FetchMaxBytes when the size moved. kgo calls it from its fetch
// goroutines; mu serialises the sizer and the updates.
type fetchHook struct {
	mu    sync.Mutex
	sizer *fetchSizer
	// cl is the consumer, nil until attach (batches read before only feed
	// the sizer); partMax its per-partition limit.
	cl      *kgo.Client
	partMax int32
	size    atomic.Int32 // FetchMaxBytes in force, for tests
}

// OnFetchBatchRead implements kgo.HookFetchBatchRead.
func (h *fetchHook) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sizer == nil {
		return
	}
	if size, moved := h.sizer.read(m.CompressedBytes, m.UncompressedBytes, m.NumRecords); moved {
		h.applyLocked(size)
	}
}

// attach starts sizing cl's fetches: its FetchMaxBytes (the unit's share
// of the flow's fetch.max.bytes) becomes the budget a response may hold
// decompressed. Call it once, before the client consumes; after it, only
// the hook changes the client's fetch sizes (kgo's OptValue reads them
// without synchronisation).
func (h *fetchHook) attach(cl *kgo.Client) {
	budget, _ := cl.OptValue(kgo.FetchMaxBytes).(int32)
	partMax, _ := cl.OptValue(kgo.FetchMaxPartitionBytes).(int32)
	if budget <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cl, h.partMax, h.sizer = cl, partMax, newFetchSizer(budget)
	h.applyLocked(h.sizer.cur)
}

func (h *fetchHook) applyLocked(size int32) {
	h.size.Store(size)
	// kgo keeps the partition limit within the request's (some servers
	// mishandle a larger one). The partition limit is part of a fetch
	// session's state, but kgo sends a partition again only when its
	// offset moves, so an idle partition keeps its old limit; the
	// request's limit bounds the response anyway.
	h.cl.UpdateFetchMaxBytes(size, min(h.partMax, size))
}
