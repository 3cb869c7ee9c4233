package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/verify"
	"github.com/kmirror/kmirror/policy"
)

// gap is a gap the runner reported (GapError on /status, or its "source
// gap" log line): source offsets [From, To) of Topic[Partition] were
// deleted before they were replicated.
type gap struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
}

func (g gap) String() string { return fmt.Sprintf("[%d]:[%d,%d)", g.Partition, g.From, g.To) }

func sortGaps(gs []gap) {
	sort.Slice(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		if a.From != b.From {
			return a.From < b.From
		}
		return a.To < b.To
	})
}

func gapsString(gs []gap) string {
	if len(gs) == 0 {
		return "none"
	}
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = g.String()
	}
	return strings.Join(s, " ")
}

// missing is one partition's missing source offsets from verify,
// half-open like a gap: [From, To).
type missing struct {
	Partition int32
	From, To  int64
}

func (m missing) String() string { return fmt.Sprintf("[%d]:[%d,%d)", m.Partition, m.From, m.To) }

// missingOf returns the missing ranges of a verify report, half-open,
// sorted by partition and offset; truncated reports the report cut a list.
func missingOf(rep *verify.Report) (out []missing, truncated bool) {
	for _, t := range rep.Topics {
		for _, p := range t.Partitions {
			truncated = truncated || p.DetailsTruncated
			for _, r := range p.MissingRanges {
				out = append(out, missing{Partition: p.Partition, From: r.From, To: r.To + 1})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].From < out[j].From
	})
	return out, truncated
}

// split counts the missing offsets covered by some gap of the same
// partition (inGap) and those covered by none (lost). The ledger has no
// transaction markers or compaction, so offsets and records coincide.
func split(ms []missing, gaps []gap) (lost, inGap int64) {
	for _, m := range ms {
		covered := coverage(m.Partition, m.From, m.To, gaps)
		inGap += covered
		lost += m.To - m.From - covered
	}
	return lost, inGap
}

