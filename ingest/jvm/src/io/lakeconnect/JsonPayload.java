package io.lakeconnect;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;


/**
 * The payload of a JsonConverter record {@code {"schema":...,"payload":{...}}} whose schema is a flat
 * struct, read in one scan of its bytes straight into Spark's value: {@code struct<handled:boolean,
 * value:struct<...>>}. When {@code handled} is false the record is not ours and the caller reads it with
 * the general expressions (a null value alone cannot say so: a null payload is a valid optional struct).
 *
 * <p>It gives what the general reading gives (the payload as a VARIANT, {@code variant_get} to the
 * JSON form, then the logical types), and hands back every record where it is not certain to: anything
 * {@link JsonScanner} declines, an envelope other than exactly {@code schema} and {@code payload}, a
 * payload member that is not a field or comes twice, a value of another JSON kind than its field's
 * (a string for an integer, 1.0 for an int32), a number out of its field's range, base64 other than the
 * canonical text, a decimal number with more fraction digits than the scale or an exponent, a float
 * whose two possible roundings differ, and a null (or missing field) where the schema forbids one.
 *
 * <p>{@code spec}: a first line {@code n} (a null payload is a null value) or {@code x} (a null payload
 * is not ours), then one line per field, {@code <kind> <nulls> <JSON-quoted name>}: kind as
 * {@link JsonRecord}'s ({@code l i h c b s y D T}), {@code f} / {@code d} (float / double) or
 * {@code M<p>.<s>} (a decimal as base64 bytes or a number: Kafka reads both), nulls {@code n} (null
 * reads as null; the caller applies defaults) or {@code x} (a null is not ours).
 */
public final class JsonPayload extends OneChildExpression {
    private static final long serialVersionUID = 1L;
    private static final InternalRow NOT_HANDLED = new GenericInternalRow(new Object[] {false, null});
    private static final InternalRow NULL_VALUE = new GenericInternalRow(new Object[] {true, null});
    private static final long MAX_MILLIS = Long.MAX_VALUE / 1000;

    private final String spec;

    private transient volatile Layout layout;  // the parsed spec, made on first use in each JVM

    public JsonPayload(Expression child, String spec) {
        super(child);
        this.spec = spec;
    }

    private static final class Field {
        final char kind;
        final boolean nullable;
        final byte[] name;
        final String nameText;
        final int precision;
        final int scale;

        Field(String line) {
            String[] parts = line.split(" ", 3);
            if (parts.length != 3 || parts[0].isEmpty() || !(parts[1].equals("n") || parts[1].equals("x"))) {
                throw new IllegalArgumentException("bad field spec: " + line);
            }
            kind = parts[0].charAt(0);
            nullable = parts[1].equals("n");
            JsonScanner s = new JsonScanner(parts[2].getBytes(StandardCharsets.UTF_8));
            if (!s.string() || s.pos != s.end) {
                throw new IllegalArgumentException("bad field name: " + parts[2]);
            }
            name = s.stringBytes();
            nameText = new String(name, StandardCharsets.UTF_8);
            if (kind == 'M') {
                String[] ps = parts[0].substring(1).split("\\.");
                precision = Integer.parseInt(ps[0]);
                scale = Integer.parseInt(ps[1]);
                if (scale < 0 || scale > precision || precision > 38 || precision < 1) {
                    throw new IllegalArgumentException("bad decimal: " + parts[0]);
                }
            } else if ("lihcbsyDTfd".indexOf(kind) >= 0 && parts[0].length() == 1) {
                precision = 0;
                scale = 0;
            } else {
                throw new IllegalArgumentException("bad field kind: " + parts[0]);
            }
        }

        DataType dataType() {
            switch (kind) {
                case 'l': return DataTypes.LongType;
                case 'i': return DataTypes.IntegerType;
                case 'h': return DataTypes.ShortType;
                case 'c': return DataTypes.ByteType;
                case 'b': return DataTypes.BooleanType;
                case 's': return DataTypes.StringType;
                case 'y': return DataTypes.BinaryType;
                case 'D': return DataTypes.DateType;
                case 'T': return DataTypes.TimestampType;
                case 'f': return DataTypes.FloatType;
                case 'd': return DataTypes.DoubleType;
                default: return DataTypes.createDecimalType(precision, scale);
            }
        }

