package mirror

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/pierrec/lz4/v4"
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

// TestBrk1206EmptyCompressionPreference: kgo.ProducerBatchCompression()
// with no codec is no compression (kgo.DefaultCompressor returns none for
// it, and so did the unit's producer); the lz4 check of the first codec
// indexed the empty preference and panicked in the unit's goroutine,
// killing the process, when the target's producer options had it.
func TestBrk1206EmptyCompressionPreference(t *testing.T) {
	c := &followCodec{}
	c.observeN(uint8(kgo.CodecLz4), 10) // the source's lz4 must not win: the user configured
	c.settle()
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		c.configured([]kgo.CompressionCodec(nil))
	}()
	if panicked != nil {
		t.Fatalf("configured(empty preference) panicked: %v", panicked)
	}
	in := bytes.Repeat([]byte("order-"), 1000)
	out, codec := c.Compress(new(bytes.Buffer), in)
	if codec != kgo.CodecNone || !bytes.Equal(out, in) {
		t.Fatalf("empty preference: codec %v, %d bytes; want none, the batch as it is (%d bytes)", codec, len(out), len(in))
	}
}

// TestBrk1206Lz4LevelKeepsBlocks: a user-configured lz4 with a level
// (kgo.Lz4Compression().WithLevel) compresses at that level, as kgo's
// compressor does, and into the same 1 MiB frame blocks as the default
// level (it was left to kgo's compressor, 4 MiB blocks); a level lz4
// refuses is lz4's default level, as kgo makes of it.
func TestBrk1206Lz4LevelKeepsBlocks(t *testing.T) {
	var src bytes.Buffer
	for i := 0; src.Len() < 512<<10; i++ {
		fmt.Fprintf(&src, `{"order_id":"o-%08d","customer":"c-%05d","amount":%d.%02d}`, i, i%9973, i%500, i%100)
	}
	in := src.Bytes()
	lenOf := func(codec kgo.CompressionCodec) int {
		ref, _ := kgo.DefaultCompressor(codec)
		out, _ := ref.Compress(new(bytes.Buffer), in)
		return len(out)
	}
	fast, level9 := lenOf(kgo.Lz4Compression()), lenOf(kgo.Lz4Compression().WithLevel(int(lz4.Level9)))
	if level9 >= fast {
		t.Fatalf("kgo's lz4 Level9 compressed to %d bytes, Fast to %d: want Level9 smaller", level9, fast)
	}
	for _, c := range []struct {
		level int
		want  int
	}{{int(lz4.Level9), level9}, {int(lz4.Level1), lenOf(kgo.Lz4Compression().WithLevel(int(lz4.Level1)))}, {-3, fast}, {12345, fast}} {
		codec := kgo.Lz4Compression().WithLevel(c.level)
		f := &followCodec{}
		f.configured([]kgo.CompressionCodec{codec, kgo.NoCompression()})
		out, used := f.Compress(new(bytes.Buffer), in)
		if used != kgo.CodecLz4 {
			t.Fatalf("level %d: codec %v, want lz4", c.level, used)
		}
		if got := lz4BlockSize(t, out); got != 1<<20 {
			t.Errorf("level %d: frame blocks of %d bytes, want 1 MiB", c.level, got)
		}
		if len(out) != c.want {
			t.Errorf("level %d: compressed to %d bytes, kgo's compressor at that level to %d", c.level, len(out), c.want)
		}
		if back, err := kgo.DefaultDecompressor().Decompress(out, kgo.CodecLz4); err != nil || !bytes.Equal(back, in) {
			t.Fatalf("level %d: decompressed %d bytes (%v), want the batch back", c.level, len(back), err)
		}
	}
}
