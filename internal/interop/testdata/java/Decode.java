// Decode reads MM2 internal topics with Apache MM2's own classes, for
// kmirror's interop tests: every record is parsed with Checkpoint,
// Heartbeat or OffsetSync.deserializeRecord and written out with the
// matching formatter of org.apache.kafka.connect.mirror.formatters (the
// classes ConsoleConsumer's --formatter option loads).
//
// Usage: java -cp '<kafka lib>/*' Decode.java BOOTSTRAP KIND:TOPIC...
//
// KIND is checkpoint, heartbeat or offsetsync. Partition 0 of each TOPIC is
// read from its log start to the end offset observed at the start. Output,
// one tab-separated line per record:
//
//	checkpoint TOPIC OFFSET group topic partition upstream downstream metadata
//	heartbeat  TOPIC OFFSET source target timestamp
//	offsetsync TOPIC OFFSET topic partition upstream downstream
//	error      TOPIC OFFSET KIND exception          (deserializeRecord threw)
//
// followed by one "fmt TOPIC OFFSET text" line with the formatter's output,
// or "fmterror TOPIC OFFSET exception" when the formatter threw.
// Exit code 1 with a message on stderr on any other error.
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.MessageFormatter;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.mirror.Checkpoint;
import org.apache.kafka.connect.mirror.Heartbeat;
import org.apache.kafka.connect.mirror.OffsetSync;
import org.apache.kafka.connect.mirror.formatters.CheckpointFormatter;
import org.apache.kafka.connect.mirror.formatters.HeartbeatFormatter;
import org.apache.kafka.connect.mirror.formatters.OffsetSyncFormatter;

public class Decode {
    // main reports every failure itself: the source launcher cannot print
    // Kafka's ApiExceptions, which carry no stack trace.
    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            System.err.println("Decode: " + e);
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Decode BOOTSTRAP KIND:TOPIC...");
            System.exit(2);
        }
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            for (int i = 1; i < args.length; i++) {
                int colon = args[i].indexOf(':');
                if (colon < 0) {
                    throw new IllegalArgumentException("want KIND:TOPIC, got " + args[i]);
                }
                decodeTopic(consumer, args[i].substring(0, colon), args[i].substring(colon + 1));
            }
        }
    }

    private static void decodeTopic(KafkaConsumer<byte[], byte[]> consumer, String kind, String topic) {
        MessageFormatter formatter;
        switch (kind) {
            case "checkpoint": formatter = new CheckpointFormatter(); break;
            case "heartbeat": formatter = new HeartbeatFormatter(); break;
            case "offsetsync": formatter = new OffsetSyncFormatter(); break;
            default: throw new IllegalArgumentException("unknown kind " + kind);
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        List<TopicPartition> tps = Collections.singletonList(tp);
        consumer.assign(tps);
        consumer.seekToBeginning(tps);
        long end = consumer.endOffsets(tps, Duration.ofSeconds(30)).get(tp);
        long deadline = System.currentTimeMillis() + 60_000;
        while (consumer.position(tp, Duration.ofSeconds(30)) < end) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(topic + ": end offset " + end + " not reached in 60 s");
            }
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                if (r.offset() >= end) {
                    continue;
                }
                String head = topic + "\t" + r.offset() + "\t";
                try {
                    System.out.println(kind + "\t" + head + fields(kind, r));
                } catch (RuntimeException e) {
                    System.out.println("error\t" + head + kind + "\t" + e.getClass().getName());
                }
                ByteArrayOutputStream buf = new ByteArrayOutputStream();
                try (PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
                    formatter.writeTo(r, out);
                } catch (RuntimeException e) {
                    System.out.println("fmterror\t" + head + e.getClass().getName());
                    continue;
                }
                System.out.println("fmt\t" + head + buf.toString(StandardCharsets.UTF_8).trim().replace('\n', ' '));
            }
        }
    }

    private static String fields(String kind, ConsumerRecord<byte[], byte[]> r) {
        switch (kind) {
            case "checkpoint": {
                Checkpoint c = Checkpoint.deserializeRecord(r);
                return c.consumerGroupId() + "\t" + c.topicPartition().topic() + "\t" + c.topicPartition().partition()
                    + "\t" + c.upstreamOffset() + "\t" + c.downstreamOffset() + "\t" + c.metadata();
            }
            case "heartbeat": {
                Heartbeat h = Heartbeat.deserializeRecord(r);
                return h.sourceClusterAlias() + "\t" + h.targetClusterAlias() + "\t" + h.timestamp();
            }
            default: {
                OffsetSync s = OffsetSync.deserializeRecord(r);
                return s.topicPartition().topic() + "\t" + s.topicPartition().partition()
                    + "\t" + s.upstreamOffset() + "\t" + s.downstreamOffset();
            }
        }
    }
}