        boolean is(byte[] b, int start, int stop) {
            if (stop - start != name.length) {
                return false;
            }
            for (int k = 0; k < name.length; k++) {
                if (b[start + k] != name[k]) {
                    return false;
                }
            }
            return true;
        }
    }

    private static final class Layout {
        final boolean nullable;
        final Field[] fields;
        final StructType type;

        Layout(String spec) {
            String[] lines = spec.split("\n", -1);
            if (!lines[0].equals("n") && !lines[0].equals("x")) {
                throw new IllegalArgumentException("bad payload spec: " + lines[0]);
            }
            nullable = lines[0].equals("n");
            fields = new Field[lines.length - 1];
            List<StructField> structFields = new ArrayList<>();
            for (int i = 1; i < lines.length; i++) {
                Field f = fields[i - 1] = new Field(lines[i]);
                structFields.add(DataTypes.createStructField(f.nameText, f.dataType(), f.nullable));
            }
            StructType value = DataTypes.createStructType(structFields);
            type = DataTypes.createStructType(List.of(
                    DataTypes.createStructField("handled", DataTypes.BooleanType, false),
                    DataTypes.createStructField("value", value, true)));
        }
    }

    private Layout layout() {
        Layout l = layout;
        if (l == null) {
            l = layout = new Layout(spec);
        }
        return l;
    }

    /** (handled, value) of the record (see the class comment). */
    public InternalRow decode(byte[] bytes) {
        if (bytes == null || !JsonScanner.scannable(bytes)) {
            return NOT_HANDLED;
        }
        Layout l = layout();
        Object[][] values = {null};  // stays null for a null payload
        boolean ours = new JsonScanner(bytes).envelope((s, schema) -> {
            if (schema) {
                return s.value(1);
            }
            if (s.nullLiteral()) {
                return l.nullable;
            }
            return s.at('{') && (values[0] = fields(s, l.fields)) != null;
        });
        if (!ours) {
            return NOT_HANDLED;
        }
        return values[0] == null ? NULL_VALUE : new GenericInternalRow(new Object[] {true, new GenericInternalRow(values[0])});
    }

    /** The payload object's field values in schema order, or null when the record is not ours. */
    private static Object[] fields(JsonScanner s, Field[] fields) {
        Object[] values = new Object[fields.length];
        boolean[] seen = new boolean[fields.length];
        s.pos++;  // the {
        s.ws();
        int next = 0;  // members usually come in the schema's order: look there first
        if (!s.take('}')) {
            while (true) {
                if (!s.name()) {
                    return null;
                }
                int i = find(s, fields, next);
                if (i < 0 || seen[i]) {
                    return null;  // not a field (Kafka ignores it; keep it simple), or a duplicate (VARIANT refuses it)
                }
                seen[i] = true;
                next = i + 1;
                s.ws();
                Field f = fields[i];
                if (s.nullLiteral()) {
                    if (!f.nullable) {
                        return null;
                    }
                } else if ((values[i] = value(s, f)) == null) {
                    return null;
                }
                s.ws();
                if (s.take('}')) {
                    break;
                }
                if (!s.take(',')) {
                    return null;
                }
                s.ws();
            }
        }
        for (int i = 0; i < fields.length; i++) {
            if (!seen[i] && !fields[i].nullable) {
                return null;  // a missing field reads as null
            }
        }
        return values;
    }

    private static int find(JsonScanner s, Field[] fields, int next) {
        byte[] b = s.b;
        int start = s.start;
        int stop = s.stop;
        if (s.escaped) {
            b = s.stringBytes();
            start = 0;
            stop = b.length;
        }
        int n = fields.length;
        for (int k = 0; k < n; k++) {
            int i = next + k < n ? next + k : next + k - n;
            if (fields[i].is(b, start, stop)) {
                return i;
            }
        }
        return -1;
    }

