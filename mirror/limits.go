package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Record size limits (issue 18).
//
// The target producer's batch limit is the remote topic's effective
// max.message.bytes, as the target reports it (DescribeConfigs): the
// largest record batch the broker accepts there. franz-go's own default
// (1 000 012 bytes) is below both Java's max.request.size (1 048 576) and
// Kafka's max.message.bytes (1 048 588), so a record MM2 copies with its
// defaults would be refused. A user's producer.max.request.size above a
// remote topic's max.message.bytes is capped to it for that topic (unlike
// Java, which batches to batch.size, kgo fills batches up to this limit).
// A topic whose limit is unknown (the describe
// failed) gets Kafka's default; a record above it fails its partition
// with RecordTooLargeError.Assumed, retried automatically (each restart
// reads the limit again), never left for an operator on a guess. A user's
// `producer.max.request.size` (kgo.ProducerBatchMaxBytes) wins when it is
// smaller, and for a topic whose limit is unknown.
//
// franz-go reads the limit once per partition and caches it, so a unit's
// producer keeps the limits it started with for the whole session
// (unit.lim). When discovery, a partition failing on a record too large
// (the limit may have been raised since it was read), or the restart of
// such a partition finds another limit on the target, the unit ends the
// session gracefully (records acknowledged, resume points stored: nothing
// replayed) and opens a new producer with the new limits (errRebuild).
//
// The poll loop checks every record against the limit before producing it
// (recordBatchSize): a record the target would refuse fails its partition
// there, so nothing after it is produced, and the partition resumes after
// the last acknowledged record when it is restarted.

// defaultRecordLimit is Kafka's default max.message.bytes (1 MiB plus the
// 12 bytes of a batch's log overhead): the limit of a remote topic whose
// configuration could not be read.
const defaultRecordLimit = 1048588

// limitProbe is the topic name under which the unit's batch-limit function
// answers limitSentinel: a producer whose function answers anything else
// for it runs with the user's producer.max.request.size.
const (
	limitProbe    = "\x00kmirror-limit-probe"
	limitSentinel = 1<<30 - 1
)

// recordBatchSize is the size of a record batch holding r alone, before
// compression, as a broker counts it against max.message.bytes (the v2
// batch header, then the record with its varint length prefix; the largest
// of the encodings franz-go may pick). Every limit kmirror compares with
// it is in the same measure; franz-go counts the length prefix a produce
// request puts before the batch too (4 bytes, or 1-3 with a flexible
// produce version), which kgoBatchLimit adds to the limit it hands
// franz-go.
func recordBatchSize(r *kgo.Record) int64 {
	l := 1 + 1 + 1 + // attributes, timestamp delta 0, offset delta 0
		varintLen(int64(len(r.Key))) + len(r.Key) +
		varintLen(int64(len(r.Value))) + len(r.Value) +
		varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		l += varintLen(int64(len(h.Key))) + len(h.Key) + varintLen(int64(len(h.Value))) + len(h.Value)
	}
	const batchOverhead = 61 // the v2 batch header (franz-go's recordBatchOverhead less the 4 bytes of array length)
	return int64(batchOverhead + varintLen(int64(l)) + l)
}

// batchLengthPrefix is what franz-go counts in a batch beyond what a
// broker does: the length of the batch's bytes in the produce request.
const batchLengthPrefix = 4

// kgoBatchLimit is franz-go's batch limit (ProducerBatchMaxBytesFn) for a
// limit lim in the broker's measure (recordBatchSize): a batch of exactly
// lim bytes, which the broker accepts, is one franz-go builds. Before,
// franz-go was handed lim itself, and a record whose batch was within 4
// bytes of the remote topic's max.message.bytes was refused as too large
// (a helper trying to break the record limits: a record the source topic
// took at its limit of 4000 bytes, copied by config sync, failed as "4004
// bytes"). The 4 bytes are franz-go's count before it knows the broker's
// produce version; with a flexible one it counts 1-3, so a batch of many
// records can end up to 3 bytes above lim: a topic the target refused
// such a batch for gets lim plus 1 instead (unit.batchLimit, tight).
// Within franz-go's range (at most 1 GiB).
func kgoBatchLimit(lim int32) int32 {
	return int32(min(int64(lim)+batchLengthPrefix, 1<<30))
}

