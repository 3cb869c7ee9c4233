// Topology prints what Apache MM2's MirrorClient reports about the cluster's
// replication topology, for kmirror's interop tests.
//
// Usage: java -cp '<kafka lib>/*' Topology.java BOOTSTRAP ALIAS...
//
// Output, sorted within each kind:
//
//	hops ALIAS N          MirrorClient.replicationHops(ALIAS), one line per ALIAS argument
//	upstream ALIAS        one line per element of MirrorClient.upstreamClusters()
//	heartbeats TOPIC      one line per element of MirrorClient.heartbeatTopics()
//	checkpoints TOPIC     one line per element of MirrorClient.checkpointTopics()
//
// Exit code 1 with a message on stderr on any error.
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.mirror.MirrorClient;

public class Topology {
    // main reports every failure itself: the source launcher cannot print
    // Kafka's ApiExceptions, which carry no stack trace.
    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            System.err.println("Topology: " + e);
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Topology BOOTSTRAP ALIAS...");
            System.exit(2);
        }
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        try (MirrorClient client = new MirrorClient(props)) {
            for (int i = 1; i < args.length; i++) {
                System.out.println("hops " + args[i] + " " + client.replicationHops(args[i]));
            }
            print("upstream", new ArrayList<>(client.upstreamClusters()));
            print("heartbeats", new ArrayList<>(client.heartbeatTopics()));
            print("checkpoints", new ArrayList<>(client.checkpointTopics()));
        }
    }

    private static void print(String kind, List<String> items) {
        Collections.sort(items);
        for (String s : items) {
            System.out.println(kind + " " + s);
        }
    }
}
