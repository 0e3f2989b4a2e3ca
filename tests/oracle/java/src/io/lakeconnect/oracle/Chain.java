package io.lakeconnect.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A "chain" case: source records through a connector config's transforms (with their predicates and
 * negate, as Kafka's TransformationStage applies them), then through its key, value and header converters.
 *
 * <p>Case: {"config": {connector config}, "keySchema", "valueSchema": JsonConverter schema JSON or null
 * (schemaless), "records": [{"topic", "partition", "key", "value" (JsonConverter payloads), "headers":
 * [[key, string or null]], "timestamp"}]}. Answer: {"records": [{"dropped": true} | {"error": {...}} |
 * {"topic", "partition", "timestamp", "key", "value" (base64 or null), "headers": [[key, base64 or null]]}]},
 * one per input record.
 */
final class Chain {
    private record Stage(Transformation<SourceRecord> transform, Predicate<SourceRecord> predicate, boolean negate) {
    }

    private Chain() {
    }

    static void run(JsonNode c, ObjectNode out) throws Exception {
        Map<String, String> config = strings(c.path("config"));
        List<Stage> stages = stages(config);
        Converter keyConverter = converter(config, "key.converter", true);
        Converter valueConverter = converter(config, "value.converter", false);
        HeaderConverter headerConverter = headerConverter(config);
        // Records are given in JsonConverter's own form: its reader makes them Connect data exactly.
        JsonConverter reader = new JsonConverter();
        reader.configure(Map.of("schemas.enable", "true", "replace.null.with.default", "false"), false);
        JsonConverter schemalessReader = new JsonConverter();
        schemalessReader.configure(Map.of("schemas.enable", "false"), false);
        Schema keySchema = schema(reader, c.path("keySchema"));
        Schema valueSchema = schema(reader, c.path("valueSchema"));

        ArrayNode results = out.putArray("records");
        for (JsonNode r : c.path("records")) {
            String topic = r.path("topic").asText("test");
            ObjectNode result = Oracle.JSON.createObjectNode();
            try {
                Object key = data(reader, schemalessReader, c.path("keySchema"), keySchema, r.get("key"));
                Object value = data(reader, schemalessReader, c.path("valueSchema"), valueSchema, r.get("value"));
                ConnectHeaders headers = new ConnectHeaders();
                for (JsonNode h : r.path("headers")) {
                    headers.addString(h.get(0).asText(), h.get(1).isNull() ? null : h.get(1).asText());
                }
                Integer partition = r.path("partition").isNull() || r.path("partition").isMissingNode()
                        ? null : r.get("partition").asInt();
                Long timestamp = r.path("timestamp").isNull() || r.path("timestamp").isMissingNode()
                        ? null : r.get("timestamp").asLong();
                SourceRecord record = new SourceRecord(null, null, topic, partition, keySchema, key, valueSchema,
                        value, timestamp, headers);
                for (Stage stage : stages) {
                    if (stage.predicate == null || stage.negate ^ stage.predicate.test(record)) {
                        record = stage.transform.apply(record);
                    }
                    if (record == null) {
                        break;
                    }
                }
                if (record == null) {
                    result.put("dropped", true);
                } else {
                    written(record, keyConverter, valueConverter, headerConverter, result);
                }
            } catch (Throwable e) {
                result.removeAll();
                result.set("error", Oracle.error(e));
            }
            results.add(result);
        }
    }

    private static void written(SourceRecord record, Converter keyConverter, Converter valueConverter,
                                HeaderConverter headerConverter, ObjectNode result) {
        String topic = record.topic();
        byte[] key = keyConverter.fromConnectData(topic, record.keySchema(), record.key());
        byte[] value = valueConverter.fromConnectData(topic, record.valueSchema(), record.value());
        ArrayNode headers = Oracle.JSON.createArrayNode();
        for (Header h : record.headers()) {
            ArrayNode pair = headers.addArray();
            pair.add(h.key());
            byte[] bytes = headerConverter.fromConnectHeader(topic, h.key(), h.schema(), h.value());
            pair.add(bytes == null ? null : Base64.getEncoder().encodeToString(bytes));
        }
        result.put("topic", topic);
        if (record.kafkaPartition() == null) {
            result.putNull("partition");
        } else {
            result.put("partition", record.kafkaPartition());
        }
        if (record.timestamp() == null) {
            result.putNull("timestamp");
        } else {
            result.put("timestamp", record.timestamp());
        }
        result.put("key", key == null ? null : Base64.getEncoder().encodeToString(key));
        result.put("value", value == null ? null : Base64.getEncoder().encodeToString(value));
        result.set("headers", headers);
    }

