package mirror

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pierrec/lz4/v4"
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
	// lz4 first, at any level: kgo would always pick it (lz4 never needs
	// a fallback). An empty preference (kgo.ProducerBatchCompression())
	// is no compression, as kgo.DefaultCompressor makes of it.
	if len(codecs) > 0 {
		if level, ok := lz4Level(codecs[0]); ok {
			c.fixed = newLz4Compressor(level)
			return
		}
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
			comp = newLz4Compressor(lz4.Fast)
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

// lz4Compressor compresses batches into lz4 frames of 1 MiB blocks:
// franz-go's own lz4 compressor writes 4 MiB blocks, so each batch being
// compressed held a 4 MiB buffer, and the pools kept them between batches
// (issue 22: 12 MiB of a 115 MB live heap while copying lz4 JSON at
// tasks.max=2). A batch of up to 1 MiB (franz-go's default
// ProducerBatchMaxBytes, Kafka's message.max.bytes, is 1 000 012 bytes)
// still fits one block, so it compresses exactly as before: 64 KiB blocks,
// the block size of Kafka's Java producer, stored 13 % more on the
// side-by-side benchmark's JSON, each block starting without history.
// Every Kafka client reads frames of any block size.
type lz4Compressor struct{ pool sync.Pool }

// newLz4Compressor compresses at level, one lz4Level returns.
func newLz4Compressor(level lz4.CompressionLevel) *lz4Compressor {
	c := &lz4Compressor{}
	c.pool.New = func() any {
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block1Mb), lz4.CompressionLevelOption(level)); err != nil {
			panic("lz4: options refused: " + err.Error()) // constant options of the pinned library, a level lz4Level checked
		}
		return w
	}
	return c
}

// lz4Levels are the levels lz4.CompressionLevelOption takes.
var lz4Levels = []lz4.CompressionLevel{lz4.Fast, lz4.CCompatFast, lz4.Level1, lz4.Level2, lz4.Level3,
	lz4.Level4, lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}

// lz4Level reports whether codec is lz4, and at which level kgo's own
// compressor would compress it: the codec's level
// (kgo.Lz4Compression().WithLevel), or lz4's default (Fast) when
// lz4.CompressionLevelOption refuses it. kgo.CompressionCodec's fields are
// unexported: the codec is compared with each lz4 level's.
func lz4Level(codec kgo.CompressionCodec) (lz4.CompressionLevel, bool) {
	if codec.WithLevel(0) != kgo.Lz4Compression() {
		return 0, false
	}
	for _, l := range lz4Levels {
		if codec == kgo.Lz4Compression().WithLevel(int(l)) {
			return l, true
		}
	}
	return lz4.Fast, true
}

// Compress implements kgo.Compressor. A failure (none is known for a
// writer into memory) leaves the batch uncompressed, as kgo's own
// compressor would fall back to its next codec.
func (c *lz4Compressor) Compress(dst *bytes.Buffer, src []byte, _ ...kgo.CompressFlag) ([]byte, kgo.CompressionCodecType) {
	w := c.pool.Get().(*lz4.Writer)
	defer c.pool.Put(w)
	w.Reset(dst)
	if _, err := w.Write(src); err != nil {
		return src, kgo.CodecNone
	}
	if err := w.Close(); err != nil {
		return src, kgo.CodecNone
	}
	return dst.Bytes(), kgo.CodecLz4
}
