package io.lakeconnect;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.text.CharacterIterator;
import java.text.DateFormat;
import java.text.ParsePosition;
import java.text.SimpleDateFormat;
import java.text.StringCharacterIterator;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TimeZone;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * Kafka's {@code SimpleHeaderConverter.toConnectHeader} as a Spark SQL function: a header's text to the
 * schema {@code Values.parseString} infers for it and the text {@code Values.convertToString} writes for
 * the inferred value, as {@code struct<schema: string, value: string>}; null for null.
 *
 * <p>A line-by-line port of Kafka 4.1.1's {@code Values} parser (tokenizer, number, boolean, temporal,
 * array and map inference, schema merging and element alignment), so that its quirks are kept: "1.0" is
 * an int8, "12,5" the int8 12, "[1, null]" a string, "2024-13-01" the date 2025-01-01 (lenient
 * SimpleDateFormat). Kafka's classes are not on Spark's class path, hence the port.
 *
 * <p>The schema is written as {@link #describe}: {@code int8}, {@code decimal(2)}, {@code date},
 * {@code array<float32>}, {@code map<string,null>}, {@code optional ...}; "null" when there is none.
 * Dates and times are parsed and written in UTC (Kafka uses the worker JVM's zone, UTC in practice).
 * A text Kafka cannot parse at all becomes a BYTES header (its base64 text), as Kafka's catch-all does.
 */
public final class HeaderValues implements UDF1<String, Row> {
    private static final long serialVersionUID = 1L;
    private static final TimeZone UTC = TimeZone.getTimeZone("UTC");
    private static final long MILLIS_PER_DAY = 24 * 60 * 60 * 1000;
    static final String DATE = "org.apache.kafka.connect.data.Date";
    static final String TIME = "org.apache.kafka.connect.data.Time";
    static final String TIMESTAMP = "org.apache.kafka.connect.data.Timestamp";
    static final String DECIMAL = "org.apache.kafka.connect.data.Decimal";
    private static final String DATE_PATTERN = "yyyy-MM-dd";
    private static final String TIME_PATTERN = "HH:mm:ss.SSS'Z'";
    private static final String TIMESTAMP_PATTERN = DATE_PATTERN + "'T'" + TIME_PATTERN;

    @Override
    public Row call(String text) {
        if (text == null) {
            return null;
        }
        Parsed parsed;
        try {
            parsed = parseString(text);
        } catch (Throwable t) {  // SimpleHeaderConverter: "so using byte array"
            parsed = new Parsed(new S("bytes"), text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        if (parsed == null || parsed.value == null) {
            return RowFactory.create(parsed == null ? "null" : describe(parsed.schema), null);
        }
        StringBuilder sb = new StringBuilder();
        append(sb, parsed.value, false);
        return RowFactory.create(describe(parsed.schema), sb.toString());
    }

    /** A Connect schema as parseString builds them: never optional, no defaults. */
    static final class S {
        final String type;
        String name;
        Integer scale;
        S key;
        S value;

        S(String type) {
            this.type = type;
        }

        static S named(String type, String name) {
            S s = new S(type);
            s.name = name;
            return s;
        }
    }

    record Parsed(S schema, Object value) {
    }

    static final class DataException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        DataException(String message) {
            super(message, null, false, false);
        }
    }

    /** The schema's short description (the oracle harness writes Kafka's schemas the same way). */
    static String describe(S s) {
        if (s == null) {
            return "null";
        }
        if (DECIMAL.equals(s.name)) {
            return "decimal(" + s.scale + ")";
        }
        if (DATE.equals(s.name)) {
            return "date";
        }
        if (TIME.equals(s.name)) {
            return "time";
        }
        if (TIMESTAMP.equals(s.name)) {
            return "timestamp";
        }
        if (s.type.equals("array")) {
            return "array<" + describe(s.value) + ">";
        }
        if (s.type.equals("map")) {
            return "map<" + describe(s.key) + "," + describe(s.value) + ">";
        }
        return s.type;
    }

    // --- Values.parseString ------------------------------------------------------------------------------

    static Parsed parseString(String value) {
        if (value == null) {
            return new Parsed(null, null);
        }
        if (value.isEmpty()) {
            return new Parsed(new S("string"), value);
        }
        return new ValueParser(new Parser(value)).parse(false);
    }

    private static final class ValueParser {
        private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
        private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);
        private static final BigDecimal BIGGER_THAN_LONG = new BigDecimal("1e19");
        private static final int DATE_LENGTH = DATE_PATTERN.length();
        private static final int TIME_LENGTH = TIME_PATTERN.length() - 2;
        private static final int TIMESTAMP_LENGTH = TIMESTAMP_PATTERN.length() - 4;

        private final Parser parser;

        ValueParser(Parser parser) {
            this.parser = parser;
        }

        private boolean canParseSingleTokenLiteral(boolean embedded, String tokenLiteral) {
            int startPosition = parser.mark();
            if (parser.canConsume(tokenLiteral)) {
                if (embedded || !parser.hasNext()) {
                    return true;
                }
            }
            parser.rewindTo(startPosition);
            return false;
        }

        Parsed parse(boolean embedded) {
            if (!parser.hasNext()) {
                return null;
            } else if (embedded && parser.canConsume("\"")) {
                return parseQuotedString();
            } else if (canParseSingleTokenLiteral(embedded, "null")) {
                return null;
            } else if (canParseSingleTokenLiteral(embedded, "true")) {
                return new Parsed(new S("boolean"), Boolean.TRUE);
            } else if (canParseSingleTokenLiteral(embedded, "false")) {
                return new Parsed(new S("boolean"), Boolean.FALSE);
            }
            int startPosition = parser.mark();
            try {
                if (parser.canConsume("[")) {
                    return parseArray();
                } else if (parser.canConsume("{")) {
                    return parseMap();
                }
            } catch (DataException e) {
                parser.rewindTo(startPosition);
            }
            String token = parser.next();
            if (token.trim().isEmpty()) {
                return new Parsed(new S("string"), token);
            }
            return parseNextToken(embedded, token.trim());
        }

        private Parsed parseNextToken(boolean embedded, String token) {
            char firstChar = token.charAt(0);
            boolean firstCharIsDigit = Character.isDigit(firstChar);
            if (firstCharIsDigit) {
                Parsed temporal = parseMultipleTokensAsTemporal(token);
                if (temporal != null) {
                    return temporal;
                }
            }
            if (firstCharIsDigit || firstChar == '+' || firstChar == '-') {
                try {
                    return parseAsNumber(token);
                } catch (NumberFormatException e) {
                    // not a number
                }
            }
            if (embedded) {
                throw new DataException("Failed to parse embedded value");
            }
            return new Parsed(new S("string"), parser.original());
        }

        private Parsed parseQuotedString() {
            StringBuilder sb = new StringBuilder();
            while (parser.hasNext()) {
                if (parser.canConsume("\"")) {
                    break;
                }
                sb.append(parser.next());
            }
            String content = sb.toString();
            Parsed parsed = parseAsTemporal(content);
            return parsed != null ? parsed : new Parsed(new S("string"), content);
        }

        private Parsed parseArray() {
            List<Object> result = new ArrayList<>();
            SchemaMerger elementSchema = new SchemaMerger();
            while (parser.hasNext()) {
                if (parser.canConsume("]")) {
                    S listSchema = new S("array");
                    if (elementSchema.hasCommonSchema()) {
                        listSchema.value = elementSchema.schema();
                        List<Object> aligned = new ArrayList<>();
                        for (Object v : result) {
                            aligned.add(convertTo(listSchema.value, v));
                        }
                        result = aligned;
                    }
                    return new Parsed(listSchema, result);
                }
                if (parser.canConsume(",")) {
                    throw new DataException("Unable to parse an empty array element");
                }
                Parsed element = parse(true);
                elementSchema.merge(element);
                result.add(element != null ? element.value : null);
                int currentPosition = parser.mark();
                if (parser.canConsume("]")) {
                    parser.rewindTo(currentPosition);
                } else if (!parser.canConsume(",")) {
                    throw new DataException("Array elements missing ',' delimiter");
                }
            }
            throw new DataException("Array is missing terminating ']'");
        }

        private Parsed parseMap() {
            Map<Object, Object> result = new LinkedHashMap<>();
            SchemaMerger keySchema = new SchemaMerger();
            SchemaMerger valueSchema = new SchemaMerger();
            while (parser.hasNext()) {
                if (parser.canConsume("}")) {
                    S mapSchema = new S("map");
                    if (keySchema.hasCommonSchema() && valueSchema.hasCommonSchema()) {
                        mapSchema.key = keySchema.schema();
                        mapSchema.value = valueSchema.schema();
                        Map<Object, Object> aligned = new LinkedHashMap<>();
                        for (Map.Entry<?, ?> e : result.entrySet()) {
                            aligned.put(convertTo(mapSchema.key, e.getKey()), convertTo(mapSchema.value, e.getValue()));
                        }
                        result = aligned;
                    } else if (keySchema.hasCommonSchema()) {
                        mapSchema.key = keySchema.schema();
                        Map<Object, Object> aligned = new LinkedHashMap<>();
                        for (Map.Entry<?, ?> e : result.entrySet()) {
                            aligned.put(convertTo(mapSchema.key, e.getKey()), e.getValue());
                        }
                        result = aligned;
                    }
                    return new Parsed(mapSchema, result);
                }
                if (parser.canConsume(",")) {
                    throw new DataException("Unable to parse a map entry with no key or value");
                }
                Parsed key = parse(true);
                if (key == null || key.value == null) {
                    throw new DataException("Map entry may not have a null key");
                } else if (!parser.canConsume(":")) {
                    throw new DataException("Map entry is missing ':'");
                }
                Parsed value = parse(true);
                result.put(key.value, value != null ? value.value : null);
                parser.canConsume(",");
                keySchema.merge(key);
                valueSchema.merge(value);
            }
            throw new DataException("Map is missing terminating '}'");
        }

        private Parsed parseMultipleTokensAsTemporal(String token) {
            int position = parser.mark();
            String remainder = parser.next(4);
            if (remainder != null) {
                Parsed temporal = parseAsTemporal(token + remainder);
                if (temporal != null) {
                    return temporal;
                }
            }
            parser.rewindTo(position);
            return parseAsTemporal(token);
        }

        private static Parsed parseAsNumber(String token) {
            BigDecimal decimal = new BigDecimal(token);
            Parsed exactDecimal = parseAsExactDecimal(decimal);
            float fValue = decimal.floatValue();
            double dValue = decimal.doubleValue();
            if (exactDecimal != null) {
                return exactDecimal;
            } else if (fValue != Float.NEGATIVE_INFINITY && fValue != Float.POSITIVE_INFINITY && decimal.scale() != 0) {
                return new Parsed(new S("float32"), fValue);
            } else if (dValue != Double.NEGATIVE_INFINITY && dValue != Double.POSITIVE_INFINITY
                    && decimal.scale() != 0) {
                return new Parsed(new S("float64"), dValue);
            }
            S schema = S.named("bytes", DECIMAL);
            schema.scale = decimal.scale();
            return new Parsed(schema, decimal);
        }

        private static Parsed parseAsExactDecimal(BigDecimal decimal) {
            BigDecimal abs = decimal.abs();
            if (abs.compareTo(BIGGER_THAN_LONG) > 0 || (abs.compareTo(BigDecimal.ONE) < 0 && abs.signum() != 0)) {
                // Kafka 4.1's own check, before any digit is written out: past a long, or a fraction, is no
                // integer (setScale(0) of 1e999999999 or 1e-100000000 would build a number of a billion digits)
                return null;
            }
            BigDecimal ceil = decimal.setScale(0, RoundingMode.CEILING);
            BigDecimal floor = decimal.setScale(0, RoundingMode.FLOOR);
            if (ceil.equals(floor)) {
                BigInteger num = ceil.toBigIntegerExact();
                if (ceil.precision() >= 19 && (num.compareTo(LONG_MIN) < 0 || num.compareTo(LONG_MAX) > 0)) {
                    return null;
                }
                long integral = num.longValue();
                if ((byte) integral == integral) {
                    return new Parsed(new S("int8"), (byte) integral);
                } else if ((short) integral == integral) {
                    return new Parsed(new S("int16"), (short) integral);
                } else if ((int) integral == integral) {
                    return new Parsed(new S("int32"), (int) integral);
                }
                return new Parsed(new S("int64"), integral);
            }
            return null;
        }

        private static Parsed parseAsTemporal(String token) {
            if (token == null) {
                return null;
            }
            token = token.replace("\\:", ":");
            int tokenLength = token.length();
            if (tokenLength == TIME_LENGTH) {
                return parseAsTemporalType(token, S.named("int32", TIME), TIME_PATTERN);
            } else if (tokenLength == TIMESTAMP_LENGTH) {
                return parseAsTemporalType(token, S.named("int64", TIMESTAMP), TIMESTAMP_PATTERN);
            } else if (tokenLength == DATE_LENGTH) {
                return parseAsTemporalType(token, S.named("int32", DATE), DATE_PATTERN);
            }
            return null;
        }

        private static Parsed parseAsTemporalType(String token, S schema, String pattern) {
            ParsePosition pos = new ParsePosition(0);
            java.util.Date result = format(pattern).parse(token, pos);
            return pos.getIndex() != 0 ? new Parsed(schema, result) : null;
        }
    }

    private static SimpleDateFormat format(String pattern) {
        SimpleDateFormat format = new SimpleDateFormat(pattern);
        format.setTimeZone(UTC);
        return format;
    }

    // --- Values.SchemaMerger and mergeSchemas ------------------------------------------------------------

    private static final class SchemaMerger {
        private S common = null;
        private boolean compatible = true;

        void merge(Parsed latest) {
            if (latest != null && latest.schema != null && compatible) {
                if (common == null) {
                    common = latest.schema;
                } else {
                    common = mergeSchemas(common, latest.schema);
                    compatible = common != null;
                }
            }
        }

        boolean hasCommonSchema() {
            return common != null;
        }

        S schema() {
            return common;
        }
    }

    private static final List<String> NUMBERS = List.of("int8", "int16", "int32", "int64", "float32", "float64");

    /** Kafka's mergeSchemas for schemas that are never optional: the same type gives the newer schema; numeric
     * types widen (by type only, so an int32 Date absorbs an int8); anything else has no common schema. */
    private static S mergeSchemas(S previous, S newSchema) {
        if (!previous.type.equals(newSchema.type)) {
            int p = NUMBERS.indexOf(previous.type);
            int n = NUMBERS.indexOf(newSchema.type);
            if (p < 0 || n < 0) {
                return null;
            }
            return n > p ? newSchema : previous;
        }
        return newSchema;
    }

    // --- Values.convertTo, for the values parseString aligns (fromSchema null) ------------------------------

    private static Object convertTo(S toSchema, Object value) {
        if (value == null) {  // parseString's schemas are never optional
            throw new DataException("Unable to convert a null value to a schema that requires a value");
        }
        switch (toSchema.type) {
            case "bytes":
                if (DECIMAL.equals(toSchema.name)) {
                    if (value instanceof BigDecimal) {
                        return value;
                    }
                    if (value instanceof Number) {
                        return BigDecimal.valueOf(((Number) value).doubleValue());
                    }
                    if (value instanceof String) {
                        return new BigDecimal(value.toString());
                    }
                }
                if (value instanceof byte[]) {
                    return value;
                }
                throw new DataException("Unable to convert to bytes");
            case "string":
                StringBuilder sb = new StringBuilder();
                append(sb, value, false);
                return sb.toString();
            case "boolean":
                if (value instanceof Boolean) {
                    return value;
                }
                if (value instanceof String) {
                    Parsed parsed = parseString(value.toString());
                    if (parsed != null && parsed.value instanceof Boolean) {
                        return parsed.value;
                    }
                }
                return asLong(value) == 0L ? Boolean.FALSE : Boolean.TRUE;
            case "int8":
                return value instanceof Byte ? value : (byte) asLong(value);
            case "int16":
                return value instanceof Short ? value : (short) asLong(value);
            case "int32":
                if (DATE.equals(toSchema.name)) {
                    return temporal(value, () -> new java.util.Date((int) asLong(value) * MILLIS_PER_DAY));
                }
                if (TIME.equals(toSchema.name)) {
                    return temporal(value, () -> {
                        int millis = (int) asLong(value);
                        if (millis < 0 || millis > MILLIS_PER_DAY) {
                            throw new DataException("Time values must use number of milliseconds greater than 0 "
                                    + "and less than 86400000");
                        }
                        return new java.util.Date(millis);
                    });
                }
                return value instanceof Integer ? value : (int) asLong(value);
            case "int64":
                if (TIMESTAMP.equals(toSchema.name)) {
                    return temporal(value, () -> new java.util.Date(asLong(value)));
                }
                return value instanceof Long ? value : asLong(value);
            case "float32":
                return value instanceof Float ? value : (float) asDouble(value);
            case "float64":
                return value instanceof Double ? value : asDouble(value);
            case "array":
                if (value instanceof List) {
                    return value;
                }
                throw new DataException("Unable to convert to an array");
            case "map":
                if (value instanceof Map) {
                    return value;
                }
                throw new DataException("Unable to convert to a map");
            default:
                throw new DataException("Unable to convert to " + toSchema.type);
        }
    }

    /** convertToDate/Time/Timestamp without a source schema: a date stays as it is, anything else is a number. */
    private static Object temporal(Object value, java.util.function.Supplier<java.util.Date> numeric) {
        Object v = value instanceof String ? parseString(value.toString()).value : value;
        return v instanceof java.util.Date ? v : numeric.get();
    }

    private static long asLong(Object value) {
        try {
            if (value instanceof Number) {
                return ((Number) value).longValue();
            }
            if (value instanceof String) {
                return new BigDecimal(value.toString()).longValue();
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        throw new DataException("Unable to convert " + value + " to a number");
    }

    private static double asDouble(Object value) {
        try {
            if (value instanceof Number) {
                return ((Number) value).doubleValue();
            }
            if (value instanceof String) {
                return new BigDecimal(value.toString()).doubleValue();
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        return asLong(value);
    }

    // --- Values.convertToString -------------------------------------------------------------------------

    static void append(StringBuilder sb, Object value, boolean embedded) {
        if (value == null) {
            sb.append("null");
        } else if (value instanceof Number || value instanceof Boolean) {
            sb.append(value);
        } else if (value instanceof String) {
            if (embedded) {
                String escaped = ((String) value).replace("\\", "\\\\").replace("\"", "\\\"");
                sb.append('"').append(escaped).append('"');
            } else {
                sb.append(value);
            }
        } else if (value instanceof byte[]) {
            String text = Base64.getEncoder().encodeToString((byte[]) value);
            sb.append(embedded ? '"' + text + '"' : text);
        } else if (value instanceof List) {
            sb.append('[');
            appendIterable(sb, ((List<?>) value).iterator());
            sb.append(']');
        } else if (value instanceof Map) {
            sb.append('{');
            appendIterable(sb, ((Map<?, ?>) value).entrySet().iterator());
            sb.append('}');
        } else if (value instanceof Map.Entry) {
            Map.Entry<?, ?> entry = (Map.Entry<?, ?>) value;
            append(sb, entry.getKey(), true);
            sb.append(':');
            append(sb, entry.getValue(), true);
        } else if (value instanceof java.util.Date) {
            java.util.Date date = (java.util.Date) value;
            sb.append(dateFormatFor(date).format(date));
        } else {
            throw new DataException("Failed to serialize unexpected value type " + value.getClass().getName());
        }
    }

    private static void appendIterable(StringBuilder sb, Iterator<?> iter) {
        if (iter.hasNext()) {
            append(sb, iter.next(), true);
            while (iter.hasNext()) {
                sb.append(',');
                append(sb, iter.next(), true);
            }
        }
    }

    private static DateFormat dateFormatFor(java.util.Date value) {
        if (value.getTime() < MILLIS_PER_DAY) {
            return format(TIME_PATTERN);
        }
        if (value.getTime() % MILLIS_PER_DAY == 0) {
            return format(DATE_PATTERN);
        }
        return format(TIMESTAMP_PATTERN);
    }

    // --- Values.Parser: the tokenizer ----------------------------------------------------------------------

    static final class Parser {
        private final String original;
        private final CharacterIterator iter;
        private String nextToken = null;
        private String previousToken = null;

        Parser(String original) {
            this.original = original;
            this.iter = new StringCharacterIterator(this.original);
        }

        int position() {
            return iter.getIndex();
        }

        int mark() {
            return iter.getIndex() - (nextToken != null ? nextToken.length() : 0);
        }

        void rewindTo(int position) {
            iter.setIndex(position);
            nextToken = null;
            previousToken = null;
        }

        String original() {
            return original;
        }

        boolean hasNext() {
            return nextToken != null || canConsumeNextToken();
        }

        private boolean canConsumeNextToken() {
            return iter.getEndIndex() > iter.getIndex();
        }

        String next() {
            if (nextToken != null) {
                previousToken = nextToken;
                nextToken = null;
            } else {
                previousToken = consumeNextToken();
            }
            return previousToken;
        }

        String next(int n) {
            int current = mark();
            int start = mark();
            for (int i = 0; i != n; ++i) {
                if (!hasNext()) {
                    rewindTo(start);
                    return null;
                }
                next();
            }
            return original.substring(current, position());
        }

        private String consumeNextToken() {
            boolean escaped = false;
            int start = iter.getIndex();
            char c = iter.current();
            while (canConsumeNextToken()) {
                switch (c) {
                    case '\\':
                        escaped = !escaped;
                        break;
                    case ':':
                    case ',':
                    case '{':
                    case '}':
                    case '[':
                    case ']':
                    case '"':
                        if (!escaped) {
                            if (start < iter.getIndex()) {
                                return original.substring(start, iter.getIndex());
                            }
                            iter.next();
                            return original.substring(start, start + 1);
                        }
                        escaped = false;
                        break;
                    default:
                        escaped = false;
                        break;
                }
                c = iter.next();
            }
            return original.substring(start, iter.getIndex());
        }

        boolean canConsume(String expected) {
            if (isNext(expected)) {
                nextToken = null;
                return true;
            }
            return false;
        }

        private boolean isNext(String expected) {
            if (nextToken == null) {
                if (!hasNext()) {
                    return false;
                }
                nextToken = consumeNextToken();
            }
            while (nextToken.trim().isEmpty() && canConsumeNextToken()) {
                nextToken = consumeNextToken();
            }
            return nextToken.trim().equals(expected);
        }
    }
}
