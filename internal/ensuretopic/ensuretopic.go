// Package ensuretopic creates the internal topics kmirror needs (resume
// points, offset syncs, offset runs, the coordination topic, checkpoints,
// heartbeats) and accepts a topic created in advance when the cluster
// refuses the creation: a principal without CREATE (ACLS.md, least
// privilege) or a create policy. Like MM2 since KAFKA-15465, a refused
// creation of a topic that exists is not an error; unlike MM2, the
// existing topic is checked (partition count, cleanup policy where they
// matter), and a missing one gives an error naming the topic, the ACL to
// grant and how to create it in advance.
package ensuretopic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Spec is one internal topic to ensure.
type Spec struct {
	// Topic is the topic's name.
	Topic string
	// Cluster is the alias of the cluster it lives on, for errors.
	Cluster string
	// Partitions is the partition count it is created with.
	Partitions int32
	// ExactPartitions requires an existing topic to have exactly
	// Partitions partitions (the coordination topic); otherwise any count
	// is accepted.
	ExactPartitions bool
	// ReplicationFactor is the replication factor it is created with (-1:
	// the broker default).
	ReplicationFactor int16
	// Configs are the topic configs it is created with.
	Configs map[string]*string
	// RequireCompact requires an existing topic's cleanup.policy to
	// include compact (resume points, checkpoints: records that must not
	// expire).
	RequireCompact bool
	// Log receives a note when an existing topic's cleanup policy cannot
	// be checked (no DESCRIBE_CONFIGS). nil logs nothing.
	Log *slog.Logger
}

// Result is what Ensure found.
type Result struct {
	// Created is true when this call created the topic.
	Created bool
	// Partitions is the topic's partition count.
	Partitions int32
}

// Refused reports whether err is a cluster refusing a topic creation by
// rule (an ACL, a create policy) rather than failing it.
func Refused(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
		errors.Is(err, kerr.PolicyViolation)
}

// MissingError is returned when the cluster refuses to create a topic that
// does not exist (or that the principal may not describe).
type MissingError struct {
	// Spec is the topic asked for.
	Spec Spec
	// CreateErr is the cluster's answer to CreateTopics.
	CreateErr error
	// DescribeErr is the answer for the topic in Metadata:
	// UNKNOWN_TOPIC_OR_PARTITION, or TOPIC_AUTHORIZATION_FAILED without
	// DESCRIBE.
	DescribeErr error
}

// Error names the topic, the ACL to grant and the alternative of creating
// the topic in advance.
func (e *MissingError) Error() string {
	s := e.Spec
	what := "is missing on " + s.Cluster
	extra := ""
	if errors.Is(e.DescribeErr, kerr.TopicAuthorizationFailed) {
		what = "cannot be described on " + s.Cluster
		extra = fmt.Sprintf("; kmirror's principal also needs DESCRIBE on topic %s", s.Topic)
	}
	allow := fmt.Sprintf("grant kmirror's principal on %s CREATE on the cluster or on topic %s", s.Cluster, s.Topic)
	if errors.Is(e.CreateErr, kerr.PolicyViolation) {
		allow = fmt.Sprintf("allow topic %s in the create policy of %s", s.Topic, s.Cluster)
	}
	return fmt.Sprintf("topic %s %s and %s refuses to create it (%v)%s: %s, or create the topic in advance with %s (ACLS.md, least privilege)",
		s.Topic, what, s.Cluster, e.CreateErr, extra, allow, Describe(s))
}

// Unwrap returns the creation error.
func (e *MissingError) Unwrap() error { return e.CreateErr }

// PartitionsError is returned when an existing topic with ExactPartitions
// has another partition count.
type PartitionsError struct {
	// Spec is the topic asked for.
	Spec Spec
	// Have is the existing topic's partition count.
	Have int32
}

// Error names the topic and both counts.
func (e *PartitionsError) Error() string {
	return fmt.Sprintf("topic %s on %s has %d partition(s), kmirror needs exactly %d", e.Spec.Topic, e.Spec.Cluster, e.Have, e.Spec.Partitions)
}

// PolicyError is returned when an existing topic with RequireCompact is not
// compacted.
type PolicyError struct {
	// Spec is the topic asked for.
	Spec Spec
	// Have is the existing topic's cleanup.policy.
	Have string
}

// Error names the topic, its policy and the one needed.
func (e *PolicyError) Error() string {
	return fmt.Sprintf("topic %s on %s has cleanup.policy=%s, kmirror needs it compacted (cleanup.policy=%s) so that its records do not expire: alter it with kafka-configs.sh, or re-create it with %s",
		e.Spec.Topic, e.Spec.Cluster, e.Have, policyOf(e.Spec), Describe(e.Spec))
}

func policyOf(s Spec) string {
	if v, ok := s.Configs["cleanup.policy"]; ok && v != nil {
		return *v
	}
	return "compact"
}