// varintLen is the length of v as a zig-zag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// batchLimit is the unit's producer's batch limit for topic (kgo's
// ProducerBatchMaxBytesFn): the session's limit of a remote topic, Kafka's
// default for any other topic (resume points).
//
// With the user's producer.max.request.size (userLimit), the user's value,
// capped by a remote topic's limit that is smaller and was read from the
// target (kgo fills batches up to this limit: one above the topic's would
// build batches of small records the target refuses).
func (u *unit) batchLimit(topic string) int32 {
	if topic == limitProbe {
		return limitSentinel
	}
	if u.isTight(topic) {
		return u.limitOf(topic) + 1 // franz-go's least length prefix (refreshLimits)
	}
	return kgoBatchLimit(u.limitOf(topic))
}

// limitOf is the session's limit of topic in the broker's measure
// (recordBatchSize): batchLimit before franz-go's 4 bytes.
func (u *unit) limitOf(topic string) int32 {
	v, ok := (*u.lim.Load())[topic]
	if !ok {
		v = 0
	}
	return min(u.appliedLimit(v), 1<<30-batchLengthPrefix, u.requestLimit(topic))
}

// requestLimit is the largest batch of topic, in the broker's measure,
// that the producer puts in one produce request (reqLimit, less the bytes
// of a topic name longer than 16); MaxInt32 before the producer opened.
func (u *unit) requestLimit(topic string) int32 {
	if u.reqLimit <= 0 {
		return math.MaxInt32
	}
	return u.reqLimit - int32(max(len(topic)-16, 0))
}

// requestLimitApplies reports whether the limit of remote topic remote is
// the producer's request limit (requestLimit): BrokerMaxWriteBytes, set
// below the topic's max.message.bytes or the topic's above franz-go's
// default of 100 MiB.
func (u *unit) requestLimitApplies(remote string) bool {
	return u.reqLimit > 0 && u.limitOf(remote) == u.requestLimit(remote) && !u.userLimitApplies(remote)
}

// requestBatchLimit returns the largest record batch, in the broker's
// measure (recordBatchSize), that producer cl puts in one produce request
// to a topic whose name is at most 16 bytes: its BrokerMaxWriteBytes less
// the request's framing as franz-go counts it (the request header with
// the client ID, the transactional ID, acks, timeout, one topic of one
// partition). franz-go refuses a larger record itself (MESSAGE_TOO_LARGE,
// never sent), whatever the batch limit says: kmirror's record checks
// count this limit too, so such a record stops its partition with an
// error naming the producer's limit, instead of failing every retry as
// if the target had refused it (found by a breaker: BrokerMaxWriteBytes
// of 2 MiB, a remote topic of 4 MiB, a record of 3 MiB). It returns the
// BrokerMaxWriteBytes too.
func requestBatchLimit(cl *kgo.Client) (limit, write int32) {
	w, _ := cl.OptValue(kgo.BrokerMaxWriteBytes).(int32)
	const framing = 4 + 2 + 2 + 4 + 2 + // length, API key, version, correlation ID, client ID length
		2 + 2 + 4 + 4 + 1 + // transactional ID length, acks, timeout, topics, tags
		2 + 16 + 4 + 4 + 4 // topic name length and name (16: a topic ID's), partitions, partition, records length
	n := int32(framing + batchLengthPrefix)
	if id, _ := cl.OptValue(kgo.ClientID).(string); id != "" {
		n += int32(len(id))
	}
	if id, _ := cl.OptValue(kgo.TransactionalID).(string); id != "" {
		n += int32(len(id))
	}
	return w - n, w
}

// appliedLimit is the batch limit a producer applies to a remote topic
// whose session limit is v (sessionLimit; 0: none recorded).
func (u *unit) appliedLimit(v int32) int32 {
	if u.userLimit > 0 {
		if v > 0 && v < u.userLimit {
			return v
		}
		return u.userLimit
	}
	if v != 0 {
		return abs32(v)
	}
	return defaultRecordLimit
}

