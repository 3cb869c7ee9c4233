package mirror

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
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

// brkCorruptLz4 is a producer's lz4 compressor that flips a byte of
// target in the frame it writes (target being stored as a literal run):
// the batch's CRC-32C is computed over the corrupt frame, whose checksums
// (franz-go writes a content checksum) no longer match.
type brkCorruptLz4 struct {
	inner  kgo.Compressor
	target []byte
	hit    *atomic.Bool
}

func (c brkCorruptLz4) Compress(dst *bytes.Buffer, src []byte, flags ...kgo.CompressFlag) ([]byte, kgo.CompressionCodecType) {
	out, codec := c.inner.Compress(dst, src, flags...)
	if codec == kgo.CodecLz4 {
		if i := bytes.Index(out, c.target); i >= 0 {
			out[i+len(c.target)/2] ^= 0x20
			c.hit.Store(true)
		}
	}
	return out, codec
}

// TestBrkLz4UncheckedCRCVerifiesFrames: with the consumer's CRC-32C check
// off (check.crcs=false, kgo.DisableFetchCRCValidation, which clientconf
// maps), nothing covers the lz4 bytes but the frame's own checksums, which
// lz4Decompressor skips: a corrupt frame that franz-go's decoder refuses
// (content checksum) was decoded and its wrong value replicated. With the
// check off, lz4 batches go to franz-go's decoder, which verifies them.
func TestBrkLz4UncheckedCRCVerifiesFrames(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("crc")
	remote := p.Source.Alias + "." + topic
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 1000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	sent := map[string]bool{}
	produce := func(comp kgo.Compressor, values ...[]byte) {
		cl := testcluster.Client(t, &p.Source, kgo.WithCompressor(comp), kgo.ProducerLinger(100*time.Millisecond))
		defer cl.Close()
		var rs []*kgo.Record
		for _, v := range values {
			rs = append(rs, &kgo.Record{Topic: topic, Value: v})
			sent[string(v)] = true
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	lz, err := kgo.DefaultCompressor(kgo.Lz4Compression())
	if err != nil {
		t.Fatal(err)
	}
	produce(lz, bytes.Repeat([]byte("good "), 1000))
	hit := new(atomic.Bool)
	produce(brkCorruptLz4{lz, random[400:432], hit}, bytes.Repeat([]byte("a"), 5000), random)
	if !hit.Load() {
		t.Fatal("the corrupting compressor did not find the value in its frame")
	}

	fc := recoveryFlow(p, topic)
	m, _ := runMirror(t, WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts(), Consumer: []kgo.Opt{kgo.DisableFetchCRCValidation()}}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}), WithFlow(fc), withPartRetryFirst(200*time.Millisecond))
	// The first batch arrives; then the corrupt one is either replicated
	// (the defect) or refused with franz-go's checksum error.
	testcluster.Eventually(t, 30*time.Second, "corrupt batch replicated or refused", func() (bool, string) {
		st := partStatus(m, 0)
		return st.Replicated >= 3 || (st.Replicated == 1 && strings.Contains(st.Error, "checksum")), fmt.Sprintf("%+v", st)
	})
	got, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), remote, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range got[0] {
		if !sent[string(rec.Value)] {
			t.Errorf("target offset %d: a value the producer never sent (%d bytes, decoded from a corrupt lz4 frame)", rec.Offset, len(rec.Value))
		}
	}
}
