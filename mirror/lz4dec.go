package mirror

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lz4Decompressor is the source consumer's kgo.Decompressor: it decodes an
// lz4 batch block by block, straight from the fetched bytes into an output
// that grows with what the batch holds, and hands every other codec to
// franz-go's own decompressor.
//
// franz-go's decompressor streams lz4 through pierrec/lz4's frame reader,
// which takes two buffers of the block size the frame declares (one for the
// compressed block, one for its output) from pools that keep them between
// batches. Frames written by Go producers (franz-go's, pierrec's defaults)
// declare 4 MiB blocks, so each batch being decoded held 8 MiB however
// small it was (issue 22: 16 MB of a 115 MB live heap while copying lz4
// JSON at tasks.max=2). Frames of Kafka's Java producer declare 64 KiB and
// cost little either way.
//
// The frame format is lz4's (magic 0x184D2204, a descriptor, blocks each
// with a 4-byte little-endian size whose high bit marks a stored block, an
// end mark, optional checksums). Its header, block and content checksums
// are skipped, not verified: the record batch's CRC-32C, which the
// consumer checks, already covers every compressed byte (a consumer that
// does not check it, check.crcs=false, has lz4 decoded by franz-go, which
// verifies them: uncheckedCRC). Anything else
// (legacy frames, skippable frames, dictionaries, linked blocks, a frame
// that does not decode) goes to franz-go's decompressor, which decodes it
// or returns its error, so this type accepts exactly what it accepts.
type lz4Decompressor struct {
	// inner is franz-go's decompressor bounded at max (franzDecompressor):
	// kgo.DefaultDecompressor() is bounded at math.MaxInt32, and a client
	// given a kgo.WithDecompressor applies its MaxDecompressBatchBytes to
	// no codec.
	inner atomic.Pointer[kgo.Decompressor]
	// max bounds a batch's decompressed size: kgo.MaxDecompressBatchBytes
	// of the client (franz-go applies it only to its own decompressor);
	// set once the client exists (setMax), 1 GiB until then.
	max atomic.Int64
	// crcOff is set when the client does not check batches' CRC-32C
	// (kgo.DisableFetchCRCValidation, check.crcs=false): the frame's
	// checksums are then all that covers an lz4 batch, and franz-go's
	// decoder, which verifies them, decodes it.
	crcOff  atomic.Bool
	scratch sync.Pool // *[]byte: decoding buffers, the output is copied out exact
}

// lz4DecompressorKeep is the largest decoding buffer kept for the next
// batch (a batch decoding to more allocates its own once). A kept buffer
// lets later batches decode without allocating and, its room being used
// in full, without retrying; one is kept per batch decoded at the same
// time (a unit's consumer decodes one batch at a time per source broker).
const lz4DecompressorKeep = 8 << 20

// newLz4Decompressor returns a decompressor bounded at 1 GiB (franz-go's
// default MaxDecompressBatchBytes) until setMax.
func newLz4Decompressor() *lz4Decompressor {
	d := &lz4Decompressor{}
	d.setMax(1 << 30)
	d.scratch.New = func() any { return new([]byte) }
	return d
}

// setMax bounds a batch's decompressed size at n bytes (n > 0), in every
// codec.
func (d *lz4Decompressor) setMax(n int) {
	if n > 0 {
		inner := franzDecompressor(n)
		d.inner.Store(&inner)
		d.max.Store(int64(n))
	}
}

// uncheckedCRC tells d that the client does not check batches' CRC-32C:
// lz4 batches go to franz-go's decoder, which verifies the frames'
// checksums.
func (d *lz4Decompressor) uncheckedCRC() { d.crcOff.Store(true) }

// franzDecompressors holds franzDecompressor's decompressors by bound.
var franzDecompressors sync.Map // int → kgo.Decompressor

// franzDecompressor returns franz-go's own decompressor bounded at n bytes,
// the one a client with kgo.MaxDecompressBatchBytes(n) and no
// kgo.WithDecompressor uses. franz-go builds it only inside a client
// (kgo.DefaultDecompressor is bounded at math.MaxInt32), so it is taken
// from a client that is closed at once, having sent nothing; one per bound
// is kept (it is safe for concurrent use).
func franzDecompressor(n int) kgo.Decompressor {
	if d, ok := franzDecompressors.Load(n); ok {
		return d.(kgo.Decompressor)
	}
	cl, err := kgo.NewClient(kgo.MaxDecompressBatchBytes(n), kgo.DisableClientMetrics())
	if err != nil { // n over franz-go's own limit: no client has it
		return kgo.DefaultDecompressor()
	}
	d, ok := cl.OptValue(kgo.WithDecompressor).(kgo.Decompressor)
	cl.Close()
	if !ok {
		return kgo.DefaultDecompressor()
	}
	got, _ := franzDecompressors.LoadOrStore(n, d)
	return got.(kgo.Decompressor)
}