// sessionLimit is the limit a unit's session records for remote topic
// remote: the one last read, or minus Kafka's default when none was (an
// assumed limit; batchLimit).
func (e *unitEnv) sessionLimit(remote string) int32 {
	if v := e.topicLimit(remote); v > 0 {
		return v
	}
	return -defaultRecordLimit
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}

// userLimitApplies reports whether the limit of remote topic remote is the
// user's producer.max.request.size (not capped by the topic's).
func (u *unit) userLimitApplies(remote string) bool {
	return u.userLimit > 0 && u.limitOf(remote) == u.userLimit
}

// recordLimit returns the limit in bytes a record for remote topic must fit
// as a one-record batch (recordBatchSize).
func (u *unit) recordLimit(remote string) int64 {
	return int64(u.limitOf(remote))
}

// tooLarge returns the error of record r of remote topic remote, whose
// size as a one-record batch is size, above limit lim.
func (u *unit) tooLarge(remote string, r *kgo.Record, size, lim int64) *RecordTooLargeError {
	setting := fmt.Sprintf("max.message.bytes of %s on %s (%d bytes)", remote, u.env.dst.Alias, lim)
	if u.userLimitApplies(remote) || u.requestLimitApplies(remote) {
		return &RecordTooLargeError{Offset: r.Offset, Size: size, Limit: lim, Setting: u.limitSetting(remote)}
	}
	// A limit never read from the target is only Kafka's default,
	// assumed: the remote topic may well accept the record.
	assumed := (*u.lim.Load())[remote] <= 0
	if assumed {
		setting = fmt.Sprintf("max.message.bytes of %s on %s (%d bytes, Kafka's default, assumed: it could not be read from the target)",
			remote, u.env.dst.Alias, lim)
	}
	e := &RecordTooLargeError{Offset: r.Offset, Size: size, Limit: lim, Setting: setting, Assumed: assumed}
	if !assumed {
		e.synced = u.env.limitSynced
		// A record the source took may be pushed over the limit it
		// copied there by the provenance header alone (a helper trying
		// to break the record limits: raising the remote topic's limit,
		// as the error asked, was set back by config sync). Only a
		// first hop's header is all kmirror's (a later hop's grows one
		// the source record had).
		for i, h := range r.Headers {
			if h.Key != ProvenanceHeader || u.env.prov == nil || !bytes.Equal(withoutOffset(h.Value), u.env.prov.src) {
				continue
			}
			bare := *r
			bare.Headers = append(append([]kgo.RecordHeader(nil), r.Headers[:i]...), r.Headers[i+1:]...)
			if bs := recordBatchSize(&bare); bs <= lim {
				e.header = size - bs
			}
			break
		}
	}
	return e
}

// limitSetting names the setting that holds the record limit of remote topic
// remote.
func (u *unit) limitSetting(remote string) string {
	if u.userLimitApplies(remote) {
		return fmt.Sprintf("%s.producer.max.request.size (%d bytes)", u.env.dst.Alias, u.userLimit)
	}
	if u.requestLimitApplies(remote) {
		return fmt.Sprintf("the %s producer's request limit (%d bytes: franz-go's BrokerMaxWriteBytes, %d, less the produce request's framing; "+
			"a remote topic's max.message.bytes above it needs kgo.BrokerMaxWriteBytes raised in ClusterConfig.Producer, or %s.producer.max.request.size set)",
			u.env.dst.Alias, u.requestLimit(remote), u.reqWrite, u.env.dst.Alias)
	}
	return fmt.Sprintf("max.message.bytes of %s on %s (%d bytes)", remote, u.env.dst.Alias, u.limitOf(remote))
}

