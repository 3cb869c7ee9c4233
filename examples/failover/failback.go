package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// committedOffsets returns group's committed offsets of topic on adm.
func committedOffsets(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := resp.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.Err == nil && o.At >= 0 {
			out[p] = o.At
		}
	}
	return out, nil
}

// endOffsets returns the end offset of every partition of topic.
func endOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// commitWhenEmpty commits offs into group once the group has no members:
// a member of the group from before the outage is kept by the restarted
// coordinator until its session times out (3 s here), and the broker
// refuses admin commits into a group with members.
func commitWhenEmpty(ctx context.Context, adm *kadm.Client, group string, offs kadm.Offsets) (waited time.Duration, err error) {
	start := time.Now()
	for {
		resp, err := adm.CommitOffsets(ctx, group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err == nil {
			return time.Since(start), nil
		}
		if !errors.Is(err, kerr.UnknownMemberID) && !errors.Is(err, kerr.RebalanceInProgress) &&
			!errors.Is(err, kerr.IllegalGeneration) && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return time.Since(start), err
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("committing offsets of %s: %w (last error: %v)", group, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePort returns a loopback TCP port that is free now, so that a cluster
// can be restarted on the same address after its "outage".
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
