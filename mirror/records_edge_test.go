package mirror

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestCompactedOddRecordsCopiedExactly: a compacted source partition of
// tombstones, empty values and keys, repeated headers (null and empty
// values) and an earlier hop's provenance header, compacted before the copy
// (offset holes: 8 records left of 60), is copied record for record in every
// mode: null and empty keys and values kept apart, headers in order,
// timestamps kept.
func TestCompactedOddRecordsCopiedExactly(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"alo", "eos", "shallow"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst")
			if p.Source.Fake == nil {
				t.Skip("compacts with kfake's Compact")
			}
			topic := p.Topic("odd")
			remote := p.Source.Alias + "." + topic
			testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"cleanup.policy": strp("compact"), "delete.retention.ms": strp("0")})
			ts := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
			var rs []*kgo.Record
			for i := range 60 {
				r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("k", i%7)), Value: []byte(fmt.Sprint("v", i)), Timestamp: ts.Add(time.Duration(i) * time.Millisecond)}
				switch i % 5 {
				case 1:
					r.Value = nil
				case 2:
					r.Value = []byte{}
				case 3:
					r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: nil}, {Key: ProvenanceHeader, Value: []byte("other-cluster,#3")}, {Key: "h", Value: []byte{}}}
				case 4:
					r.Key = []byte{}
				}
				rs = append(rs, r)
			}
			for _, r := range rs {
				testcluster.Produce(t, &p.Source, r)
			}
			p.Source.Fake.Compact()
			src := testcluster.ReadAll(t, &p.Source, topic)[0]
			if len(src) != 8 || src[0].Offset != 47 {
				t.Fatalf("source after compaction: %d records at %v, want 8 from offset 47 (holes)", len(src), offsetsOf(src))
			}
			m := runEdgeMode(t, p, topic, mode)
			testcluster.Eventually(t, 30*time.Second, "replicated", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.Replicated == 60 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
			})
			got := testcluster.ReadAll(t, &p.Target, remote)[0]
			if mode == "shallow" {
				if diff := cmp.Diff(recsOf(src), recsOf(got)); diff != "" {
					t.Errorf("diff:\n%s", diff)
				}
			} else if len(got) != len(src) {
				t.Fatalf("target %d, src %d", len(got), len(src))
			} else if diff := cmp.Diff(stripProv(recsOf(src)), stripProv(recsOf(got))); diff != "" {
				t.Errorf("diff:\n%s", diff)
			}
		})
	}
}

func stripProv(rs []rec) []rec {
	out := make([]rec, len(rs))
	for i, r := range rs {
		var h []kgo.RecordHeader
		for _, x := range r.Headers {
			if x.Key != ProvenanceHeader {
				h = append(h, x)
			}
		}
		r.Headers = h
		out[i] = r
	}
	return out
}

