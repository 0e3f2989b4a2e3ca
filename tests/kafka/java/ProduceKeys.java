// Kafka's own Java producer, for tests/kafka/test_partitioning.py: produces one record per key read from
// stdin (hex, one a line) to each topic named on the command line, with the producer's default
// partitioner, and prints the partition each record was written to ("<topic>\t<hex>\t<partition>").
// Run as a single source file (java ProduceKeys.java BOOTSTRAP TOPIC...) with kafka-clients on the class path.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ProduceKeys {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        List<String> lines = new ArrayList<>();
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        HexFormat hex = HexFormat.of();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                byte[] key = hex.parseHex(line);
                for (int t = 1; t < args.length; t++) {
                    lines.add(args[t] + "\t" + line);
                    sent.add(producer.send(new ProducerRecord<>(args[t], key, key)));
                }
            }
            producer.flush();
            for (int i = 0; i < lines.size(); i++) {
                System.out.println(lines.get(i) + "\t" + sent.get(i).get().partition());
            }
        }
    }
}