    /** The field's value at the scanner (not JSON null), or null when it is not ours. */
    private static Object value(JsonScanner s, Field f) {
        switch (f.kind) {
            case 'b':
                return s.bool();
            case 's':
                return s.string() ? UTF8String.fromBytes(s.stringBytes()) : null;
            case 'y':
                return s.at('"') && s.string() ? s.base64() : null;
            case 'M':
                return decimal(s, f);
            case 'f':
            case 'd':
                return s.number() ? floating(s, f.kind == 'f') : null;
            default:
                break;
        }
        if (!s.number() || s.fraction || s.exponent) {
            return null;
        }
        long v;
        try {
            v = Long.parseLong(s.numberText());
        } catch (NumberFormatException e) {
            return null;  // beyond a long
        }
        switch (f.kind) {
            case 'l':
                return v;
            case 'i':
            case 'D':
                return v == (int) v ? (Object) (int) v : null;
            case 'h':
                return v == (short) v ? (Object) (short) v : null;
            case 'c':
                return v == (byte) v ? (Object) (byte) v : null;
            case 'T':
                return v >= -MAX_MILLIS && v <= MAX_MILLIS ? (Object) (v * 1000) : null;  // timestamp_millis fails beyond
            default:
                throw new IllegalStateException("field kind " + f.kind);
        }
    }

    /**
     * A JSON number as float or double. Spark's VARIANT keeps a plain number as a long or a decimal and
     * one with an exponent (or beyond 38 digits) as a double, then casts it: a double is the correctly
     * rounded value either way, a float may be rounded twice (via the double). Both roundings must agree.
     * Negative zero and infinities are handed back (VARIANT and Kafka's BigDecimal differ on them).
     */
    private static Object floating(JsonScanner s, boolean single) {
        String text = s.numberText();
        double d = Double.parseDouble(text);
        if (Double.isInfinite(d) || (d == 0 && text.charAt(0) == '-')) {
            return null;
        }
        if (!single) {
            return d;
        }
        float f = Float.parseFloat(text);
        return !Float.isInfinite(f) && Float.floatToIntBits(f) == Float.floatToIntBits((float) d) ? (Object) f : null;
    }

    /** A Decimal field: base64 of the unscaled two's-complement bytes, or a plain number within the scale. */
    private static Decimal decimal(JsonScanner s, Field f) {
        BigInteger unscaled;
        if (s.at('"')) {
            byte[] bytes = s.string() ? s.base64() : null;
            if (bytes == null || bytes.length == 0 || bytes.length > 16) {
                return null;  // the general reading fails on no bytes and on more than 16
            }
            unscaled = new BigInteger(bytes);
        } else {
            if (!s.number() || s.exponent) {
                return null;
            }
            String text = s.numberText();
            int dot = text.indexOf('.');
            int fractionDigits = dot < 0 ? 0 : text.length() - dot - 1;
            if (fractionDigits > f.scale) {
                return null;  // Spark would round it to the scale, Kafka keeps it: neither is certain here
            }
            String digits = dot < 0 ? text : text.substring(0, dot) + text.substring(dot + 1);
            unscaled = new BigInteger(digits).multiply(BigInteger.TEN.pow(f.scale - fractionDigits));
        }
        if (unscaled.abs().compareTo(BigInteger.TEN.pow(f.precision)) >= 0) {
            return null;  // does not fit decimal(precision, scale)
        }
        if (f.precision <= Decimal.MAX_LONG_DIGITS()) {
            return Decimal.createUnsafe(unscaled.longValue(), f.precision, f.scale);
        }
        return Decimal.apply(new BigDecimal(unscaled, f.scale), f.precision, f.scale);
    }

    // --- Spark's Expression ---------------------------------------------------------------------

    @Override
    public Object apply(Object value) {
        return decode((byte[]) value);
    }

    @Override
    protected Object[] constants() {
        return new Object[] {spec};
    }

    @Override
    protected Expression withChild(Expression newChild) {
        return new JsonPayload(newChild, spec);
    }

    @Override
    public DataType dataType() {
        return layout().type;
    }

    @Override
    public boolean nullable() {
        return false;
    }

    @Override
    public String prettyName() {
        return "lakeconnect_json_payload";
    }
}
