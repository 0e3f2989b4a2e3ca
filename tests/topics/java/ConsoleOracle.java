// tests/topics/java/ConsoleOracle.java -- runs Kafka's own console tool classes over the cases of a JSON file
// (tests/topics/console_cases.json) and writes what they did into each case's "kafka" field, in place:
//   reader cases:    org.apache.kafka.tools.LineMessageReader (kafka-console-producer's) over the input text
//   formatter cases: org.apache.kafka.tools.consumer.DefaultMessageFormatter (kafka-console-consumer's) over one
//                    record, built as ConsoleConsumer.process builds it (no leader epoch, no delivery count)
// tests/topics/test_console_tools.py compiles and runs it against the test bed's .jars/broker (kafka-tools).
// It is in DefaultMessageFormatter's package because that class is package-private.
package org.apache.kafka.tools.consumer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.tools.LineMessageReader;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;

public class ConsoleOracle {
    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        File file = new File(args[0]);
        ObjectNode root = (ObjectNode) json.readTree(file);
        for (JsonNode c : root.get("reader")) {
            ((ObjectNode) c).set("kafka", read(json, c));
        }
        for (JsonNode c : root.get("formatter")) {
            ((ObjectNode) c).put("kafka", format(c));
        }
        json.writeValue(file, root);
    }

    static Map<String, String> props(JsonNode c) {
        Map<String, String> props = new HashMap<>();
        c.get("props").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
        return props;
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static ObjectNode read(ObjectMapper json, JsonNode c) {
        ObjectNode out = json.createObjectNode();
        ArrayNode records = out.putArray("records");
        LineMessageReader reader = new LineMessageReader();
        Map<String, Object> props = new HashMap<>(props(c));
        props.put("topic", "t");
        try {
            reader.configure(props);
        } catch (RuntimeException e) {
            out.put("error", e.getMessage());
            return out;
        }
        try {
            Iterator<ProducerRecord<byte[], byte[]>> it =
                reader.readRecords(new ByteArrayInputStream(c.get("input").asText().getBytes(StandardCharsets.UTF_8)));
            while (it.hasNext()) {
                ProducerRecord<byte[], byte[]> r = it.next();
                ObjectNode rec = records.addObject();
                rec.put("key", text(r.key()));
                rec.put("value", text(r.value()));
                ArrayNode headers = rec.putArray("headers");
                for (Header h : r.headers()) {
                    headers.addArray().add(h.key()).add(text(h.value()));
                }
            }
        } catch (RuntimeException e) {
            out.put("error", e.getMessage());
        }
        return out;
    }

    static byte[] bytes(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText().getBytes(StandardCharsets.UTF_8);
    }

    static String format(JsonNode c) throws Exception {
        JsonNode r = c.get("record");
        RecordHeaders headers = new RecordHeaders();
        for (JsonNode h : r.get("headers")) {
            headers.add(h.get(0).asText(), bytes(h.get(1)));
        }
        ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>("t", r.get("partition").asInt(),
            r.get("offset").asLong(), r.get("timestamp").asLong(), TimestampType.forName(r.get("timestamp_type").asText()),
            0, 0, bytes(r.get("key")), bytes(r.get("value")), headers, Optional.empty());
        DefaultMessageFormatter formatter = new DefaultMessageFormatter();
        formatter.configure(props(c));
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(buffer, true, StandardCharsets.UTF_8)) {
            formatter.writeTo(record, out);
        }
        return Base64.getEncoder().encodeToString(buffer.toByteArray());
    }
}
