package mirror

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lz4Frame compresses data into one lz4 frame written by pierrec/lz4 with
// opts.
func lz4Frame(t testing.TB, data []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var b bytes.Buffer
	w := lz4.NewWriter(&b)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// lz4Payloads are batches of the shapes the decoder meets: JSON-like text
// (compresses about 4x), zeros (compresses hundreds of times: the room
// doubles), random bytes (stored blocks), empty, and larger than a block.
func lz4Payloads() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	var js bytes.Buffer
	for i := 0; js.Len() < 300<<10; i++ {
		fmt.Fprintf(&js, `{"id":%d,"user":"u%d","amount":%d.%02d,"tags":["a","b%d"]}`, i, r.IntN(1000), r.IntN(10000), r.IntN(100), i%7)
	}
	random := make([]byte, 200<<10)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	big := bytes.Repeat(js.Bytes(), 6) // 1.8 MiB: two 1 MiB blocks, many 64 KiB ones
	return map[string][]byte{
		"json":   js.Bytes(),
		"zeros":  make([]byte, 3<<20),
		"random": random,
		"empty":  {},
		"small":  []byte("one record"),
		"big":    big,
	}
}

// TestLz4DecompressorMatchesFranzGo: every frame pierrec/lz4 writes, at
// every block size, with and without block and content checksums and the
// content size, decodes to the same bytes as with franz-go's own
// decompressor, and concatenated frames decode to the concatenation.
func TestLz4DecompressorMatchesFranzGo(t *testing.T) {
	d := newLz4Decompressor()
	ref := kgo.DefaultDecompressor()
	for name, data := range lz4Payloads() {
		for _, bs := range []lz4.BlockSize{lz4.Block64Kb, lz4.Block256Kb, lz4.Block1Mb, lz4.Block4Mb} {
			for _, sums := range []bool{false, true} {
				opts := []lz4.Option{lz4.BlockSizeOption(bs), lz4.BlockChecksumOption(sums), lz4.ChecksumOption(sums)}
				if sums {
					opts = append(opts, lz4.SizeOption(uint64(len(data))))
				}
				frame := lz4Frame(t, data, opts...)
				t.Run(fmt.Sprintf("%s/%v/sums=%v", name, bs, sums), func(t *testing.T) {
					got, err := d.Decompress(frame, kgo.CodecLz4)
					if err != nil {
						t.Fatalf("Decompress: %v", err)
					}
					want, err := ref.Decompress(frame, kgo.CodecLz4)
					if err != nil {
						t.Fatalf("franz-go's Decompress: %v", err)
					}
					if !bytes.Equal(got, want) || !bytes.Equal(got, data) {
						t.Fatalf("decoded %d bytes, franz-go %d, written %d", len(got), len(want), len(data))
					}
					// The decoder itself, not the fallback, decoded it.
					if _, res := decodeLz4Frames(nil, frame, 1<<30); res != lz4Decoded {
						t.Fatalf("decodeLz4Frames = %d, want lz4Decoded", res)
					}
				})
			}
		}
	}
	two := append(lz4Frame(t, []byte("first frame ")), lz4Frame(t, []byte("second frame"), lz4.BlockSizeOption(lz4.Block64Kb))...)
	if got, err := d.Decompress(two, kgo.CodecLz4); err != nil || string(got) != "first frame second frame" {
		t.Fatalf("two frames: %q, %v", got, err)
	}
}