// TestDeleteRecordsWhileFailedTooLarge: a partition FAILED on a record too
// large for the remote topic (offset 3) while a group commits at 8; the
// source deletes records up to 6 while it waits; once the limit is raised
// and the partition restarted, it resumes at the log start with the loss
// reported as a gap [3, 6), the target holds exactly the records left, and
// the group is translated to the target offset of source offset 8.
func TestDeleteRecordsWhileFailedTooLarge(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("delfail")
	remote := p.Source.Alias + "." + topic
	limit := "3145728"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
	big := randomBytes(1536*1024, 9)
	var rs []*kgo.Record
	for i := range 10 {
		v := []byte(fmt.Sprint("v", i))
		if i == 3 {
			v = big
		}
		rs = append(rs, &kgo.Record{Topic: topic, Value: v})
	}
	produceLarge(t, &p.Source, rs...)
	fc := trFlow(p)
	fc.Topics = []string{topic}
	fc.ConfigPropertiesExclude = append(append([]string{}, DefaultConfigPropertiesExclude...), `max\.message\.bytes`)
	g := p.Group("g")
	m, _ := trStart(t, p, fc)
	testcluster.Eventually(t, 30*time.Second, "FAILED at 3", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && ps.Replicated == 3, fmt.Sprintf("%+v", ps)
	})
	trCommit(t, &p.Source, g, topic, map[int32]int64{0: 8})
	testcluster.Eventually(t, 30*time.Second, "group translated while FAILED", func() (bool, string) {
		got, ok := committed(t, &p.Target, g, remote)[0]
		return ok && got == 3, fmt.Sprint(got, ok) // the target's end: nothing after offset 3 is there
	})
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 6})
	if _, err := testcluster.Admin(t, &p.Source).DeleteRecords(context.Background(), os); err != nil {
		t.Fatal(err)
	}
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: topic, Value: []byte("v10")})
	setTopicConfig(t, &p.Target, remote, "max.message.bytes", "4194304")
	if n, err := m.RestartFailed(p.Source.Alias+"->"+p.Target.Alias, topic, 0); n > 1 || err != nil {
		t.Fatalf("RestartFailed = %d, %v; want 1 (or 0 once restarted by the raised limit), nil", n, err)
	}
	testcluster.Eventually(t, 30*time.Second, "replicated after the restart", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateRunning && ps.Replicated == 11 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
	})
	var vals []string
	for _, r := range testcluster.ReadAll(t, &p.Target, remote)[0] {
		vals = append(vals, describeValue(r.Value))
	}
	if want := []string{"v0", "v1", "v2", "v6", "v7", "v8", "v9", "v10"}; !equalStrings(vals, want) {
		t.Errorf("target holds %v, want exactly %v", vals, want)
	}
	gaps := m.Status().Flows[0].Gaps
	if len(gaps) != 1 || gaps[0].From != 3 || gaps[0].To != 6 {
		t.Errorf("gaps %+v, want exactly one, [3, 6)", gaps)
	}
	testcluster.Eventually(t, 30*time.Second, "group translated to v8's target offset", func() (bool, string) {
		got, ok := committed(t, &p.Target, g, remote)[0]
		return ok && got == 5, fmt.Sprint(got, ok) // v8 is at target offset 5
	})
}

// TestLogAppendTimeSourceCopied: records of a LogAppendTime source topic
// are copied with the timestamps the source stored (its append times, not
// the producer's), as CreateTime records, in every mode.
func TestLogAppendTimeSourceCopied(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"alo", "eos", "shallow"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("lat")
			remote := p.Source.Alias + "." + topic
			testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"message.timestamp.type": strp("LogAppendTime")})
			old := time.Now().Add(-48 * time.Hour)
			for i := range 5 {
				testcluster.Produce(t, &p.Source, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i)), Timestamp: old}, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("b", i)), Timestamp: old.Add(time.Hour)})
				time.Sleep(20 * time.Millisecond)
			}
			m := runEdgeMode(t, p, topic, mode)
			testcluster.Eventually(t, 30*time.Second, "replicated", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.Replicated == 10 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
			})
			src := testcluster.ReadAll(t, &p.Source, topic)[0]
			got := testcluster.ReadAll(t, &p.Target, remote)[0]
			if diff := cmp.Diff(stripProv(recsOf(src)), stripProv(recsOf(got))); diff != "" {
				t.Errorf("diff:\n%s", diff)
			}
			for _, r := range got {
				if r.Attrs.TimestampType() != 0 {
					t.Errorf("target record at %d has timestamp type %d", r.Offset, r.Attrs.TimestampType())
				}
			}
		})
	}
}