// Describe says how to create s in advance: its partition count and
// configs, e.g. "1 partition(s), cleanup.policy=compact".
func Describe(s Spec) string {
	n := fmt.Sprintf("%d partition(s)", s.Partitions)
	if s.ExactPartitions {
		n = fmt.Sprintf("exactly %d partition(s)", s.Partitions)
	}
	keys := make([]string, 0, len(s.Configs))
	for k := range s.Configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{n}
	for _, k := range keys {
		if v := s.Configs[k]; v != nil {
			parts = append(parts, k+"="+*v)
		}
	}
	return strings.Join(parts, ", ")
}

// Ensure creates s's topic, or accepts it as it exists: when the cluster
// answers TOPIC_ALREADY_EXISTS, or refuses the creation (Refused) and the
// topic exists, it checks the topic's partition count (ExactPartitions)
// and cleanup policy (RequireCompact) and returns nil. A refused creation
// of a missing topic returns a *MissingError; a misfit existing topic a
// *PartitionsError or *PolicyError. Other errors are wrapped with the
// topic and cluster, and are worth retrying.
func Ensure(ctx context.Context, adm *kadm.Client, s Spec) (Result, error) {
	resp, err := adm.CreateTopic(ctx, s.Partitions, s.ReplicationFactor, s.Configs, s.Topic)
	if err == nil {
		err = resp.Err
		if err != nil && resp.ErrMessage != "" {
			err = fmt.Errorf("%w (broker: %s)", err, resp.ErrMessage)
		}
	}
	if err == nil {
		return Result{Created: true, Partitions: s.Partitions}, nil
	}
	exists := errors.Is(err, kerr.TopicAlreadyExists)
	if !exists && !Refused(err) {
		return Result{}, fmt.Errorf("creating %s on %s: %w", s.Topic, s.Cluster, err)
	}
	var d kadm.TopicDetail
	for attempt := 0; ; attempt++ {
		var derr error
		d, derr = describe(ctx, adm, s)
		if derr == nil {
			break
		}
		// Just created (by another member, or in advance a moment ago), and
		// not yet in this broker's metadata, or its ACLs not yet applied:
		// ask again for a moment, then let the caller retry.
		if attempt >= visibleRetries || ctx.Err() != nil {
			if !exists && (errors.Is(derr, kerr.UnknownTopicOrPartition) || errors.Is(derr, kerr.TopicAuthorizationFailed)) {
				return Result{}, &MissingError{Spec: s, CreateErr: err, DescribeErr: derr}
			}
			return Result{}, fmt.Errorf("topic %s on %s not visible yet: %w", s.Topic, s.Cluster, derr)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	r := Result{Partitions: int32(len(d.Partitions))}
	if s.ExactPartitions && r.Partitions != s.Partitions {
		return r, &PartitionsError{Spec: s, Have: r.Partitions}
	}
	if s.RequireCompact {
		if err := checkCompact(ctx, adm, s); err != nil {
			return r, err
		}
	}
	return r, nil
}

// visibleRetries is how many times Ensure asks again for a topic that
// exists but is not in the metadata yet, 100 ms apart.
const visibleRetries = 10

// describe returns s's topic from Metadata, or why it is not there.
func describe(ctx context.Context, adm *kadm.Client, s Spec) (kadm.TopicDetail, error) {
	td, err := adm.ListTopics(ctx, s.Topic)
	if err != nil {
		return kadm.TopicDetail{}, fmt.Errorf("describing %s on %s: %w", s.Topic, s.Cluster, err)
	}
	d, ok := td[s.Topic]
	switch {
	case !ok:
		return d, kerr.UnknownTopicOrPartition
	case d.Err != nil:
		return d, d.Err
	case len(d.Partitions) == 0:
		return d, errors.New("no partitions")
	}
	return d, nil
}

// checkCompact checks that s's existing topic is compacted. Without
// DESCRIBE_CONFIGS the check is skipped with a log line.
func checkCompact(ctx context.Context, adm *kadm.Client, s Spec) error {
	rcs, err := adm.DescribeTopicConfigs(ctx, s.Topic)
	var rc kadm.ResourceConfig
	if err == nil {
		rc, err = rcs.On(s.Topic, nil)
	}
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
			if s.Log != nil {
				s.Log.Info("cannot check the cleanup policy of an existing internal topic (no DESCRIBE_CONFIGS on it): assuming it is compacted",
					"topic", s.Topic, "cluster", s.Cluster)
			}
			return nil
		}
		return fmt.Errorf("describing the configs of %s on %s: %w", s.Topic, s.Cluster, err)
	}
	for _, c := range rc.Configs {
		if c.Key != "cleanup.policy" || c.Value == nil {
			continue
		}
		for _, p := range strings.Split(*c.Value, ",") {
			if strings.TrimSpace(p) == "compact" {
				return nil
			}
		}
		return &PolicyError{Spec: s, Have: *c.Value}
	}
	return nil // no cleanup.policy answered: nothing to judge
}