// TestLz4DecompressorFallsBack: what decodeLz4Frames does not decode goes
// to franz-go's decompressor, which decodes it (legacy frames) or returns
// its error (corrupt or truncated data); other codecs go there too.
func TestLz4DecompressorFallsBack(t *testing.T) {
	d := newLz4Decompressor()
	data := lz4Payloads()["json"]
	legacy := lz4Frame(t, data, lz4.LegacyOption(true))
	if _, res := decodeLz4Frames(nil, legacy, 1<<30); res != lz4Other {
		t.Fatalf("legacy frame: decodeLz4Frames = %d, want lz4Other", res)
	}
	if got, err := d.Decompress(legacy, kgo.CodecLz4); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("legacy frame: %d bytes, %v; want %d bytes", len(got), err, len(data))
	}

	frame := lz4Frame(t, data, lz4.BlockSizeOption(lz4.Block64Kb))
	corrupt := bytes.Clone(frame)
	for i := 20; i < len(corrupt)-8; i += 97 {
		corrupt[i] ^= 0x5a
	}
	for name, in := range map[string][]byte{
		"corrupt":   corrupt,
		"truncated": frame[:len(frame)/2],
		"header":    frame[:5],
		"empty":     {},
		"magic":     append([]byte{1, 2, 3, 4}, frame[4:]...),
	} {
		_, refErr := kgo.DefaultDecompressor().Decompress(in, kgo.CodecLz4)
		_, err := d.Decompress(in, kgo.CodecLz4)
		if (err == nil) != (refErr == nil) {
			t.Errorf("%s: error %v, franz-go's %v", name, err, refErr)
		}
		if err == nil && name != "empty" {
			t.Errorf("%s: decoded without an error", name)
		}
	}

	var gz bytes.Buffer
	comp, err := kgo.DefaultCompressor(kgo.GzipCompression())
	if err != nil {
		t.Fatal(err)
	}
	out, codec := comp.Compress(&gz, data)
	if codec != kgo.CodecGzip {
		t.Fatalf("compressed with %v", codec)
	}
	if got, err := d.Decompress(out, kgo.CodecGzip); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("gzip: %d bytes, %v", len(got), err)
	}
}

// TestLz4DecompressorBound: a batch decoding past the client's
// MaxDecompressBatchBytes fails with kgo.ErrMaxDecompress, stored and
// compressed blocks alike, as franz-go's own decompressor does.
func TestLz4DecompressorBound(t *testing.T) {
	d := newLz4Decompressor()
	d.setMax(1 << 20)
	zeros := lz4Frame(t, make([]byte, 2<<20))
	if _, err := d.Decompress(zeros, kgo.CodecLz4); !errors.Is(err, kgo.ErrMaxDecompress) {
		t.Fatalf("2 MiB of zeros under a 1 MiB bound: %v, want ErrMaxDecompress", err)
	}
	random := lz4Payloads()["random"]
	d.setMax(len(random) - 1)
	if _, err := d.Decompress(lz4Frame(t, random), kgo.CodecLz4); !errors.Is(err, kgo.ErrMaxDecompress) {
		t.Fatalf("stored blocks over the bound: %v, want ErrMaxDecompress", err)
	}
	d.setMax(len(random))
	if got, err := d.Decompress(lz4Frame(t, random), kgo.CodecLz4); err != nil || !bytes.Equal(got, random) {
		t.Fatalf("at the bound: %d bytes, %v", len(got), err)
	}
}

// TestLz4DecompressorSmallBatchSmallBuffer is the regression test of issue
// 22's 16 MB: a 20 KiB batch in a frame declaring 4 MiB blocks (as Go
// producers write them) is decoded with a buffer of 64 KiB, not one of
// 4 MiB, and the result holds only its bytes.
func TestLz4DecompressorSmallBatchSmallBuffer(t *testing.T) {
	data := lz4Payloads()["json"][:20<<10]
	frame := lz4Frame(t, data, lz4.BlockSizeOption(lz4.Block4Mb))
	if got := frame[5] >> 4; got != 7 {
		t.Fatalf("frame declares block size index %d, want 7 (4 MiB)", got)
	}
	out, res := decodeLz4Frames(nil, frame, 1<<30)
	if res != lz4Decoded || !bytes.Equal(out, data) {
		t.Fatalf("decodeLz4Frames: %d, %d bytes", res, len(out))
	}
	if cap(out) > 64<<10 {
		t.Fatalf("decoding buffer of %d bytes, want at most 64 KiB", cap(out))
	}
	d := newLz4Decompressor()
	got, err := d.Decompress(frame, kgo.CodecLz4)
	if err != nil || cap(got) != len(data) {
		t.Fatalf("Decompress: cap %d, %v; want %d", cap(got), err, len(data))
	}
}

