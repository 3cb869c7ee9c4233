package mirror

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Per-topic errors of the refresh jobs (FlowStatus.TopicErrors): one
// topic's failed creation, partition increase, describe or config sync is
// recorded here and retried, while the flow's other topics replicate and
// the flow stays RUNNING. Written only by the refresh goroutine (discover,
// createRemoteTopics, syncConfigs) of the member holding slot 0; read by
// status. Guarded by flow.mu.

// topicErrKey identifies one topic error: a source topic and an operation.
type topicErrKey struct {
	topic string
	op    TopicOp
}

// errTopicsFailed is returned by a refresh job whose only errors are
// per-topic ones (recorded as topic errors, logged once): the refresh loop
// retries the job with a backoff and does not log it again.
var errTopicsFailed = errors.New("some topics failed")

// topicFailed records that op failed for topic (remote on the target):
// the first failure is logged at WARN, every failure counts one error of
// kind "topic_<op>".
func (f *flow) topicFailed(topic, remote string, op TopicOp, err error) {
	now := time.Now()
	f.metrics.flowErr(f.labels, "topic_"+string(op))
	f.mu.Lock()
	defer f.mu.Unlock()
	k := topicErrKey{topic, op}
	if te, ok := f.topicErrs[k]; ok {
		te.Error, te.LastAttempt, te.RemoteTopic = err.Error(), now, remote
		return
	}
	f.topicErrs[k] = &TopicError{Topic: topic, RemoteTopic: remote, Op: op, Error: err.Error(), Since: now, LastAttempt: now}
	f.log.Warn("topic not replicated as configured, the other topics go on; retried on the next refresh",
		"topic", topic, "remote_topic", remote, "op", op, "err", err)
}

// topicHeld records for topic a condition of op that kmirror does not act
// on by design (holdIncrease: a partition increase refresh.topics.enabled
// =false does not follow), shown as a topic error until it clears: logged
// once at WARN, counted in no error metric (nothing was attempted), its
// LastAttempt its first report's.
func (f *flow) topicHeld(topic, remote string, op TopicOp, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := topicErrKey{topic, op}
	if te, ok := f.topicErrs[k]; ok {
		te.Error, te.RemoteTopic = err.Error(), remote
		return
	}
	now := time.Now()
	f.topicErrs[k] = &TopicError{Topic: topic, RemoteTopic: remote, Op: op, Error: err.Error(), Since: now, LastAttempt: now}
	f.log.Warn("topic not replicated as configured, the other topics go on; not retried: the error says what to do",
		"topic", topic, "remote_topic", remote, "op", op, "err", err)
}

// topicOK records that op succeeded for topic (or is not needed): a
// recorded error is removed and logged at INFO.
func (f *flow) topicOK(topic string, op TopicOp) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := topicErrKey{topic, op}
	if op == TopicOpPartitions {
		delete(f.heldIncrease, topic)
	}
	if te, ok := f.topicErrs[k]; ok {
		delete(f.topicErrs, k)
		f.log.Info("topic error cleared", "topic", topic, "remote_topic", te.RemoteTopic, "op", op,
			"failed_for", time.Since(te.Since).Round(time.Second))
	}
}

// retainTopicErrs removes the topic errors keep rejects (topic no longer
// selected, this member no longer holds the singleton duties, configs no
// longer synced), logging each at INFO with why.
func (f *flow) retainTopicErrs(keep func(topic string, op TopicOp) bool, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, te := range f.topicErrs {
		if !keep(k.topic, k.op) {
			delete(f.topicErrs, k)
			if k.op == TopicOpPartitions {
				delete(f.heldIncrease, k.topic) // the topic gone or no longer selected
			}
			f.log.Info("topic error cleared", "topic", k.topic, "remote_topic", te.RemoteTopic, "op", k.op, "reason", why)
		}
	}
}

// hasTopicErr reports whether topic has an error of one of ops.
func (f *flow) hasTopicErr(topic string, ops ...TopicOp) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range ops {
		if _, ok := f.topicErrs[topicErrKey{topic, op}]; ok {
			return true
		}
	}
	return false
}

// notReplicatedOps are the operations whose failure keeps records from
// being replicated (their topic errors carry a lag).
var notReplicatedOps = []TopicOp{TopicOpCreate, TopicOpDescribe, TopicOpPartitions}

// topicErrLags lists, for the topics with an error of notReplicatedOps,
// the records of their source partitions not replicated (missing: source
// partitions without a usable remote partition, by topic) and stores them
// as the errors' Lag: high watermark minus log start offset, summed; -1
// when the source's offsets could not be listed. One ListOffsets request
// pair to the source per refresh, only while such errors exist.
func (f *flow) topicErrLags(ctx context.Context, missing map[string][]int32) {
	var topics []string
	for t := range missing {
		if f.hasTopicErr(t, notReplicatedOps...) {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return
	}
	lag := map[string]int64{}
	starts, err := f.srcAdm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	ends, err2 := f.srcAdm.ListEndOffsets(ctx, topics...)
	if err2 == nil {
		err2 = ends.Error()
	}
	for _, t := range topics {
		lag[t] = -1
		if err != nil || err2 != nil {
			continue
		}
		n := int64(0)
		for _, p := range missing[t] {
			s, ok1 := starts.Lookup(t, p)
			e, ok2 := ends.Lookup(t, p)
			if !ok1 || !ok2 {
				n = -1
				break
			}
			n += max(e.Offset-s.Offset, 0)
		}
		lag[t] = n
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range topics {
		for _, op := range notReplicatedOps {
			if te, ok := f.topicErrs[topicErrKey{t, op}]; ok {
				te.Lag = lag[t]
				break // the topic's records count once
			}
		}
	}
}

// topicErrListLocked returns the topic errors sorted by topic, then op.
// f.mu is held.
func (f *flow) topicErrListLocked() []TopicError {
	if len(f.topicErrs) == 0 {
		return nil
	}
	out := make([]TopicError, 0, len(f.topicErrs))
	for _, te := range f.topicErrs {
		out = append(out, *te)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Op < out[j].Op
	})
	return out
}

// topicErrSummary is FlowStatus.Error of a RUNNING flow with topic errors:
// "1 topic error: orders: creating src.orders on dst: ...", the first
// three, then "and N more".
func topicErrSummary(tes []TopicError) string {
	const shown = 3
	var b strings.Builder
	if len(tes) == 1 {
		b.WriteString("1 topic error: ")
	} else {
		fmt.Fprintf(&b, "%d topic errors: ", len(tes))
	}
	for i, te := range tes[:min(len(tes), shown)] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(te.Topic + ": " + te.Error)
	}
	if len(tes) > shown {
		fmt.Fprintf(&b, "; and %d more", len(tes)-shown)
	}
	return b.String()
}