// RecordTooLargeError is the error of a partition stopped on a record that
// the target would refuse: its size as a record batch is above the remote
// topic's max.message.bytes (or the target producer's max.request.size,
// when set). It wraps kerr.MessageTooLarge, so it is one of the record's own
// errors: the partition waits for the limit to be raised and for a restart
// (Mirror.RestartFailed), then resumes at this record. The failure reads
// the remote topic's limit again: one raised before the record came
// restarts the partition without the operator.
type RecordTooLargeError struct {
	// Offset is the record's source offset.
	Offset int64
	// Size is the record's size as a one-record batch, in bytes
	// (uncompressed: key, value, headers and the batch's framing).
	Size int64
	// Limit is the limit in bytes it exceeds, and Setting names the
	// setting that holds it.
	Limit   int64
	Setting string
	// Assumed says the limit is Kafka's default, assumed because the
	// remote topic's max.message.bytes could not be read from the target
	// (DescribeConfigs failed or was refused). The partition is then
	// restarted automatically with backoff: each restart reads the limit
	// again, and a remote topic that accepts the record gets it.
	Assumed bool

	// header is the size of the provenance header when the record fits
	// the limit without it (0: it does not); synced says config sync
	// copies the source topic's max.message.bytes to the remote topic.
	header int64
	synced bool
}

// Error names the record, its size, the limit and what to change.
func (e *RecordTooLargeError) Error() string {
	if e.Assumed {
		return fmt.Sprintf("MESSAGE_TOO_LARGE: the record at offset %d is %d bytes as a record batch, above %s: "+
			"grant DESCRIBE_CONFIGS on the remote topic (ACLS.md) so that its limit can be read; the partition is retried automatically "+
			"and reads the limit again; nothing after this record was produced", e.Offset, e.Size, e.Setting)
	}
	const restart = "then restart the partition (Mirror.RestartFailed, or POST /connectors/<flow>/restart?onlyFailed=true); " +
		"nothing after this record was produced"
	var why, raise string
	if e.header > 0 {
		why = fmt.Sprintf(" (it fits without the %d bytes of the %s header kmirror adds: provenance.header.enabled=false drops it, and with it the loop protection of flows in both directions or chains)",
			e.header, ProvenanceHeader)
	}
	switch {
	case e.synced && strings.HasPrefix(e.Setting, "max.message.bytes"):
		raise = "raise the source topic's max.message.bytes (config sync copies it to the remote topic, and sets a value raised " +
			"on the remote topic alone back to the source topic's when the source topic sets one), or exclude max.message.bytes from config sync (config.properties.exclude) " +
			"and raise the remote topic's"
	default:
		raise = "raise that setting"
	}
	return fmt.Sprintf("MESSAGE_TOO_LARGE: the record at offset %d is %d bytes as a record batch, above %s%s: %s, %s",
		e.Offset, e.Size, e.Setting, why, raise, restart)
}

// Unwrap returns kerr.MessageTooLarge.
func (e *RecordTooLargeError) Unwrap() error { return kerr.MessageTooLarge }

// adviseProduceErr adds what to do to a record's own produce error of
// remote topic remote: r is the record produced (in.rec, or the record the
// promise returned); span the timestamps of the partition's records in
// flight with it (partState.inflightTimes), keyless the offset of the
// first of them without a key (partState.firstKeyless; -1 none).
func (u *unit) adviseProduceErr(remote string, in inflight, r *kgo.Record, span timeSpan, keyless int64, err error) error {
	var tl *RecordTooLargeError
	if errors.As(err, &tl) {
		return err
	}
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		setting := u.limitSetting(remote)
		size := int64(-1)
		if in.rec != nil {
			size = recordBatchSize(in.rec)
		}
		if size > 0 && size <= u.recordLimit(remote) {
			return &batchRefusedError{offset: in.up, size: size, setting: setting, err: err}
		}
		return fmt.Errorf("%w: the record at offset %d (%d bytes as a record batch) is above %s or the target broker's limit: "+
			"raise it, then restart the partition", err, in.up, size, setting)
	}
	if r != nil {
		span.add(r.Timestamp) // its promise ran: the record is ours again
	}
	if errors.Is(err, kerr.InvalidTimestamp) {
		return timestampAdvice(err, remote, u.env.dst.Alias, span)
	}
	if errors.Is(err, kerr.TopicAuthorizationFailed) {
		return aclAdvice(err, "WRITE", remote, u.env.dst.Alias)
	}
	policy := ""
	if u.env.cleanupPolicy != nil {
		policy = u.env.cleanupPolicy(remote)
	}
	return recordAdvice(err, remote, u.env.dst.Alias, in.up, keyless, policy)
}