// TestLz4DecompressorStoredBlockOverBlockSize: a stored block larger than
// the frame's block size is not decoded here (franz-go's reader refuses
// it).
func TestLz4DecompressorStoredBlockOverBlockSize(t *testing.T) {
	var f []byte
	f = binary.LittleEndian.AppendUint32(f, lz4FrameMagic)
	f = append(f, 0x60, 0x40, 0) // version 01, independent; 64 KiB blocks; header checksum (not checked)
	f = binary.LittleEndian.AppendUint32(f, lz4StoredBit|(64<<10+1))
	f = append(f, make([]byte, 64<<10+1)...)
	f = binary.LittleEndian.AppendUint32(f, 0)
	if _, res := decodeLz4Frames(nil, f, 1<<30); res != lz4Other {
		t.Fatalf("decodeLz4Frames = %d, want lz4Other", res)
	}
}

// BenchmarkLz4Decompress compares the decoders on JSON batches of 64 KiB
// and 1 MiB in frames of 4 MiB blocks (franz-go's producer) and of 64 KiB
// blocks (the Java producer's).
func BenchmarkLz4Decompress(b *testing.B) {
	js := lz4Payloads()["big"]
	for _, size := range []int{64 << 10, 1 << 20} {
		data := js[:size]
		for _, bs := range []lz4.BlockSize{lz4.Block4Mb, lz4.Block64Kb} {
			frame := lz4Frame(b, data, lz4.BlockSizeOption(bs))
			for name, d := range map[string]kgo.Decompressor{"kmirror": newLz4Decompressor(), "franz-go": kgo.DefaultDecompressor()} {
				b.Run(fmt.Sprintf("%dKiB/%v/%s", size>>10, bs, name), func(b *testing.B) {
					b.ReportAllocs()
					b.SetBytes(int64(len(data)))
					for b.Loop() {
						if _, err := d.Decompress(frame, kgo.CodecLz4); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// FuzzLz4Decompressor checks the decoder against franz-go's on any input:
// it never panics; when both decode, the bytes are the same; when only it
// decodes, franz-go refused a checksum or the content size (which it skips:
// the batch's CRC-32C covers those bytes); and when it fails, franz-go
// fails too (its errors are franz-go's).
func FuzzLz4Decompressor(f *testing.F) {
	js := lz4Payloads()["json"]
	for _, data := range [][]byte{js[:100], js[:5000], make([]byte, 70<<10), {}} {
		f.Add(lz4Frame(f, data, lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)))
		f.Add(lz4Frame(f, data, lz4.BlockSizeOption(lz4.Block4Mb), lz4.BlockChecksumOption(true), lz4.SizeOption(uint64(len(data)))))
	}
	f.Add(lz4Frame(f, js[:3000], lz4.LegacyOption(true)))
	d, ref := newLz4Decompressor(), kgo.DefaultDecompressor()
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := d.Decompress(in, kgo.CodecLz4)
		want, refErr := ref.Decompress(in, kgo.CodecLz4)
		switch {
		case err == nil && refErr == nil:
			if !bytes.Equal(got, want) {
				t.Fatalf("decoded %d bytes, franz-go %d, different", len(got), len(want))
			}
		case err == nil:
			if !errors.Is(refErr, lz4.ErrInvalidHeaderChecksum) && !errors.Is(refErr, lz4.ErrInvalidBlockChecksum) &&
				!errors.Is(refErr, lz4.ErrInvalidFrameChecksum) && !errors.Is(refErr, lz4.ErrInvalidContentSize) {
				t.Fatalf("decoded %d bytes where franz-go failed: %v", len(got), refErr)
			}
		case refErr == nil:
			t.Fatalf("failed (%v) where franz-go decoded %d bytes", err, len(want))
		}
	})
}

// BenchmarkLz4DecompressZeros: 8 MiB of zeros in 4 MiB blocks (each about
// 16 KiB compressed), the case where a block's first room is too small:
// only the first block of a batch retries.
func BenchmarkLz4DecompressZeros(b *testing.B) {
	data := make([]byte, 8<<20)
	frame := lz4Frame(b, data, lz4.BlockSizeOption(lz4.Block4Mb))
	for name, d := range map[string]kgo.Decompressor{"kmirror": newLz4Decompressor(), "franz-go": kgo.DefaultDecompressor()} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := d.Decompress(frame, kgo.CodecLz4); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