// TestMixedCodecsAndAbortedTransactions: one source partition of batches
// in every codec, some in committed and some in aborted transactions, some
// outside any: a read_committed reader of the target sees exactly the
// committed records in order, in every mode.
func TestMixedCodecsAndAbortedTransactions(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"alo", "eos", "shallow"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("mix")
			remote := p.Source.Alias + "." + topic
			testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
			codecs := []kgo.CompressionCodec{kgo.GzipCompression(), kgo.NoCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
			n := 0
			for round := range 3 {
				for ci, c := range codecs {
					txn := (round+ci)%2 == 0
					opts := []kgo.Opt{kgo.ProducerBatchCompression(c)}
					if txn {
						opts = append(opts, kgo.TransactionalID(p.Topic(fmt.Sprintf("tx-%s-%d-%d", mode, round, ci))))
					}
					cl := testcluster.Client(t, &p.Source, opts...)
					if txn {
						if err := cl.BeginTransaction(); err != nil {
							t.Fatal(err)
						}
					}
					var rs []*kgo.Record
					for i := range 20 {
						rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("k", i)), Value: bytesRepeat(fmt.Sprintf("r%d-c%d-%d-", round, ci, i), 20)})
					}
					if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
						t.Fatal(err)
					}
					if txn {
						commit := kgo.TryCommit
						if ci == 2 || round == 1 {
							commit = kgo.TryAbort
						} else {
							n += 20
						}
						if err := cl.EndTransaction(context.Background(), commit); err != nil {
							t.Fatal(err)
						}
					} else {
						n += 20
					}
					cl.Close()
				}
			}
			m := runEdgeMode(t, p, topic, mode)
			// 300 records and 8 transaction markers. A real coordinator
			// writes the last marker after EndTransaction returns: the
			// end is read until it is there (CI: the end was read as 307
			// and the flow replicated 308).
			const wantEnd = 308
			testcluster.Eventually(t, 10*time.Second, "source end", func() (bool, string) {
				e := endOffsets(t, &p.Source, topic)[0]
				return e == wantEnd, fmt.Sprint(e)
			})
			end := int64(wantEnd)
			testcluster.Eventually(t, 30*time.Second, "replicated", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.Replicated == end && ps.Lag == 0, fmt.Sprintf("%+v", ps)
			})
			src, err := testcluster.ReadTopic(context.Background(), p.Source.Opts(), topic, true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), remote, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(src[0]) != n {
				t.Fatalf("source committed %d, want %d", len(src[0]), n)
			}
			if diff := cmp.Diff(stripProv(recsOf(src[0])), stripProv(recsOf(got[0]))); diff != "" {
				t.Errorf("diff:\n%s", diff)
			}
			t.Logf("%s: %d records, source end %d, target end %d, flow %+v", mode, n, end, endOffsets(t, &p.Target, remote)[0], m.Status().Flows[0].Gaps)
		})
	}
}

func bytesRepeat(s string, n int) []byte {
	var b []byte
	for range n {
		b = append(b, s...)
	}
	return b
}

// runEdgeMode runs recoveryFlow on topic in mode: "alo" (at least once),
// "eos" (exactly once) or "shallow" (shallow copy, no provenance header).
func runEdgeMode(t *testing.T, p *testcluster.Pair, topic, mode string) *Mirror {
	t.Helper()
	fc := recoveryFlow(p, topic)
	switch mode {
	case "eos":
		fc.ExactlyOnce = true
	case "shallow":
		fc.ShallowCopy, fc.DisableProvenanceHeader = true, true
	}
	m, _ := runMirror(t, recoveryOpts(p, fc)...)
	return m
}

// TestRecordWithoutTimestampKept: a source record without a timestamp (-1,
// as a message-format v0 record converted by the broker, or a producer
// that wrote none) is copied with -1, in every mode: its timestamp is kept
// as the source stored it, as every other record's is. A deliberate
// difference from MM2, which gives such a record the time of its
// replication (a helper trying to break the record limits asked).
func TestRecordWithoutTimestampKept(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"alo", "eos", "shallow"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst")
			topic := p.Topic("nots")
			remote := p.Source.Alias + "." + topic
			testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
			// A recent timestamp beside it: the test brokers check
			// retention (7 days) every second and would delete an old one.
			some := time.Now().Add(-time.Hour).UnixMilli()
			testcluster.Produce(t, &p.Source, &kgo.Record{Topic: topic, Value: []byte("none"), Timestamp: time.UnixMilli(-1)},
				&kgo.Record{Topic: topic, Value: []byte("some"), Timestamp: time.UnixMilli(some)})
			src := testcluster.ReadAll(t, &p.Source, topic)[0]
			if len(src) != 2 || src[0].Timestamp.UnixMilli() != -1 {
				t.Fatalf("source records %+v: want the first without a timestamp (-1)", src)
			}
			m := runEdgeMode(t, p, topic, mode)
			testcluster.Eventually(t, 30*time.Second, "replicated", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.Replicated == 2 && ps.Lag == 0, fmt.Sprintf("%+v", ps)
			})
			got := testcluster.ReadAll(t, &p.Target, remote)[0]
			var ts []int64
			for _, r := range got {
				ts = append(ts, r.Timestamp.UnixMilli())
			}
			if !slices.Equal(ts, []int64{-1, some}) {
				t.Errorf("target timestamps %v, want [-1 %d] as on the source", ts, some)
			}
		})
	}
}
