package policy_test

import (
	"fmt"

	"github.com/kmirror/kmirror/policy"
)

func ExampleNewDefault() {
	p, err := policy.NewDefault()
	if err != nil {
		fmt.Println(err)
		return
	}
	remote := p.FormatRemoteTopic("us-west", "orders")
	source, _ := p.TopicSource(remote)
	upstream, _ := p.UpstreamTopic(remote)
	fmt.Println(remote, source, upstream)
	fmt.Println(p.CheckpointsTopic("us-west"))
	fmt.Println(p.OffsetSyncsTopic("us-east"))
	fmt.Println(p.OriginalTopic("us-east.us-west.orders"))
	// Output:
	// us-west.orders us-west orders
	// us-west.checkpoints.internal
	// mm2-offset-syncs.us-east.internal
	// orders
}

func ExampleWithInternalTopicSeparator() {
	// A deployment that used separator "__" with MM2 3.0 or older keeps the
	// "."-separated internal topic names (KIP-949).
	p, err := policy.NewDefault(policy.WithSeparator("__"), policy.WithInternalTopicSeparator(false))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.FormatRemoteTopic("src", "orders"))
	fmt.Println(p.CheckpointsTopic("src"))
	// Output:
	// src__orders
	// src.checkpoints.internal
}

func ExampleNewIdentity() {
	p, err := policy.NewIdentity("us-west")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.FormatRemoteTopic("us-west", "orders"))
	fmt.Println(p.FormatRemoteTopic("us-west", "heartbeats"))
	source, _ := p.TopicSource("orders")
	fmt.Println(source)
	// Output:
	// orders
	// us-west.heartbeats
	// us-west
}

func ExampleIsCycle() {
	p, _ := policy.NewDefault()
	// Flow us-west -> us-east: topics that came from us-east go no further.
	for _, t := range []string{"orders", "us-central.orders", "us-east.orders", "us-west.us-east.orders"} {
		fmt.Println(t, policy.IsCycle(p, "us-east", t))
	}
	// Output:
	// orders false
	// us-central.orders false
	// us-east.orders true
	// us-west.us-east.orders true
}

func ExampleValidateAlias() {
	p, _ := policy.NewDefault(policy.WithSeparator("-"))
	fmt.Println(policy.ValidateAlias(p, "eu-prod"))
	fmt.Println(policy.ValidateAlias(p, "euprod"))
	// Output:
	// policy: invalid cluster alias "eu-prod": contains the replication separator "-", so remote topic "eu-prod-heartbeats" would be attributed to cluster "eu"
	// <nil>
}
