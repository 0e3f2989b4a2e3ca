package io.lakeconnect.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.data.Values;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;

import java.util.Base64;
import java.util.Map;

/**
 * A "read" case: a topic's record bytes through a connector config's key, value and header converters, the
 * way a sink task reads them ({@code toConnectData}, {@code toConnectHeader}).
 *
 * <p>Case: {"config": {connector config}, "records": [{"topic", "key", "value" (base64 or null), "headers":
 * [[key, base64 or null]]}]}. Answer: {"records": [{"error": {...}} | {"key", "value": {"schema", "text"},
 * "headers": [[key, schema, text]]}]}, one per input record: each schema as {@link #describe} writes it,
 * each value as {@code Values.convertToString} (what SimpleHeaderConverter writes back, and sinks print).
 */
final class Read {
    private Read() {
    }

    static void run(JsonNode c, ObjectNode out) throws Exception {
        Map<String, String> config = Chain.strings(c.path("config"));
        Converter keyConverter = Chain.converter(config, "key.converter", true);
        Converter valueConverter = Chain.converter(config, "value.converter", false);
        HeaderConverter headerConverter = Chain.headerConverter(config);
        ArrayNode results = out.putArray("records");
        for (JsonNode r : c.path("records")) {
            String topic = r.path("topic").asText("test");
            ObjectNode result = Oracle.JSON.createObjectNode();
            try {
                result.set("key", read(keyConverter.toConnectData(topic, bytes(r.get("key")))));
                result.set("value", read(valueConverter.toConnectData(topic, bytes(r.get("value")))));
                ArrayNode headers = result.putArray("headers");
                for (JsonNode h : r.path("headers")) {
                    String key = h.get(0).asText();
                    SchemaAndValue sv = headerConverter.toConnectHeader(topic, key, bytes(h.get(1)));
                    ArrayNode triple = headers.addArray();
                    triple.add(key);
                    triple.add(sv == null ? "null" : describe(sv.schema()));
                    triple.add(sv == null ? null : Values.convertToString(sv.schema(), sv.value()));
                }
            } catch (Throwable e) {
                result.removeAll();
                result.set("error", Oracle.error(e));
            }
            results.add(result);
        }
    }

    private static ObjectNode read(SchemaAndValue sv) {
        ObjectNode node = Oracle.JSON.createObjectNode();
        node.put("schema", describe(sv.schema()));
        node.put("text", Values.convertToString(sv.schema(), sv.value()));
        return node;
    }

    private static byte[] bytes(JsonNode node) {
        return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.asText());
    }

    /** int8, optional boolean, decimal(2), date, time, timestamp, array<int16>, map<string,null>; "null" for none. */
    static String describe(Schema s) {
        if (s == null) {
            return "null";
        }
        String prefix = s.isOptional() ? "optional " : "";
        String name = s.name();
        if (Decimal.LOGICAL_NAME.equals(name)) {
            return prefix + "decimal(" + s.parameters().get(Decimal.SCALE_FIELD) + ")";
        } else if (Date.LOGICAL_NAME.equals(name)) {
            return prefix + "date";
        } else if (Time.LOGICAL_NAME.equals(name)) {
            return prefix + "time";
        } else if (Timestamp.LOGICAL_NAME.equals(name)) {
            return prefix + "timestamp";
        }
        return switch (s.type()) {
            case ARRAY -> prefix + "array<" + describe(s.valueSchema()) + ">";
            case MAP -> prefix + "map<" + describe(s.keySchema()) + "," + describe(s.valueSchema()) + ">";
            default -> prefix + s.type().getName();
        };
    }
}
