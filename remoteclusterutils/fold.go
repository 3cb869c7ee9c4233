package remoteclusterutils

import (
	"cmp"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
)

// ReadStats describes one read of a checkpoints topic: which offsets were
// read and how many records were used or skipped. All counts are records.
type ReadStats struct {
	// Topic is the checkpoints topic that was read (partition 0 only).
	Topic string
	// StartOffset is the log start offset of partition 0 at the call.
	StartOffset int64
	// EndOffset is the end offset observed at the call (exclusive; the last
	// stable offset, see the package documentation). Records at or after
	// it are not read.
	EndOffset int64
	// Records is the number of records read in [StartOffset, EndOffset)
	// (compaction and transaction markers make it smaller than the range).
	Records int
	// Checkpoints is the number of records decoded as valid checkpoints,
	// for every group (so it can exceed the size of one group's result).
	Checkpoints int
	// Undecodable counts skipped records with a nil key or a key or value
	// that does not parse with the v0 layout (Java MirrorClient: a
	// SchemaException, logged and skipped).
	Undecodable int
	// Tombstones counts records with a nil value and a decodable key. Each
	// removes the earlier checkpoint of its (group, topic, partition), the
	// state log compaction converges to (Java MirrorClient throws instead).
	Tombstones int
	// Invalid counts skipped records that decode but cannot be used: a
	// negative downstream offset (Java MirrorClient throws
	// IllegalArgumentException), a negative partition or an empty topic
	// (Java returns those as they are). The earlier checkpoint of the same
	// key, if any, stays in effect.
	Invalid int
	// UnknownVersion counts records whose value version is not 0; they are
	// parsed with the v0 layout, trailing bytes ignored, and used (as Java
	// does). They are also counted in Checkpoints, or in Invalid when the
	// parsed checkpoint cannot be used.
	UnknownVersion int
}

// Skipped returns the number of records that were not used:
// Undecodable + Tombstones + Invalid.
func (s ReadStats) Skipped() int { return s.Undecodable + s.Tombstones + s.Invalid }

// ckey identifies a checkpoint: last record in log order wins per ckey.
type ckey struct {
	group, topic string
	partition    int32
}

// folder folds checkpoint records, in log order, into the latest valid
// checkpoint per (group, topic, partition). It is pure: no I/O.
type folder struct {
	group  string // only this group, unless all
	all    bool
	latest map[ckey]checkpoint.Checkpoint
	meta   map[ckey]cpMeta // of latest's records, when read with addRecord
	stats  ReadStats
	log    *slog.Logger // nil: no per-record logging
}

// cpMeta is what a checkpoint record carries besides MM2's key and value.
type cpMeta struct {
	at          time.Time // the record's timestamp
	translation string    // its checkpoint.TranslationHeader, "" when absent
	from        [16]byte  // its checkpoint.TranslatedFromHeader, zero when absent
}

func newFolder(group string, all bool, log *slog.Logger) *folder {
	return &folder{group: group, all: all, latest: make(map[ckey]checkpoint.Checkpoint), meta: make(map[ckey]cpMeta), log: log}
}

// reset forgets everything folded, to fold a topic again from its start.
func (f *folder) reset() {
	f.latest, f.meta, f.stats = make(map[ckey]checkpoint.Checkpoint), make(map[ckey]cpMeta), ReadStats{}
}

// addRecord folds r with its timestamp, translation and translated-from
// headers.
func (f *folder) addRecord(r *kgo.Record) {
	k, ok := f.add(r.Offset, r.Key, r.Value)
	if !ok {
		return
	}
	m := cpMeta{at: r.Timestamp}
	for _, h := range r.Headers {
		switch {
		case h.Key == checkpoint.TranslationHeader:
			m.translation = string(h.Value)
		case h.Key == checkpoint.TranslatedFromHeader && len(h.Value) == len(m.from):
			copy(m.from[:], h.Value)
		}
	}
	f.meta[k] = m
}

