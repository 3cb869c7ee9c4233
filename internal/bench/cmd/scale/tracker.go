package main

import (
	"sync"
	"time"

	"github.com/kmirror/kmirror/checkpoint"
)

// tpKey is a remote topic partition.
type tpKey struct {
	topic     string
	partition int32
}

type cpKey struct {
	group string
	tp    tpKey
}

// tracker follows the checkpoints topic of one run: the last checkpoint
// per group partition, when every group partition had one, and when every
// one reached the commit wave's offset.
type tracker struct {
	mu      sync.Mutex
	total   int
	last    map[cpKey]checkpoint.Checkpoint
	allAt   time.Time // every group partition has a checkpoint
	lastRec time.Time // the last checkpoint record read
	n       int       // records read

	waveUp int64 // the wave's source offset, -1 before the wave
	waveN  int   // group partitions whose checkpoint is at waveUp
	waveAt time.Time
}

func newTracker(sh shape, _, _ []string) *tracker {
	return &tracker{total: sh.groupPartitions(), last: map[cpKey]checkpoint.Checkpoint{}, waveUp: -1, lastRec: time.Now()}
}

func (t *tracker) add(cp checkpoint.Checkpoint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.n++
	t.lastRec = now
	k := cpKey{cp.Group, tpKey{cp.Topic, cp.Partition}}
	old, had := t.last[k]
	t.last[k] = cp
	if !had && len(t.last) == t.total && t.allAt.IsZero() {
		t.allAt = now
	}
	if t.waveUp >= 0 {
		if (!had || old.UpstreamOffset != t.waveUp) && cp.UpstreamOffset == t.waveUp {
			t.waveN++
		} else if had && old.UpstreamOffset == t.waveUp && cp.UpstreamOffset != t.waveUp {
			t.waveN--
		}
		if t.waveN == t.total && t.waveAt.IsZero() {
			t.waveAt = now
		}
	}
}

// checkpointed returns the group partitions with a checkpoint and when
// the last of them got its first.
func (t *tracker) checkpointed() (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.last), t.allAt
}

// startWave starts counting the checkpoints at source offset up.
func (t *tracker) startWave(up int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waveUp, t.waveN = up, 0
	for _, cp := range t.last {
		if cp.UpstreamOffset == up {
			t.waveN++
		}
	}
}

// waveDone returns when every group partition's checkpoint reached the
// wave's offset.
func (t *tracker) waveDone() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waveAt, !t.waveAt.IsZero()
}

// waveTargets returns, once the wave is in every checkpoint, the
// downstream offset of each group partition's checkpoint by group.
func (t *tracker) waveTargets() (map[string]map[tpKey]int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waveAt.IsZero() {
		return nil, false
	}
	out := map[string]map[tpKey]int64{}
	for k, cp := range t.last {
		if out[k.group] == nil {
			out[k.group] = map[tpKey]int64{}
		}
		out[k.group][k.tp] = cp.DownstreamOffset
	}
	return out, true
}

func (t *tracker) lastRecord() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastRec
}

func (t *tracker) records() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}
