package mirror

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// lz4BlockSize returns the block maximum size an lz4 frame's descriptor
// (its BD byte, after the 4-byte magic number and the FLG byte) declares.
func lz4BlockSize(t *testing.T, frame []byte) int {
	t.Helper()
	if len(frame) < 6 || !bytes.Equal(frame[:4], []byte{0x04, 0x22, 0x4d, 0x18}) {
		t.Fatalf("not an lz4 frame: % x", frame[:min(len(frame), 8)])
	}
	return map[byte]int{4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}[frame[5]>>4&7]
}

// TestLz4CompressorBlocks (issue 22): a unit's producer compressed lz4
// batches with franz-go's 4 MiB frame blocks, so each batch being
// compressed held a 4 MiB buffer (12 MiB of a 115 MB live heap while
// copying lz4 JSON). It now writes 1 MiB blocks, whether it follows the
// source's lz4 or the user configured lz4; the frames decode to the batch,
// byte for byte, and a batch of up to 1 MiB compresses to exactly what
// franz-go's compressor makes of it (one block either way: 64 KiB blocks
// stored 13 % more).
func TestLz4CompressorBlocks(t *testing.T) {
	var src bytes.Buffer
	for i := 0; src.Len() < 1<<20; i++ { // a 1 MiB batch of order-like JSON
		fmt.Fprintf(&src, `{"order_id":"o-%08d","customer":"c-%05d","amount":%d.%02d,"items":[{"sku":"s-%04d","qty":%d}]}`, i, i%9973, i%500, i%100, i%1000, 1+i%7)
	}
	follow := &followCodec{}
	follow.observeN(uint8(kgo.CodecLz4), 10)
	follow.settle()
	configured := &followCodec{}
	configured.configured([]kgo.CompressionCodec{kgo.Lz4Compression()})
	for name, c := range map[string]*followCodec{"following the source's lz4": follow, "compression.type=lz4": configured} {
		for _, size := range []int{100, 64 << 10, 1 << 20} {
			in := src.Bytes()[:size]
			out, codec := c.Compress(new(bytes.Buffer), in)
			if codec != kgo.CodecLz4 {
				t.Fatalf("%s, %d bytes: codec %v, want lz4", name, size, codec)
			}
			if got := lz4BlockSize(t, out); got != 1<<20 {
				t.Errorf("%s, %d bytes: frame blocks of %d bytes, want 1 MiB", name, size, got)
			}
			ref, _ := kgo.DefaultCompressor(kgo.Lz4Compression())
			refOut, _ := ref.Compress(new(bytes.Buffer), in)
			if len(out) != len(refOut) {
				t.Errorf("%s, %d bytes: compressed to %d bytes, franz-go's 4 MiB blocks to %d", name, size, len(out), len(refOut))
			}
			back, err := kgo.DefaultDecompressor().Decompress(out, kgo.CodecLz4)
			if err != nil || !bytes.Equal(back, in) {
				t.Fatalf("%s, %d bytes: decompressed %d bytes (%v), want the batch back", name, size, len(back), err)
			}
			if size == 1<<20 && len(out) > size/3 {
				t.Errorf("%s: 1 MiB of JSON compressed to %d bytes, want at most a third", name, len(out))
			}
		}
	}
}
