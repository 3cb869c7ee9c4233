package mirror

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Failed partitions. The rules (when a partition fails, who brings it
// back, when it restarts and where) are the lifecycle's (lifecycle.go);
// this file holds the failure classification it uses and the control
// goroutine's side of a failure.

// requestRestart asks for the restart of the unit's FAILED partitions of
// topic ("" every topic) and partition (-1 every partition) and returns
// how many it asked for (Mirror.RestartFailed): an event posted to the
// control goroutine, which answers once it applied it (0 when the unit
// stopped). The partitions restart once their in-flight records came
// back.
func (u *unit) requestRestart(topic string, partition int32) int {
	reply := make(chan int, 1)
	return u.box.call(event{kind: evRestart, a: int64(partition), x: &evExtra{topic: topic, reply: reply}}, reply)
}

// partitionFailed logs a partition whose produce failed for good
// (actFailed) and counts it.
func (u *unit) partitionFailed(p *partState, err error) {
	if p.nextRetry.IsZero() {
		u.log.Error("partition stopped: the record's own error; fix the cause, then restart it (Mirror.RestartFailed, or POST /connectors/<flow>/restart?onlyFailed=true)",
			"topic", p.topic, "partition", p.partition, "err", err)
	} else {
		u.log.Error("partition stopped; restarting it automatically", "topic", p.topic, "partition", p.partition, "err", err,
			"retry_in", p.nextRetry.Sub(u.life.now).Round(time.Millisecond))
	}
	u.env.metrics.flowErr(u.env.labels, "partition_failed")
}

// recordError reports produce errors that are the record's own: the
// target rejects this record whatever its state (too large for the remote
// topic's max.message.bytes, invalid or corrupt, a timestamp outside
// message.timestamp.*.difference.max.ms). Restarting would fail on the
// same record again, so the partition waits for an operator to change the
// target's configuration and call Mirror.RestartFailed. Every other
// non-retriable produce error (authorization while ACLs are rolled out,
// KAFKA-14250; an unknown topic, partition or topic ID while the remote
// topic is re-created, KAFKA-10332; a policy violation) can go away on its
// own, and the partition is restarted automatically with backoff.
func recordError(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage) ||
		errors.Is(err, kerr.InvalidTimestamp) || errors.Is(err, kerr.UnsupportedForMessageFormat)
}

// timestampAdvice adds to an INVALID_TIMESTAMP produce error the setting
// of the remote topic that refused the record and how to fix it; other
// errors are returned as they are. span holds the oldest and newest
// timestamps of the records the refused batch may hold (the failed
// record and those in flight after it: the target refuses a batch as a
// whole, so the failed record is not always the one that broke the rule;
// zero when unknown, as for a shallow-copied batch). Records only in the
// past name message.timestamp.before.max.ms, only in the future
// message.timestamp.after.max.ms (KIP-937; older brokers check
// message.timestamp.difference.max.ms); records on both sides name the
// setting of the one further from now first, and the other too (a helper
// trying to break the record limits, stop 38, was told to delete
// after.max.ms for a batch refused by before.max.ms). The wrapped error
// keeps its kerr code for errors.Is.
func timestampAdvice(err error, remote, target string, span timeSpan) error {
	if !errors.Is(err, kerr.InvalidTimestamp) {
		return err
	}
	const (
		before, after = "message.timestamp.before.max.ms", "message.timestamp.after.max.ms"
	)
	now := time.Now()
	old := func(ts time.Time) string {
		return fmt.Sprintf("%s (%s old)", ts.UTC().Format(time.RFC3339Nano), now.Sub(ts).Round(time.Second))
	}
	ahead := func(ts time.Time) string {
		return fmt.Sprintf("%s (%s ahead)", ts.UTC().Format(time.RFC3339Nano), ts.Sub(now).Round(time.Second))
	}
	var key, broker, del, rec, also string
	past := !span.oldest.IsZero() && span.oldest.Before(now)
	future := !span.newest.IsZero() && span.newest.After(now)
	switch {
	case past && future && now.Sub(span.oldest) >= span.newest.Sub(now):
		key, rec, also = before, " "+old(span.oldest), fmt.Sprintf(" (or its %s, for the record at %s)", after, ahead(span.newest))
		broker, del = "log."+before, before+","+after
	case past && future:
		key, rec, also = after, " "+ahead(span.newest), fmt.Sprintf(" (or its %s, for the record at %s)", before, old(span.oldest))
		broker, del = "log."+after, before+","+after
	case past:
		key, rec, broker, del = before, " "+old(span.oldest), "log."+before, before
	case future:
		key, rec, broker, del = after, " "+ahead(span.newest), "log."+after, after
	default:
		key, broker, del = before+" or "+after, "log."+before+" or log."+after, before+","+after
	}
	return fmt.Errorf("%w; the remote topic %s on %s refuses the record's timestamp%s by its %s%s "+
		"(or the target broker's %s when the topic sets none; message.timestamp.difference.max.ms before Kafka 4.0): "+
		"delete the topic's setting (kafka-configs.sh --alter --entity-type topics --entity-name %s --delete-config %s) or raise it, "+
		"then restart the failed partition; kmirror's default config.properties.exclude never copies it",
		err, remote, target, rec, key, also, broker, remote, del)
}