// batchRefusedError is the target's MESSAGE_TOO_LARGE for a record that
// fits the limit the unit's producer applies: the broker refused the
// batch the producer built up to that limit, so the limit is stale (the
// remote topic's max.message.bytes lowered since it was read, config sync
// copying the source topic's, or a lower broker-wide message.max.bytes).
// It is not the record's own error: the partition is restarted
// automatically, and the restart reads the limit again and reopens the
// producer with it (a helper trying to break the record limits, stop 38:
// a partition of 100-byte records stopped for good, with advice to raise
// the limit and the stale one quoted).
type batchRefusedError struct {
	offset, size int64
	setting      string
	err          error
}

func (e *batchRefusedError) Error() string {
	return fmt.Sprintf("%v: the target refused a batch holding the record at offset %d (%d bytes as a record batch, within the %s "+
		"the producer applied): the remote topic's max.message.bytes was probably lowered since it was read, or the target broker's "+
		"message.max.bytes is lower; the partition is restarted automatically with the limit read again (if this repeats, the target "+
		"refuses batches below that limit: compare the topic's compression.type with the source's and the brokers' message.max.bytes)",
		e.err, e.offset, e.size, e.setting)
}

// Unwrap returns the target's error (kerr.MessageTooLarge).
func (e *batchRefusedError) Unwrap() error { return e.err }

// batchRefused reports whether err is a batch refused at a stale limit.
func batchRefused(err error) bool {
	var br *batchRefusedError
	return errors.As(err, &br)
}

// topicLimits describes the max.message.bytes and the cleanup.policy of
// remote topics on the target: the values found (a topic whose value could
// not be read is left out) and the error of the request as a whole. The
// cleanup.policy tells the advice for an INVALID_RECORD (recordAdvice)
// whether a record without a key is the cause.
func topicLimits(ctx context.Context, cl *kgo.Client, remotes []string) (map[string]int32, map[string]string, error) {
	out := make(map[string]int32, len(remotes))
	policies := make(map[string]string, len(remotes))
	if len(remotes) == 0 {
		return out, policies, nil
	}
	// A remote topic the target refuses to describe (no DESCRIBE_CONFIGS)
	// keeps the limit known (Kafka's default until read), the others get
	// theirs (describeTopicConfigs).
	rcs, err := describeTopicConfigs(ctx, cl, remotes)
	if err != nil {
		return out, policies, err
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil {
				policies[rc.Name] = *c.Value
			}
			if c.Key != "max.message.bytes" || c.Value == nil {
				continue
			}
			// Any value Kafka accepts (at least 0), however small: a floor
			// of 512 ignored a remote topic lowered to 100, and its
			// partition retried for ever quoting the old limit (a new
			// user's finding). 0 is kept as 1 (0 means "not read").
			if n, perr := strconv.ParseInt(*c.Value, 10, 32); perr == nil && n >= 0 {
				out[rc.Name] = int32(min(max(n, 1), 1<<30))
			}
		}
	}
	return out, policies, nil
}

// errRebuild ends a unit's session gracefully so that the next one opens
// a producer with the remote topics' current limits (see above).
var errRebuild = errors.New("the target's record limits changed: reopening the producer")

