package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// injected is what a fault did.
type injected struct {
	start, end time.Time       // first injection, last one lifted (zero end: not lifted)
	expect     []gap           // retentionRace: the exact gaps expected
	gapTo      map[int32]int64 // retentionWhileDown: where each gap must end
	memory     bool            // check the RSS bound
	notes      []string
}

// inject runs fault f and returns when it is lifted.
func (sc *scenario) inject(ctx context.Context, f fault) (injected, error) {
	out := injected{start: time.Now()}
	var err error
	switch f.kind {
	case mirrorKill:
		// A random instant of the steady stream.
		if err = sleep(ctx, sc.between(500*time.Millisecond, 4*time.Second)); err != nil {
			return out, err
		}
		out.start = time.Now()
		var n string
		n, err = sc.killOne(ctx)
		out.notes = append(out.notes, n)
	case brokerRestart:
		var d time.Duration
		d, err = sc.s.restartBroker(ctx, f.side, f.signal)
		out.notes = append(out.notes, fmt.Sprintf("%s broker back after %.1fs", f.side, d.Seconds()))
	case linkCut:
		err = sc.cutLink(ctx, f.side, f.d, f.blackhole)
	case slowTarget:
		out.notes = append(out.notes, sc.slowTarget(ctx, f.d))
	case targetOutage:
		out.memory = true
		err = sc.targetOutage(ctx, f.d)
	case retentionRace:
		out.expect, err = sc.retentionRace(ctx)
	case retentionWhileDown:
		out.gapTo, err = sc.retentionWhileDown(ctx)
	case overlap:
		var notes []string
		notes, err = sc.overlap(ctx, f.parts)
		out.notes = append(out.notes, notes...)
	default:
		err = fmt.Errorf("unknown fault kind %d", f.kind)
	}
	out.end = time.Now()
	return out, err
}

// killOne SIGKILLs a random member and starts it again after a random
// pause of up to 2 s.
func (sc *scenario) killOne(ctx context.Context) (string, error) {
	m := sc.members[sc.rng.IntN(len(sc.members))]
	pid := m.pid()
	if err := m.kill(); err != nil {
		return "", err
	}
	pause := sc.between(0, 2*time.Second)
	if err := sleep(ctx, pause); err != nil {
		return "", err
	}
	return fmt.Sprintf("member %d (pid %d) SIGKILLed, started again after %.1fs", m.idx, pid, pause.Seconds()), m.start(ctx)
}

// cutLink cuts (or blackholes) one cluster's link for d.
func (sc *scenario) cutLink(ctx context.Context, sd side, d time.Duration, blackhole bool) error {
	p := sc.s.proxy[sd]
	if blackhole {
		p.Blackhole()
	} else {
		p.Cut()
	}
	defer p.Restore()
	return sleep(ctx, d)
}

// slowTarget throttles the target link for d and writes a burst of 1.25
// producer buffers to the source at its start.
func (sc *scenario) slowTarget(ctx context.Context, d time.Duration) string {
	p := sc.s.proxy[target]
	start := time.Now()
	p.Throttle(slowTargetRate)
	defer p.Throttle(0)
	sc.prod.burst(ctx, maxBufferedBytes*5/4)
	_ = sleep(ctx, time.Until(start.Add(d)))
	return fmt.Sprintf("target link at %d KiB/s for %s; a burst of %d MiB on the source; producer buffer %d MiB (target.producer.buffer.memory, split between the units)",
		slowTargetRate>>10, secs(d), maxBufferedBytes*5/4>>20, maxBufferedBytes>>20)
}

// targetOutage cuts the target link for d and writes a burst of 1.25 times
// what the runner may buffer to the source at its start.
func (sc *scenario) targetOutage(ctx context.Context, d time.Duration) error {
	p := sc.s.proxy[target]
	start := time.Now()
	p.Cut()
	defer p.Restore()
	sc.prod.burst(ctx, dataBound(int(sc.parts))*5/4)
	return sleep(ctx, time.Until(start.Add(d)))
}

// deleteRecords deletes stream records below offs (partition -> offset)
// and records the offsets, so that gaps there are expected.
func (sc *scenario) deleteRecords(ctx context.Context, offs map[int32]int64) error {
	req := kadm.Offsets{}
	for p, o := range offs {
		req.Add(kadm.Offset{Topic: sc.stream, Partition: p, At: o, LeaderEpoch: -1})
	}
	sc.mu.Lock()
	for p, o := range offs {
		sc.deleted[p] = max(sc.deleted[p], o)
	}
	sc.mu.Unlock()
	sc.lastDelete = time.Now()
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := sc.s.srcAdm.DeleteRecords(actx, req)
	if err != nil {
		return fmt.Errorf("DeleteRecords: %w", err)
	}
	for p, o := range offs {
		r, ok := resp.Lookup(sc.stream, p)
		switch {
		case !ok:
			return fmt.Errorf("DeleteRecords: no answer for partition %d", p)
		case r.Err != nil:
			return fmt.Errorf("DeleteRecords partition %d: %w", p, r.Err)
		case r.LowWatermark != o:
			return fmt.Errorf("DeleteRecords partition %d: log start %d, want %d", p, r.LowWatermark, o)
		}
	}
	return nil
}

