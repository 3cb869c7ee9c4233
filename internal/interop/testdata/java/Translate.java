// Translate prints Apache MM2's RemoteClusterUtils.translateOffsets answer for
// one or more consumer groups, for kmirror's interop tests.
//
// Usage: java -cp '<kafka lib>/*' Translate.java BOOTSTRAP REMOTE_ALIAS TIMEOUT_MS GROUP...
//
// BOOTSTRAP is the cluster holding <REMOTE_ALIAS>.checkpoints.internal (the
// target of the flow REMOTE_ALIAS->this cluster). Output: one line per
// translated partition, "group topic partition offset", sorted. Exit code 1
// with a message on stderr on any error.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class Translate {
    // main reports every failure itself: the source launcher cannot print
    // Kafka's ApiExceptions, which carry no stack trace.
    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            System.err.println("Translate: " + e);
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: Translate BOOTSTRAP REMOTE_ALIAS TIMEOUT_MS GROUP...");
            System.exit(2);
        }
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        String alias = args[1];
        Duration timeout = Duration.ofMillis(Long.parseLong(args[2]));
        List<String> lines = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            String group = args[i];
            Map<TopicPartition, OffsetAndMetadata> offsets =
                RemoteClusterUtils.translateOffsets(props, alias, group, timeout);
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                lines.add(group + " " + e.getKey().topic() + " " + e.getKey().partition() + " " + e.getValue().offset());
            }
        }
        Collections.sort(lines);
        for (String l : lines) {
            System.out.println(l);
        }
    }
}
