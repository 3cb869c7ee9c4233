package mirror

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brkClientDecompressor is the decompressor a franz-go client bounded at n
// bytes (kgo.MaxDecompressBatchBytes) uses when no kgo.WithDecompressor is
// given: what the unit's consumer used before lz4Decompressor.
func brkClientDecompressor(t *testing.T, n int) kgo.Decompressor {
	t.Helper()
	cl, err := kgo.NewClient(kgo.MaxDecompressBatchBytes(n), kgo.SeedBrokers("127.0.0.1:1"), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return cl.OptValue(kgo.WithDecompressor).(kgo.Decompressor)
}

// TestBrkLz4BoundCoversEveryCodec: the client's MaxDecompressBatchBytes
// bounds every batch, not only the lz4 frames lz4Decompressor decodes
// itself. Installing a kgo.WithDecompressor takes franz-go's own bound away
// (the client rebuilds only its own decompressor with it), and the codecs
// handed on went to kgo.DefaultDecompressor(), bounded at math.MaxInt32:
// gzip, snappy, zstd and legacy lz4 batches decoded past the bound the
// consumer had before (1 GiB by default, or the user's).
func TestBrkLz4BoundCoversEveryCodec(t *testing.T) {
	const bound = 1 << 20
	data := make([]byte, 2*bound)
	inputs := map[string]struct {
		in    []byte
		codec kgo.CompressionCodecType
	}{"legacy lz4": {lz4Frame(t, data, lz4.LegacyOption(true)), kgo.CodecLz4}}
	for name, c := range map[string]kgo.CompressionCodec{"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(), "zstd": kgo.ZstdCompression()} {
		comp, err := kgo.DefaultCompressor(c)
		if err != nil {
			t.Fatal(err)
		}
		out, codec := comp.Compress(new(bytes.Buffer), data)
		inputs[name] = struct {
			in    []byte
			codec kgo.CompressionCodecType
		}{bytes.Clone(out), codec}
	}
	ref := brkClientDecompressor(t, bound)
	d := newLz4Decompressor()
	d.setMax(bound)
	for name, c := range inputs {
		if _, err := ref.Decompress(c.in, c.codec); !errors.Is(err, kgo.ErrMaxDecompress) {
			t.Fatalf("%s: the client's own decompressor: %v, want ErrMaxDecompress", name, err)
		}
		if got, err := d.Decompress(c.in, c.codec); !errors.Is(err, kgo.ErrMaxDecompress) {
			t.Errorf("%s: 2 MiB under a 1 MiB bound: %d bytes, %v; want ErrMaxDecompress", name, len(got), err)
		}
	}
	// Under the bound they still decode.
	d.setMax(len(data))
	for name, c := range inputs {
		if got, err := d.Decompress(c.in, c.codec); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s at the bound: %d bytes, %v", name, len(got), err)
		}
	}
}

// TestBrkLz4CompressedBlockOverBlockSize: a compressed (not stored) block
// whose size is over the frame's block size is refused as franz-go's
// reader refuses it (and as lz4's frame format says): here a 64 KiB frame
// holding one 65,794-byte compressed block (a single literal run) that
// decodes to 64 KiB.
func TestBrkLz4CompressedBlockOverBlockSize(t *testing.T) {
	hdr := lz4Frame(t, nil, lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false))
	hdr = hdr[:7]                                          // magic, FLG, BD, header checksum: franz-go checks it
	lit := bytes.Repeat([]byte("0123456789abcdef"), 4<<10) // 64 KiB
	block := []byte{0xF0}
	for rest := len(lit) - 15; ; rest -= 255 {
		if rest < 255 {
			block = append(block, byte(rest))
			break
		}
		block = append(block, 255)
	}
	block = append(block, lit...)
	if len(block) <= 64<<10 {
		t.Fatalf("block of %d bytes, want over 64 KiB", len(block))
	}
	if n, err := lz4.UncompressBlock(block, make([]byte, 64<<10)); err != nil || n != len(lit) {
		t.Fatalf("the block decodes to %d bytes, %v", n, err)
	}
	f := bytes.Clone(hdr)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(block)))
	f = append(f, block...)
	f = binary.LittleEndian.AppendUint32(f, 0)
	_, refErr := kgo.DefaultDecompressor().Decompress(f, kgo.CodecLz4)
	if refErr == nil {
		t.Fatal("franz-go decoded it")
	}
	got, err := newLz4Decompressor().Decompress(f, kgo.CodecLz4)
	if err == nil {
		t.Fatalf("decoded %d bytes where franz-go failed: %v", len(got), refErr)
	}
}