// coverage counts the offsets of [from, to) that the union of partition
// p's gaps covers.
func coverage(p int32, from, to int64, gaps []gap) int64 {
	var ivs [][2]int64
	for _, g := range gaps {
		lo, hi := max(g.From, from), min(g.To, to)
		if g.Partition == p && lo < hi {
			ivs = append(ivs, [2]int64{lo, hi})
		}
	}
	slices.SortFunc(ivs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	var n, end int64 = 0, from
	for _, iv := range ivs {
		lo := max(iv[0], end)
		if iv[1] > lo {
			n += iv[1] - lo
			end = iv[1]
		}
	}
	return n
}

// sameRanges reports whether the missing ranges are exactly the gaps
// (partition, from, to), after merging adjacent gaps.
func sameRanges(ms []missing, gaps []gap) bool {
	merged := mergeGaps(gaps)
	if len(ms) != len(merged) {
		return false
	}
	for i, m := range ms {
		g := merged[i]
		if m.Partition != g.Partition || m.From != g.From || m.To != g.To {
			return false
		}
	}
	return true
}

// mergeGaps sorts gaps and merges overlapping or adjacent ones of a
// partition (a gap reported again by a later incarnation overlaps).
func mergeGaps(gs []gap) []gap {
	gs = slices.Clone(gs)
	sortGaps(gs)
	var out []gap
	for _, g := range gs {
		if g.From >= g.To {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Partition == g.Partition && g.From <= out[n-1].To {
			out[n-1].To = max(out[n-1].To, g.To)
			continue
		}
		out = append(out, g)
	}
	return out
}

// ledgerPolicy is the default replication policy, except that the
// ledger topic's remote topic is the stream's: verify compares the ledger
// (every record ever produced, none deleted) with the stream's copy.
type ledgerPolicy struct {
	*policy.Default
	ledger, remote string
}

func (p ledgerPolicy) FormatRemoteTopic(alias, topic string) string {
	if topic == p.ledger {
		return p.remote
	}
	return p.Default.FormatRemoteTopic(alias, topic)
}

// verifyLedger compares the whole ledger with the remote topic.
func (sc *scenario) verifyLedger(ctx context.Context) (*verify.Report, error) {
	def, err := policy.NewDefault()
	if err != nil {
		return nil, err
	}
	cfg := verify.Config{
		Source:      verify.Cluster{Alias: sc.src, Opts: []kgo.Opt{kgo.SeedBrokers(strings.Split(sc.s.srcDirect, ",")...)}},
		Target:      verify.Cluster{Alias: sc.dst, Opts: []kgo.Opt{kgo.SeedBrokers(strings.Split(sc.s.dstDirect, ",")...)}},
		Policy:      ledgerPolicy{Default: def, ledger: sc.ledger, remote: sc.remote},
		Topics:      []string{sc.ledger},
		ExactlyOnce: sc.m.eos,
		CatchUp:     30 * time.Second,
		MaxDetails:  1000,
		// Replays after a target outage longer than the group session
		// reach back to the last resume point stored, possibly before
		// a burst: far more than verify's default.
		MaxReplay: 300_000,
		Parallel:  3,
	}
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return verify.Run(vctx, cfg)
}

// marks say, per partition, where the previous verify stopped: the source
// end offset it compared up to and one past the last target offset it
// read. A row counts what lies past them, so consecutive rows add up even
// though their verify windows overlap.
type marks struct {
	end, tgt map[int32]int64
}

// evaluate fills a row from a verify report of the ledger: what was
// produced and replicated since the previous row, what is missing outside
// the reported gaps (lost), and every other difference. It returns the
// missing ranges that reach past the previous row, and the new marks.
func evaluate(r *row, rep *verify.Report, gaps []gap, eos bool, prev marks) ([]missing, marks) {
	t := rep.Totals
	next := marks{end: map[int32]int64{}, tgt: map[int32]int64{}}
	var produced, dups int64
	for _, tr := range rep.Topics {
		for _, p := range tr.Partitions {
			from := prev.end[p.Partition]
			next.end[p.Partition], next.tgt[p.Partition] = p.Source.End, p.Target.To
			produced += max(p.Source.End-from, 0)
			for _, rp := range p.Replays {
				lo, hi := max(rp.TargetOffset, prev.tgt[p.Partition]), rp.TargetOffset+rp.Records
				dups += max(hi-lo, 0)
			}
		}
	}
	all, truncated := missingOf(rep)
	var rowMs []missing // clipped to the records produced since the previous row
	var reaching []missing
	for _, m := range all {
		lo := max(m.From, prev.end[m.Partition])
		if lo < m.To {
			rowMs = append(rowMs, missing{Partition: m.Partition, From: lo, To: m.To})
			reaching = append(reaching, m)
		}
	}
	r.Produced, r.Duplicated = produced, dups
	r.Lost, r.InGap = split(rowMs, gaps)
	r.Replicated = produced - r.Lost - r.InGap
	if truncated {
		r.fail("verify cut its lists (more than 1000 missing ranges, replays, ...): the loss could not be located")
	}
	if lost, _ := split(all, gaps); lost > 0 {
		var outside []string
		for _, m := range all {
			if c := coverage(m.Partition, m.From, m.To, gaps); c < m.To-m.From {
				outside = append(outside, m.String())
			}
		}
		r.fail(fmt.Sprintf("LOST %d records outside any reported gap: %s (gaps: %s)", lost, strings.Join(outside, " "), gapsString(mergeGaps(gaps))))
	}
	if t.Altered+t.OutOfOrder+t.Unexpected > 0 {
		r.fail(fmt.Sprintf("%d altered, %d out of order, %d unexpected target records", t.Altered, t.OutOfOrder, t.Unexpected))
	}
	if eos && t.Duplicated > 0 {
		r.fail(fmt.Sprintf("%d duplicates in exactly-once mode", t.Duplicated))
	}
	if t.Errors > 0 {
		var errs []string
		for _, tr := range rep.Topics {
			if tr.Error != "" {
				errs = append(errs, tr.Error)
			}
			for _, p := range tr.Partitions {
				if p.Error != "" {
					errs = append(errs, fmt.Sprintf("[%d] %s", p.Partition, p.Error))
				}
			}
		}
		r.fail("verify could not compare everything: " + strings.Join(errs, "; "))
	}
	return reaching, next
}
