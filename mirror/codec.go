package mirror

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// followCodec is the compressor of a unit's target producer: unless the
// user configured the producer's compression (compression.type, or a
// kgo.ProducerBatchCompression or kgo.WithCompressor option, which win), it
// compresses each produced batch with the codec most of the unit's records
// had at the source in its latest poll, so that the target stores about
// what the source stores. MM2's producer defaults to compression.type=none
// and franz-go's to snappy, whatever the source data used.
//
// One producer serves every partition of a unit, and kgo asks its
// compressor for a codec per batch without saying for which partition, so
// a unit whose partitions use different codecs writes the codec of the
// majority of its latest poll (each batch header names its codec, so
// switching at any batch is safe; consumers read any mix).
type followCodec struct {
	codec atomic.Int32 // kgo.CompressionCodecType to use; CodecNone until data was seen
	fixed kgo.Compressor

	mu    sync.Mutex
	comps [5]kgo.Compressor // by codec type, built on first use

	counts [5]int // poll loop only: records per codec in the current poll
}

// sentinelCodec marks "no compression configured by the user": open puts
// it before the user's options and finds it unchanged afterwards.
var sentinelCodec = kgo.NoCompression().WithLevel(-0x6b6d)

// configured records the compression the user configured for the producer
// (the codecs of its kgo.ProducerBatchCompression option), if any.
func (c *followCodec) configured(v any) {
	codecs, ok := v.([]kgo.CompressionCodec)
	if !ok || (len(codecs) == 1 && codecs[0] == sentinelCodec) {
		return
	}
	// A copy: DefaultCompressor reorders its argument in place, and the
	// slice is the option value every client built from it shares (the
	// caller holds kclient's lock while reading it).
	c.fixed, _ = kgo.DefaultCompressor(slices.Clone(codecs)...)
	if c.fixed == nil {
		c.fixed = noCompressor{}
	}
}

// observe counts one polled record's batch codec (the poll loop, per record).
func (c *followCodec) observe(codec uint8) {
	if codec < uint8(len(c.counts)) {
		c.counts[codec]++
	}
}

// observeN counts n polled records of a batch with codec.
func (c *followCodec) observeN(codec uint8, n int) {
	if codec < uint8(len(c.counts)) {
		c.counts[codec] += n
	}
}

// settle makes the majority codec of the poll observed since the last call
// the producer's codec.
func (c *followCodec) settle() {
	best, n := -1, 0
	for i, k := range c.counts {
		if k > n {
			best, n = i, k
		}
		c.counts[i] = 0
	}
	if best >= 0 {
		c.codec.Store(int32(best))
	}
}

// Compress implements kgo.Compressor.
func (c *followCodec) Compress(dst *bytes.Buffer, src []byte, flags ...kgo.CompressFlag) ([]byte, kgo.CompressionCodecType) {
	if c.fixed != nil {
		return c.fixed.Compress(dst, src, flags...)
	}
	t := c.codec.Load()
	if t <= 0 || int(t) >= len(c.comps) {
		return src, kgo.CodecNone
	}
	c.mu.Lock()
	comp := c.comps[t]
	if comp == nil {
		var codec kgo.CompressionCodec
		switch kgo.CompressionCodecType(t) {
		case kgo.CodecGzip:
			codec = kgo.GzipCompression()
		case kgo.CodecSnappy:
			codec = kgo.SnappyCompression()
		case kgo.CodecLz4:
			codec = kgo.Lz4Compression()
		default:
			// zstd needs Produce v7+; kgo passes CompressDisableZstd below
			// that, and the fallback keeps the data compressed.
			codec = kgo.ZstdCompression()
			comp, _ = kgo.DefaultCompressor(codec, kgo.Lz4Compression())
		}
		if comp == nil {
			comp, _ = kgo.DefaultCompressor(codec)
		}
		c.comps[t] = comp
	}
	c.mu.Unlock()
	return comp.Compress(dst, src, flags...)
}

type noCompressor struct{}

func (noCompressor) Compress(_ *bytes.Buffer, src []byte, _ ...kgo.CompressFlag) ([]byte, kgo.CompressionCodecType) {
	return src, kgo.CodecNone
}
