package io.lakeconnect.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.file.FileStreamSinkTask;
import org.apache.kafka.connect.file.FileStreamSourceTask;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * connect-file's tasks, as Kafka Connect runs them.
 *
 * <p>"filesource": {"content": base64 of the file, "config": {task settings but "file"}}: the records
 * FileStreamSourceTask polls from a fresh start -> {"records": [{"topic", "partition", "value" (string),
 * "offset" (position)}]}. "filesink": {"valueSchema", "records": [{"value"}]} (as a chain case) -> {"output":
 * base64 of what FileStreamSinkTask prints}.
 */
final class FileStream {
    private FileStream() {
    }

    static void source(JsonNode c, ObjectNode out) throws Exception {
        Path file = Files.createTempFile("oracle-source", ".txt");
        try {
            Files.write(file, Base64.getDecoder().decode(c.path("content").asText()));
            Map<String, String> config = new HashMap<>(Chain.strings(c.path("config")));
            config.put("file", file.toString());
            FileStreamSourceTask task = new FileStreamSourceTask();
            task.initialize(new FreshContext(config));
            task.start(config);
            ArrayNode records = out.putArray("records");
            try {
                // poll() returns null once it has nothing more to read (after waiting a second for more).
                for (List<SourceRecord> batch; (batch = task.poll()) != null; ) {
                    for (SourceRecord r : batch) {
                        ObjectNode node = records.addObject();
                        node.put("topic", r.topic());
                        node.put("partition", r.kafkaPartition());
                        node.put("keySchema", String.valueOf(r.keySchema()));
                        node.put("valueSchema", r.valueSchema() == null ? null : r.valueSchema().type().getName());
                        node.put("value", (String) r.value());
                        node.put("offset", ((Number) r.sourceOffset().get("position")).longValue());
                    }
                }
            } finally {
                task.stop();
            }
        } finally {
            Files.deleteIfExists(file);
        }
    }

    static void sink(JsonNode c, ObjectNode out) throws Exception {
        JsonConverter reader = new JsonConverter();
        reader.configure(Map.of("schemas.enable", "true", "replace.null.with.default", "false"), false);
        JsonConverter schemalessReader = new JsonConverter();
        schemalessReader.configure(Map.of("schemas.enable", "false"), false);
        JsonNode schemaNode = c.path("valueSchema");
        Schema schema = schemaNode.isNull() || schemaNode.isMissingNode() ? null : reader.asConnectSchema(schemaNode);
        List<SinkRecord> records = new ArrayList<>();
        long offset = 0;
        for (JsonNode r : c.path("records")) {
            Object value = value(reader, schemalessReader, schemaNode, schema, r.get("value"));
            records.add(new SinkRecord(r.path("topic").asText("test"), 0, null, null, schema, value, offset++));
        }
        Path file = Files.createTempFile("oracle-sink", ".txt");
        try {
            FileStreamSinkTask task = new FileStreamSinkTask();
            task.start(Map.of("file", file.toString()));
            task.put(records);
            task.flush(Map.of());
            task.stop();
            out.put("output", Base64.getEncoder().encodeToString(Files.readAllBytes(file)));
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static Object value(JsonConverter reader, JsonConverter schemalessReader, JsonNode schemaNode,
                                Schema schema, JsonNode payload) throws Exception {
        return Chain.data(reader, schemalessReader, schemaNode, schema, payload);
    }

    /** A task context with no committed offsets: the task reads its file from the start. */
    private record FreshContext(Map<String, String> configs) implements SourceTaskContext {
        @Override
        public OffsetStorageReader offsetStorageReader() {
            return new OffsetStorageReader() {
                @Override
                public <T> Map<String, Object> offset(Map<String, T> partition) {
                    return null;
                }

                @Override
                public <T> Map<Map<String, T>, Map<String, Object>> offsets(Collection<Map<String, T>> partitions) {
                    return Map.of();
                }
            };
        }

        @Override
        public PluginMetrics pluginMetrics() {
            return null;
        }
    }
}
