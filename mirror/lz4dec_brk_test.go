package mirror

import (
	"bytes"
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