// noteLimits records, for the remote topics of the unit's offer, the limit
// the flow knows now. A topic the session's producer has not written yet
// gets it; a topic whose limit changed (or that needs a larger buffer than
// the producer has) asks for a rebuild. Control goroutine only.
func (u *unit) noteLimits(remotes map[string]bool) {
	cur := *u.lim.Load()
	var next map[string]int32
	for remote := range remotes {
		v := u.env.sessionLimit(remote)
		old, ok := cur[remote]
		switch {
		case ok && old == v:
			continue
		case ok:
			if !u.rebuild {
				u.log.Info("the remote topic's max.message.bytes changed: reopening the unit's producer (resume points stored first)",
					"remote_topic", remote, "was", abs32(old), "now", abs32(v), "read", v > 0)
			}
			u.rebuild = true
			u.restartRaised(remote, int64(u.appliedLimit(v)))
			continue
		case int64(abs32(v)) > u.bufBytes:
			if !u.rebuild {
				u.log.Info("a remote topic accepts records larger than the unit's producer buffer: reopening the producer with a larger one",
					"remote_topic", remote, "max_message_bytes", v, "buffer", u.bufBytes)
			}
			u.rebuild = true
			continue
		}
		if next == nil {
			next = make(map[string]int32, len(cur)+len(remotes))
			for k, x := range cur {
				next[k] = x
			}
		}
		next[remote] = v
	}
	if next != nil {
		u.lim.Store(&next)
	}
}