// recordAdvice adds to a record's own produce error that names no setting
// (INVALID_RECORD, CORRUPT_MESSAGE, UNSUPPORTED_FOR_MESSAGE_FORMAT) the
// source offset of the record the partition stopped at (off: the target
// refused the batch holding it; franz-go drops the broker's error message)
// and, for INVALID_RECORD, the likely cause: keyless is the offset of the
// first record without a key the batch may hold (-1 none), which a remote
// topic with cleanup.policy=compact refuses (a source topic made compact
// after those records were written holds such records; config sync copies
// its cleanup.policy); policy is the remote topic's cleanup.policy as the
// flow last read or set it ("": unknown). A keyless record is named as the cause
// only on a compacted remote topic, and as a possible one when the policy
// is unknown: on a cleanup.policy=delete topic the advice blamed it while
// a broker-side validation refused the batch (TestBrkPInvalidRecordAdviceFollowsCleanupPolicy).
// Other errors are returned as they are. The wrapped error keeps its kerr
// code for errors.Is.
func recordAdvice(err error, remote, target string, off, keyless int64, policy string) error {
	if !errors.Is(err, kerr.InvalidRecord) && !errors.Is(err, kerr.CorruptMessage) && !errors.Is(err, kerr.UnsupportedForMessageFormat) {
		return err
	}
	const restart = "then restart the partition (Mirror.RestartFailed, or POST /connectors/<flow>/restart?onlyFailed=true)"
	fixCompact := fmt.Sprintf("set the cleanup.policy of %s to delete (and add cleanup.policy to config.properties.exclude, or config sync copies the source topic's back), "+
		"or wait until the source's log cleaner removed the record", remote)
	const validation = "a broker-side validation of the remote topic such as schema validation"
	compacted := strings.Contains(policy, "compact")
	var why string
	switch {
	case errors.Is(err, kerr.InvalidRecord) && keyless >= 0 && compacted:
		why = fmt.Sprintf("the record at offset %d has no key, which a topic with cleanup.policy=compact refuses (%s has cleanup.policy=%s): %s, %s",
			keyless, remote, policy, fixCompact, restart)
	case errors.Is(err, kerr.InvalidRecord) && keyless >= 0 && policy == "":
		why = fmt.Sprintf("the record at offset %d has no key: if the remote topic is compacted (cleanup.policy=compact refuses a record without a key), %s; "+
			"otherwise %s refused it: fix the cause on the target; %s", keyless, fixCompact, validation, restart)
	case errors.Is(err, kerr.InvalidRecord) && policy != "" && !compacted:
		why = fmt.Sprintf("the target's validation refused it (%s; %s has cleanup.policy=%s, which takes records without a key): fix the cause on the target, %s",
			validation, remote, policy, restart)
	case errors.Is(err, kerr.InvalidRecord):
		why = "the target's validation refused it (a record without a key on a compacted topic, or " + validation + "): fix the cause on the target, " + restart
	default:
		why = restart
	}
	return fmt.Errorf("%w; the remote topic %s on %s refused the batch holding the record at offset %d, and nothing from this record on was replicated: %s",
		err, remote, target, off, why)
}

// aclAdvice adds to a TOPIC_AUTHORIZATION_FAILED of topic on cluster the
// ACL kmirror lacks there (op: READ for a fetch of a source topic, WRITE
// for a produce to a remote topic); other errors are returned as they are.
// The partition is retried by itself meanwhile: an ACL being rolled out
// (KAFKA-14250). Before, the status quoted Kafka's "Not authorized to
// access topics" alone (TestBrkATopicACLMissingNamed). The wrapped error
// keeps its kerr code for errors.Is.
func aclAdvice(err error, op, topic, cluster string) error {
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		return err
	}
	return fmt.Errorf("%w; grant kmirror %s on topic %s on %s (ACLS.md); retried automatically", err, op, topic, cluster)
}

// transientProduceErr reports produce failures that say nothing about the
// record or the partition: the target did not take it in time (kgo's
// delivery timeout or retry limit, or a retriable error once retries are
// exhausted).
//
// An unknown topic, partition or topic ID is not transient here: the
// remote topic was deleted on the target (and maybe re-created, which kgo's
// producer never adopts: KAFKA-10332). The partition fails, and its
// automatic restart first asks the target for the remote topic's ID
// (the lifecycle's actCheckRemote): a new ID refills it from the source's log start.
func transientProduceErr(err error) bool {
	if unknownTopic(err) {
		return false
	}
	return errors.Is(err, kgo.ErrRecordTimeout) || errors.Is(err, kgo.ErrRecordRetries) || kerr.IsRetriable(err)
}

// unknownTopic reports produce errors by which the target says the remote
// topic or partition does not exist (as the producer knows it).
func unknownTopic(err error) bool {
	return errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition)
}

// backoff returns the next retry delay: doubling from 250 ms to 30 s.
func backoff(prev time.Duration) time.Duration {
	switch {
	case prev <= 0:
		return 250 * time.Millisecond
	case prev >= 15*time.Second:
		return 30 * time.Second
	}
	return prev * 2
}