// Decompress implements kgo.Decompressor.
func (d *lz4Decompressor) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	inner := *d.inner.Load()
	if codec != kgo.CodecLz4 || d.crcOff.Load() {
		return inner.Decompress(src, codec)
	}
	bp := d.scratch.Get().(*[]byte)
	out, res := decodeLz4Frames((*bp)[:0], src, int(d.max.Load()))
	var ret []byte
	if res == lz4Decoded {
		ret = slices.Clone(out)
	}
	if cap(out) <= lz4DecompressorKeep {
		*bp = out[:0]
	} else {
		*bp = nil
	}
	d.scratch.Put(bp)
	switch res {
	case lz4Decoded:
		if ret == nil {
			ret = []byte{} // frames of no block: no bytes
		}
		return ret, nil
	case lz4TooLarge:
		return nil, kgo.ErrMaxDecompress
	}
	return inner.Decompress(src, codec)
}

// lz4Result is the outcome of decodeLz4Frames.
type lz4Result uint8

const (
	lz4Decoded  lz4Result = iota // out holds the whole decoded input
	lz4Other                     // not a frame decodeLz4Frames decodes: ask franz-go's decompressor
	lz4TooLarge                  // it decodes to more than max bytes
)

// lz4 frame constants (the lz4 frame format, version 01).
const (
	lz4FrameMagic   = 0x184D2204
	lz4FlagVersion  = 0xC0 // the version bits of FLG; 0x40 is version 01
	lz4FlagIndep    = 0x20 // blocks are independent
	lz4FlagBlockSum = 0x10 // each block is followed by a 4-byte checksum
	lz4FlagSize     = 0x08 // the descriptor holds the 8-byte content size
	lz4FlagSum      = 0x04 // the end mark is followed by a 4-byte checksum
	lz4FlagReserved = 0x02
	lz4FlagDict     = 0x01 // the descriptor holds a 4-byte dictionary ID
	lz4StoredBit    = 1 << 31
)

// decodeLz4Frames appends the decoding of src, one or more lz4 frames of
// independent blocks, to dst, up to limit bytes in all (lz4TooLarge past
// it). Each block is given the room of uncompressLz4Block, so that a small
// batch never takes a block-size buffer; the ratio it expects starts at 4
// and is the largest a block of the batch had since, so that only the
// first block of highly compressible data tries several rooms.
func decodeLz4Frames(dst, src []byte, limit int) ([]byte, lz4Result) {
	if len(src) == 0 {
		return dst, lz4Other
	}
	ratio := 4
	for len(src) > 0 {
		if len(src) < 7 || binary.LittleEndian.Uint32(src) != lz4FrameMagic {
			return dst, lz4Other
		}
		flg, bd := src[4], src[5]
		if flg&lz4FlagVersion != 0x40 || flg&(lz4FlagIndep|lz4FlagReserved|lz4FlagDict) != lz4FlagIndep || bd&0x8F != 0 {
			return dst, lz4Other
		}
		var blockMax int
		switch bd >> 4 {
		case 4:
			blockMax = 64 << 10
		case 5:
			blockMax = 256 << 10
		case 6:
			blockMax = 1 << 20
		case 7:
			blockMax = 4 << 20
		default:
			return dst, lz4Other
		}
		pos := 6
		if flg&lz4FlagSize != 0 {
			pos += 8
		}
		pos++ // the header checksum
		for {
			if len(src) < pos+4 {
				return dst, lz4Other
			}
			size := binary.LittleEndian.Uint32(src[pos:])
			pos += 4
			if size == 0 {
				break // the end mark
			}
			stored := size&lz4StoredBit != 0
			n := int(size &^ lz4StoredBit)
			if n > len(src)-pos || n > blockMax { // a block, compressed or stored, is at most the block size
				return dst, lz4Other
			}
			block := src[pos : pos+n]
			pos += n
			if flg&lz4FlagBlockSum != 0 {
				pos += 4
			}
			if stored {
				if len(dst)+n > limit {
					return dst, lz4TooLarge
				}
				dst = append(dst, block...)
				continue
			}
			var ok bool
			before := len(dst)
			if dst, ok = uncompressLz4Block(dst, block, blockMax, ratio); !ok {
				return dst, lz4Other
			}
			if n > 0 {
				ratio = max(ratio, (len(dst)-before)/n+1)
			}
			if len(dst) > limit {
				return dst, lz4TooLarge
			}
		}
		if flg&lz4FlagSum != 0 {
			pos += 4
		}
		if pos > len(src) {
			return dst, lz4Other
		}
		src = src[pos:]
	}
	return dst, lz4Decoded
}

// uncompressLz4Block appends the decoding of one compressed block of at
// most blockMax bytes to dst; false when it does not decode. The block is
// given the room dst has free, at least ratio times its compressed size and
// 64 KiB, at most blockMax, doubled while it does not fit.
func uncompressLz4Block(dst, block []byte, blockMax, ratio int) ([]byte, bool) {
	room := min(blockMax, max(64<<10, ratio*len(block), cap(dst)-len(dst)))
	for {
		dst = slices.Grow(dst, room)
		n, err := lz4.UncompressBlock(block, dst[len(dst):len(dst)+room])
		if err == nil {
			return dst[:len(dst)+n], true
		}
		if !errors.Is(err, lz4.ErrInvalidSourceShortBuffer) || room == blockMax {
			return dst, false
		}
		room = min(blockMax, 2*room)
	}
}