func (f *folder) wants(group string) bool { return f.all || group == f.group }

// add folds one record at offset of the checkpoints topic; ok reports a
// checkpoint of a wanted group kept under k.
func (f *folder) add(offset int64, key, value []byte) (k ckey, ok bool) {
	f.stats.Records++
	c, err := checkpoint.DecodeCheckpoint(key, value)
	if errors.Is(err, checkpoint.ErrUnknownVersion) {
		// Counted whether or not the checkpoint is then usable (it may
		// also have a negative downstream offset: errors.Join).
		f.stats.UnknownVersion++
		if f.log != nil {
			f.log.Debug("checkpoint record with an unknown version parsed with the v0 layout",
				"offset", offset, "err", err)
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, checkpoint.ErrTombstone):
		kc, kerr := checkpoint.DecodeCheckpointKey(key)
		if kerr != nil {
			f.skip(offset, &f.stats.Undecodable, "tombstone with an undecodable key", kerr)
			return k, false
		}
		f.stats.Tombstones++
		f.note(offset, "tombstone: removes the earlier checkpoint of its key", nil)
		if f.wants(kc.Group) {
			delete(f.latest, ckey{kc.Group, kc.Topic, kc.Partition})
			delete(f.meta, ckey{kc.Group, kc.Topic, kc.Partition})
		}
		return k, false
	case errors.Is(err, checkpoint.ErrNullKey), errors.Is(err, checkpoint.ErrMalformed):
		f.skip(offset, &f.stats.Undecodable, "undecodable checkpoint record", err)
		return k, false
	case errors.Is(err, checkpoint.ErrNegativeOffset):
		f.skip(offset, &f.stats.Invalid, "negative downstream offset", err)
		return k, false
	case errors.Is(err, checkpoint.ErrUnknownVersion):
		// Counted above; the checkpoint is used.
	default:
		f.skip(offset, &f.stats.Undecodable, "undecodable checkpoint record", err)
		return k, false
	}
	if c.Partition < 0 || c.Topic == "" {
		f.skip(offset, &f.stats.Invalid, "negative partition or empty topic", nil)
		return k, false
	}
	f.stats.Checkpoints++
	if !f.wants(c.Group) {
		return k, false
	}
	k = ckey{c.Group, c.Topic, c.Partition}
	f.latest[k] = c
	delete(f.meta, k)
	return k, true
}

func (f *folder) skip(offset int64, counter *int, reason string, err error) {
	*counter++
	f.note(offset, reason, err)
}

func (f *folder) note(offset int64, reason string, err error) {
	if f.log == nil {
		return
	}
	if err != nil {
		f.log.Debug("skipping checkpoint record", "offset", offset, "reason", reason, "err", err)
	} else {
		f.log.Debug("checkpoint record", "offset", offset, "reason", reason)
	}
}

// offsets returns the folded checkpoints of f.group as kadm offsets.
func (f *folder) offsets() Offsets {
	out := make(Offsets)
	for k, c := range f.latest {
		if k.group != f.group {
			continue
		}
		ps := out[c.Topic]
		if ps == nil {
			ps = make(map[int32]kadm.Offset)
			out[c.Topic] = ps
		}
		ps[c.Partition] = offsetOf(c)
	}
	return out
}

// byGroup returns the folded checkpoints per group, sorted by topic then
// partition.
func (f *folder) byGroup() map[string][]checkpoint.Checkpoint {
	out := make(map[string][]checkpoint.Checkpoint)
	for k, c := range f.latest {
		out[k.group] = append(out[k.group], c)
	}
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b checkpoint.Checkpoint) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
	}
	return out
}

func offsetOf(c checkpoint.Checkpoint) kadm.Offset {
	return kadm.Offset{
		Topic:       c.Topic,
		Partition:   c.Partition,
		At:          c.DownstreamOffset,
		LeaderEpoch: -1, // checkpoints carry no leader epoch
		Metadata:    c.Metadata,
	}
}