    /** The transforms of a connector config, made as Kafka's ConnectorConfig.transformationStages makes them. */
    @SuppressWarnings("unchecked")
    private static List<Stage> stages(Map<String, String> config) throws Exception {
        List<Stage> stages = new ArrayList<>();
        for (String label : labels(config.get("transforms"))) {
            String prefix = "transforms." + label + ".";
            Map<String, Object> settings = new HashMap<>(withPrefix(config, prefix));
            Object predicateLabel = settings.remove("predicate");
            Object negate = settings.remove("negate");
            Transformation<SourceRecord> transform = (Transformation<SourceRecord>) instance(config, prefix + "type");
            validate(transform.config(), settings);
            transform.configure(settings);
            Predicate<SourceRecord> predicate = null;
            if (predicateLabel != null) {
                String predicatePrefix = "predicates." + predicateLabel + ".";
                if (!labels(config.get("predicates")).contains(predicateLabel.toString())) {
                    throw new org.apache.kafka.common.config.ConfigException(
                            "predicate " + predicateLabel + " of transform " + label + " is not declared");
                }
                predicate = (Predicate<SourceRecord>) instance(config, predicatePrefix + "type");
                Map<String, Object> predicateSettings = new HashMap<>(withPrefix(config, predicatePrefix));
                validate(predicate.config(), predicateSettings);
                predicate.configure(predicateSettings);
            }
            stages.add(new Stage(transform, predicate, negate != null && Boolean.parseBoolean(negate.toString())));
        }
        return stages;
    }

    /** Kafka Connect validates a plugin's settings against its ConfigDef before it configures it. */
    private static void validate(ConfigDef def, Map<String, Object> settings) {
        new AbstractConfig(def, settings);
    }

    static Converter converter(Map<String, String> config, String key, boolean isKey) throws Exception {
        Converter converter = (Converter) instance(config, key);
        converter.configure(withPrefix(config, key + "."), isKey);
        return converter;
    }

    static HeaderConverter headerConverter(Map<String, String> config) throws Exception {
        config.putIfAbsent("header.converter", "org.apache.kafka.connect.storage.SimpleHeaderConverter");
        HeaderConverter converter = (HeaderConverter) instance(config, "header.converter");
        Map<String, Object> settings = new HashMap<>(withPrefix(config, "header.converter."));
        settings.put("converter.type", "header");
        converter.configure(settings);
        return converter;
    }

    private static Object instance(Map<String, String> config, String key) throws Exception {
        String name = config.get(key);
        if (name == null) {
            throw new org.apache.kafka.common.config.ConfigException("Missing required configuration \"" + key
                    + "\" which has no default value.");
        }
        return Class.forName(name.trim()).getDeclaredConstructor().newInstance();
    }

    private static Schema schema(JsonConverter reader, JsonNode node) {
        return node == null || node.isNull() || node.isMissingNode() ? null : reader.asConnectSchema(node);
    }

    /** A Connect value from its JSON payload, read by Kafka's JsonConverter (with its schema, if any). */
    static Object data(JsonConverter reader, JsonConverter schemalessReader, JsonNode schemaNode,
                       Schema schema, JsonNode payload) throws Exception {
        if (payload == null || payload.isNull()) {
            return null;
        }
        if (schema == null) {
            return schemalessReader.toConnectData("t", Oracle.JSON.writeValueAsBytes(payload)).value();
        }
        ObjectNode envelope = Oracle.JSON.createObjectNode();
        envelope.set("schema", schemaNode);
        envelope.set("payload", payload);
        SchemaAndValue sv = reader.toConnectData("t", Oracle.JSON.writeValueAsBytes(envelope));
        return sv.value();
    }

    private static List<String> labels(String list) {
        List<String> out = new ArrayList<>();
        if (list != null) {
            for (String s : list.split(",")) {
                if (!s.isBlank()) {
                    out.add(s.trim());
                }
            }
        }
        return out;
    }

    static Map<String, String> strings(JsonNode node) {
        Map<String, String> out = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            out.put(e.getKey(), e.getValue().isTextual() ? e.getValue().asText() : e.getValue().toString());
        }
        return out;
    }

    private static Map<String, String> withPrefix(Map<String, String> config, String prefix) {
        Map<String, String> out = new HashMap<>();
        config.forEach((k, v) -> {
            if (k.startsWith(prefix)) {
                out.put(k.substring(prefix.length()), v);
            }
        });
        return out;
    }

    static String base64(String text) {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }
}