// pickPartitions returns n distinct random partitions, sorted.
func (sc *scenario) pickPartitions(n int) []int32 {
	perm := sc.rng.Perm(int(sc.parts))[:n]
	out := make([]int32, n)
	for i, p := range perm {
		out[i] = int32(p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// waitEnds waits until the stream's end offset of each partition in
// parts is at least min[p].
func (sc *scenario) waitEnds(ctx context.Context, parts []int32, want map[int32]int64) (map[int32]int64, error) {
	for {
		ends, err := sc.ends(ctx, sc.stream)
		if err != nil {
			return nil, err
		}
		ok := true
		for _, p := range parts {
			ok = ok && ends[p] >= want[p]
		}
		if ok {
			return ends, nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// retentionRace: cut the source link, read the runner's position once it
// is stable, let the source run ahead, delete records between the
// position and the source end on two partitions, restore the link, and
// wait for the gaps. The expected gap of partition p is exactly
// [position, deleted-up-to).
func (sc *scenario) retentionRace(ctx context.Context) ([]gap, error) {
	px := sc.s.proxy[source]
	px.Cut()
	restored := false
	defer func() {
		if !restored {
			px.Restore()
		}
	}()
	var pos map[int32]int64
	stable := 0
	deadline := time.Now().Add(60 * time.Second)
	for stable < 4 {
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
		cur, all := sc.positions(ctx)
		if all && pos != nil && mapsEqual(cur, pos) {
			stable++
		} else {
			stable = 0
		}
		pos = cur
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the runner's positions did not settle within 60s of the source cut: %v", pos)
		}
	}
	parts := sc.pickPartitions(2)
	want := map[int32]int64{}
	for _, p := range parts {
		want[p] = pos[p] + 2*raceRecords
	}
	if _, err := sc.waitEnds(ctx, parts, want); err != nil {
		return nil, err
	}
	offs := map[int32]int64{}
	var expect []gap
	for _, p := range parts {
		offs[p] = pos[p] + raceRecords + sc.rng.Int64N(raceRecords)
		expect = append(expect, gap{Topic: sc.stream, Partition: p, From: pos[p], To: offs[p]})
	}
	if err := sc.deleteRecords(ctx, offs); err != nil {
		return nil, err
	}
	px.Restore()
	restored = true
	return expect, sc.waitGaps(ctx, func(seen []gap) bool {
		for _, e := range expect {
			found := false
			for _, g := range seen {
				found = found || (g.Partition == e.Partition && g.To >= e.To)
			}
			if !found {
				return false
			}
		}
		return true
	})
}

// retentionWhileDown: SIGKILL every runner, let the source run ahead,
// delete records past anything replicated on two partitions, start the
// runners again and wait for gaps ending at the deleted offsets.
func (sc *scenario) retentionWhileDown(ctx context.Context) (map[int32]int64, error) {
	for _, m := range sc.members {
		if err := m.kill(); err != nil {
			return nil, err
		}
	}
	atKill, err := sc.ends(ctx, sc.stream)
	if err != nil {
		return nil, err
	}
	parts := sc.pickPartitions(2)
	want := map[int32]int64{}
	for _, p := range parts {
		want[p] = atKill[p] + 2*raceRecords
	}
	ends, err := sc.waitEnds(ctx, parts, want)
	if err != nil {
		return nil, err
	}
	offs := map[int32]int64{}
	for _, p := range parts {
		offs[p] = ends[p] - raceRecords // above every offset replicated before the kill
	}
	if err := sc.deleteRecords(ctx, offs); err != nil {
		return nil, err
	}
	if err := sleep(ctx, sc.between(0, time.Second)); err != nil {
		return nil, err
	}
	for _, m := range sc.members {
		if err := m.start(ctx); err != nil {
			return nil, err
		}
	}
	return offs, sc.waitGaps(ctx, func(seen []gap) bool {
		for p, to := range offs {
			found := false
			for _, g := range seen {
				found = found || (g.Partition == p && g.To == to)
			}
			if !found {
				return false
			}
		}
		return true
	})
}

// waitGaps waits until done holds for the gaps seen since the fault
// started.
func (sc *scenario) waitGaps(ctx context.Context, done func([]gap) bool) error {
	deadline := time.Now().Add(gapTimeout)
	for {
		sc.mu.Lock()
		seen := append([]gap(nil), sc.newGaps...)
		sc.mu.Unlock()
		if done(seen) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the runner reported no gap for the deleted records within %s (seen: %s)", gapTimeout, gapsString(seen))
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// overlap runs the parts of an overlapping fault, each in its own
// goroutine at its offset, and returns when all are done.
func (sc *scenario) overlap(ctx context.Context, parts []overlapPart) ([]string, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		notes []string
		errs  []error
	)
	start := time.Now()
	for _, p := range parts {
		wg.Add(1)
		go func() { // owner: this call; joined below
			defer wg.Done()
			if err := sleep(ctx, time.Until(start.Add(p.at))); err != nil {
				return
			}
			var note string
			var err error
			switch p.kind {
			case mirrorKill:
				note, err = sc.killOne(ctx)
			case brokerRestart:
				var d time.Duration
				d, err = sc.s.restartBroker(ctx, p.side, p.signal)
				note = fmt.Sprintf("%s broker SIG%s, back after %.1fs", p.side, p.signal, d.Seconds())
			case linkCut:
				err = sc.cutLink(ctx, p.side, p.d, p.black)
			case slowTarget:
				note = sc.slowTarget(ctx, p.d)
			default:
				err = fmt.Errorf("overlap part of kind %d not supported", p.kind)
			}
			mu.Lock()
			defer mu.Unlock()
			if note != "" {
				notes = append(notes, fmt.Sprintf("from %.1fs to %.1fs: %s", p.at.Seconds(), time.Since(start).Seconds(), note))
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return notes, errors.Join(errs...)
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
