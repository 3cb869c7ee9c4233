package remoteclusterutils

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
)

// Offsets are translated consumer-group offsets, keyed by TARGET-cluster
// topic name and partition: the result of [TranslateOffsets], the Go form of
// the Map<TopicPartition, OffsetAndMetadata> of MM2's
// RemoteClusterUtils.translateOffsets.
//
// Offsets is an alias of kadm.Offsets (map[string]map[int32]kadm.Offset),
// so a value goes as is to kadm.Client.CommitOffsets / CommitAllOffsets for
// the group on the target cluster. Each kadm.Offset has Topic and Partition
// set, At = the checkpoint's downstream offset (the next record to consume),
// LeaderEpoch = -1 (checkpoints carry no epoch) and Metadata = the commit
// metadata copied from the source group ("" if none).
//
// To seek a kgo consumer instead of committing, use Offsets.KOffsets()
// (map[string]map[int32]kgo.Offset, e.g. for kgo.ConsumePartitions) or
// [EpochOffsets] (for kgo.Client.SetOffsets).
type Offsets = kadm.Offsets

// EpochOffsets returns o in the shape kgo.Client.SetOffsets takes:
// map[topic]map[partition]kgo.EpochOffset with Epoch -1 and Offset = the
// translated offset. It returns an empty, non-nil map for empty o.
func EpochOffsets(o Offsets) map[string]map[int32]kgo.EpochOffset {
	out := make(map[string]map[int32]kgo.EpochOffset, len(o))
	for t, ps := range o {
		m := make(map[int32]kgo.EpochOffset, len(ps))
		for p, off := range ps {
			m[p] = kgo.EpochOffset{Epoch: off.LeaderEpoch, Offset: off.At}
		}
		out[t] = m
	}
	return out
}

// Checkpoints is the content of one checkpoints topic, as read by
// [Client.Checkpoints]: the latest valid checkpoint per (group, topic,
// partition), for every group, plus the read statistics.
type Checkpoints struct {
	// Alias is the remote (source) cluster alias the topic belongs to.
	Alias string
	// Stats describes the read (topic, offsets, skipped records).
	Stats ReadStats
	// Groups maps each consumer group id to its checkpoints, sorted by
	// topic then partition. Topics are target-cluster names.
	Groups map[string][]checkpoint.Checkpoint
}

// GroupIDs returns the group ids with at least one checkpoint, sorted.
func (c *Checkpoints) GroupIDs() []string {
	out := make([]string, 0, len(c.Groups))
	for g := range c.Groups {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// Offsets returns the translated offsets of group, exactly what
// [Client.TranslateOffsets] returns for it from the same read: an empty,
// non-nil map when the group has no checkpoints.
func (c *Checkpoints) Offsets(group string) Offsets {
	out := make(Offsets)
	for _, cp := range c.Groups[group] {
		ps := out[cp.Topic]
		if ps == nil {
			ps = make(map[int32]kadm.Offset)
			out[cp.Topic] = ps
		}
		ps[cp.Partition] = offsetOf(cp)
	}
	return out
}