// refreshLimits asks the target for the current max.message.bytes of the
// remote topics of partitions that just failed on a record too large, or
// are about to be restarted after one, and tells the flow; a changed limit
// asks for a rebuild. Of those, refused are the remote topics whose batch
// the target refused although its records fit the limit the producer
// applied (batchRefused): if the limit read is the one applied, franz-go
// built the batch above it (kgoBatchLimit's 4 bytes against a flexible
// produce request's shorter length prefix), and the topic is made tight
// (its batches built to at most the limit plus 1) with a rebuild. Control
// goroutine only.
func (u *unit) refreshLimits(ctx context.Context, remotes, refused map[string]bool) {
	names := make([]string, 0, len(remotes))
	for r := range remotes {
		names = append(names, r)
	}
	ctx, cancel := context.WithTimeout(ctx, min(u.env.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	got, _, err := topicLimits(ctx, u.prod, names)
	if err != nil {
		u.log.Warn("reading the remote topics' max.message.bytes after a record too large", "err", err)
	}
	for r, v := range got {
		u.env.setTopicLimit(r, v)
	}
	cur := *u.lim.Load()
	for remote := range refused {
		if old, ok := cur[remote]; !ok || old != u.env.sessionLimit(remote) || u.isTight(remote) {
			continue // a changed limit reopens the producer anyway (noteLimits); tight already
		}
		u.setTight(remote)
		u.log.Info("the target refused a batch the producer built within the remote topic's max.message.bytes: "+
			"its batches are built to the limit counted as the target does from now on, and the unit's producer is reopened",
			"remote_topic", remote, "max_message_bytes", u.limitOf(remote))
		u.rebuild = true
	}
	u.noteLimits(remotes)
}

// isTight reports whether franz-go builds the batches of remote topic
// remote to at most its limit plus 1 (refreshLimits). Safe for concurrent
// use.
func (u *unit) isTight(remote string) bool {
	if m := u.tight.Load(); m != nil {
		return (*m)[remote]
	}
	return false
}

// setTight makes remote topic remote tight (isTight). Control goroutine
// only.
func (u *unit) setTight(remote string) {
	next := map[string]bool{remote: true}
	if m := u.tight.Load(); m != nil {
		for k := range *m {
			next[k] = true
		}
	}
	u.tight.Store(&next)
}

// sessionLimits returns the limits a new session's producer starts with:
// the flow's current ones for the remote topics offered, and the buffer
// that holds the largest record any of them accepts.
func (u *unit) sessionLimits() (map[string]int32, int64) {
	u.offerMu.Lock()
	offer := u.offer
	u.offerMu.Unlock()
	m := map[string]int32{}
	buf := int64(budget(u.env.cfg.MaxBufferedBytes, u.env.tasks, 1<<20))
	for _, o := range offer {
		v := u.env.sessionLimit(o.remote)
		m[o.remote] = v
		buf = max(buf, int64(abs32(v)))
	}
	return m, buf
}

// topicLimit returns the max.message.bytes of remote topic remote on the
// target as last read (0: unknown).
func (f *flow) topicLimit(remote string) int32 {
	f.limitsMu.Lock()
	defer f.limitsMu.Unlock()
	return f.limits[remote]
}

// cleanupPolicy returns the cleanup.policy of remote topic remote on the
// target as discovery last read it or config sync last set it ("": not
// known).
func (f *flow) cleanupPolicy(remote string) string {
	f.limitsMu.Lock()
	defer f.limitsMu.Unlock()
	return f.policies[remote]
}

// notePolicyAltered keeps the cleanup.policy cleanupPolicy returns for
// remote topic remote true after config sync applied alters to it: a SET
// is the topic's policy, a DELETE makes it unknown (the broker's default)
// until discovery reads it. Discovery reads it again only at a full
// refresh, so a source topic made compact had its keyless record's
// refusal blamed on a broker-side validation, the advice saying the
// remote topic "has cleanup.policy=delete" (TestBrkTInvalidRecordAdviceAfterPolicySynced).
func (f *flow) notePolicyAltered(remote string, alters []kadm.AlterConfig) {
	for _, a := range alters {
		if a.Name != "cleanup.policy" {
			continue
		}
		if a.Op == kadm.SetConfig {
			f.notePolicy(remote, a.Value)
		} else {
			f.notePolicy(remote, nil)
		}
	}
}

// notePolicy records v as the cleanup.policy of remote topic remote, one
// kmirror set (config sync, or the remote topic's creation: a remote
// topic deleted and created again kept its old topic's policy until a
// full refresh, TestBrkTInvalidRecordAdviceAfterRecreation); nil makes it
// unknown.
func (f *flow) notePolicy(remote string, v *string) {
	f.limitsMu.Lock()
	defer f.limitsMu.Unlock()
	if v == nil {
		delete(f.policies, remote)
		return
	}
	if f.policies == nil {
		f.policies = map[string]string{}
	}
	f.policies[remote] = *v
}

// setTopicLimit records the max.message.bytes read for remote topic remote.
func (f *flow) setTopicLimit(remote string, v int32) {
	f.limitsMu.Lock()
	defer f.limitsMu.Unlock()
	if f.limits == nil {
		f.limits = map[string]int32{}
	}
	f.limits[remote] = v
}

// readLimits reads the max.message.bytes of the remote topics of the
// catalog before discovery hands it to the units: those not read yet, and
// every one once per refresh interval (a changed limit reopens the units'
// producers). A failed read keeps the values known; a topic never read is
// written with Kafka's default limit until it is. Refresh goroutine only.
func (f *flow) readLimits(ctx context.Context, cat *catalog) {
	full := time.Since(f.limitsAt) >= f.cfg.RefreshTopicsInterval
	seen := map[string]bool{}
	var names []string
	f.limitsMu.Lock()
	for _, parts := range cat.bySlot {
		for _, o := range parts {
			if seen[o.remote] {
				continue
			}
			seen[o.remote] = true
			if _, known := f.limits[o.remote]; full || !known {
				names = append(names, o.remote)
			}
		}
	}
	f.limitsMu.Unlock()
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, min(f.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	got, policies, err := topicLimits(ctx, f.dstAdmCl, names)
	if err != nil {
		f.log.Debug("reading the remote topics' max.message.bytes", "err", err)
		return
	}
	if full {
		f.limitsAt = time.Now()
	}
	for r, v := range got {
		f.setTopicLimit(r, v)
	}
	f.limitsMu.Lock()
	if f.policies == nil {
		f.policies = map[string]string{}
	}
	maps.Copy(f.policies, policies)
	f.limitsMu.Unlock()
}

// restartRaised asks for the restart of the unit's partitions of remote
// topic remote stopped on a record too large for a limit below lim, the
// limit the next session's producer applies (evLimitRaised), now or later
// in this session. They restart in the next session.
// Control goroutine only.
func (u *unit) restartRaised(remote string, lim int64) {
	u.life.apply(event{kind: evLimitRaised, a: lim, x: &evExtra{remote: remote}}, nil)
}
