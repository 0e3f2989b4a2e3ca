package io.lakeconnect;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;


/**
 * Kafka's JsonConverter text of a flat struct, written straight from Spark's internal row into bytes:
 * {@code prefix + {"f1":v1,"f2":v2,...} + suffix} (the prefix and suffix carry the envelope
 * {@code {"schema":...,"payload":} and {@code }} when schemas are enabled).
 *
 * <p>It writes what Spark's {@code to_json} (Jackson) writes for the same fields once brought to their
 * JSON form (Date as epoch days, Timestamp as epoch millis, Decimal as the base64 of its unscaled
 * two's-complement bytes or as a number, bytes as base64), without building a JSON text and copying it
 * around. Anything it does not handle the same way for certain (a null in a field that must not be
 * null or takes its default, a string that is not valid UTF-8, a float that is NaN or infinite, which
 * Jackson quotes) makes it return null, and the caller falls back to the general expression for that
 * record.
 *
 * <p>{@code spec} has one line per field: {@code <kind> <nulls> <JSON-quoted name>}, where kind is
 * {@code l} / {@code i} / {@code h} / {@code c} (long / int / short / byte), {@code f} / {@code d} (float /
 * double), {@code b} (boolean), {@code s} (string), {@code y} (binary),
 * {@code D} (date), {@code T} (timestamp), {@code B<p>.<s>} / {@code N<p>.<s>} (decimal as base64 bytes
 * / as a number) or {@code &#123;} (a struct: the lines after it, up to a line {@code &#125;}, are its
 * fields), and nulls is {@code n} (a null is written as null) or {@code x} (a null is not ours).
 */
public final class JsonRecord extends OneChildExpression {
    private static final long serialVersionUID = 1L;
    private static final byte[] NULL = "null".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] TRUE = "true".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] FALSE = "false".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] HEX = "0123456789ABCDEF".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SHORT_ESCAPES = new byte[128];
    private static final ThreadLocal<Buffer> BUFFERS = ThreadLocal.withInitial(Buffer::new);

    static {
        SHORT_ESCAPES['"'] = '"';
        SHORT_ESCAPES['\\'] = '\\';
        SHORT_ESCAPES['\b'] = 'b';
        SHORT_ESCAPES['\t'] = 't';
        SHORT_ESCAPES['\f'] = 'f';
        SHORT_ESCAPES['\n'] = 'n';
        SHORT_ESCAPES['\r'] = 'r';
    }

    private final String spec;
    private final String prefix;
    private final String suffix;

    private transient volatile Layout layout;  // the parsed spec, made on first use in each JVM

    public JsonRecord(Expression child, String spec, String prefix, String suffix) {
        super(child);
        this.spec = spec;
        this.prefix = prefix;
        this.suffix = suffix;
    }

    private static final class Field {
        final char kind;
        final boolean nullable;
        final byte[] name;
        final int precision;
        final int scale;
        final Field[] fields;  // a struct's

        /** The field of {@code lines[at[0]]}, and of the lines after it for a struct; at[0] moves past them. */
        Field(String[] lines, int[] at) {
            String line = lines[at[0]++];
            String[] parts = line.split(" ", 3);
            if (parts.length != 3 || parts[0].isEmpty() || !(parts[1].equals("n") || parts[1].equals("x"))) {
                throw new IllegalArgumentException("bad field spec: " + line);
            }
            kind = parts[0].charAt(0);
            nullable = parts[1].equals("n");
            name = (parts[2] + ":").getBytes(StandardCharsets.UTF_8);
            if (kind == 'B' || kind == 'N') {
                String[] ps = parts[0].substring(1).split("\\.");
                precision = Integer.parseInt(ps[0]);
                scale = Integer.parseInt(ps[1]);
            } else if ("lihcbfdsyDT{".indexOf(kind) >= 0 && parts[0].length() == 1) {
                precision = 0;
                scale = 0;
            } else {
                throw new IllegalArgumentException("bad field kind: " + parts[0]);
            }
            fields = kind == '{' ? fields(lines, at, true) : null;
        }

        /** The fields from lines[at[0]] on, up to the closing line of a struct ({@code nested}) or the end. */
        static Field[] fields(String[] lines, int[] at, boolean nested) {
            java.util.List<Field> out = new java.util.ArrayList<>();
            while (at[0] < lines.length && !lines[at[0]].equals("}")) {
                out.add(new Field(lines, at));
            }
            if (nested != (at[0] < lines.length)) {
                throw new IllegalArgumentException(nested ? "a struct's fields are not closed" : "a '}' closes nothing");
            }
            at[0]++;  // past the closing line
            return out.toArray(new Field[0]);
        }
    }

    private static final class Layout {
        final Field[] fields;
        final byte[] prefix;
        final byte[] suffix;

        Layout(String spec, String prefix, String suffix) {
            fields = Field.fields(spec.isEmpty() ? new String[0] : spec.split("\n"), new int[] {0}, false);
            this.prefix = prefix.getBytes(StandardCharsets.UTF_8);
            this.suffix = suffix.getBytes(StandardCharsets.UTF_8);
        }
    }

    /** A growable byte buffer, one per thread. */
    private static final class Buffer {
        byte[] bytes = new byte[1024];
        int size;

        void ensure(int more) {
            if (size + more > bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + more));
            }
        }

        void put(byte b) {
            ensure(1);
            bytes[size++] = b;
        }

        void put(byte[] b) {
            ensure(b.length);
            System.arraycopy(b, 0, bytes, size, b.length);
            size += b.length;
        }

        void putLong(long v) {
            if (v == Long.MIN_VALUE) {
                put("-9223372036854775808".getBytes(StandardCharsets.US_ASCII));
                return;
            }
            ensure(20);
            if (v < 0) {
                bytes[size++] = '-';
                v = -v;
            }
            int digits = 1;
            for (long t = v; t >= 10; t /= 10) {
                digits++;
            }
            int end = size + digits;
            for (int i = end - 1; i >= size; i--) {
                bytes[i] = (byte) ('0' + (v % 10));
                v /= 10;
            }
            size = end;
        }
    }

    /** The record's bytes, or null when this record needs the general expression. */
    public byte[] encode(InternalRow row) {
        Layout l = layout;
        if (l == null) {
            l = layout = new Layout(spec, prefix, suffix);
        }
        Buffer out = BUFFERS.get();
        out.size = 0;
        out.put(l.prefix);
        if (!struct(out, row, l.fields)) {
            return null;
        }
        out.put(l.suffix);
        return Arrays.copyOf(out.bytes, out.size);
    }

    /** Writes the struct {@code row} of {@code fields}; false when it is not ours. */
    private static boolean struct(Buffer out, InternalRow row, Field[] fields) {
        out.put((byte) '{');
        for (int i = 0; i < fields.length; i++) {
            Field f = fields[i];
            if (i > 0) {
                out.put((byte) ',');
            }
            out.put(f.name);
            if (row.isNullAt(i)) {
                if (!f.nullable) {
                    return false;
                }
                out.put(NULL);
                continue;
            }
            switch (f.kind) {
                case 'l':
                    out.putLong(row.getLong(i));
                    break;
                case 'i':
                    out.putLong(row.getInt(i));
                    break;
                case 'h':
                    out.putLong(row.getShort(i));
                    break;
                case 'c':
                    out.putLong(row.getByte(i));
                    break;
                case 'b':
                    out.put(row.getBoolean(i) ? TRUE : FALSE);
                    break;
                case 'f': {  // Jackson's writeNumber(float): Float.toString; NaN and infinities are not ours
                    float v = row.getFloat(i);
                    if (!Float.isFinite(v)) {
                        return false;
                    }
                    out.put(Float.toString(v).getBytes(StandardCharsets.US_ASCII));
                    break;
                }
                case 'd': {  // Jackson's writeNumber(double): Double.toString
                    double v = row.getDouble(i);
                    if (!Double.isFinite(v)) {
                        return false;
                    }
                    out.put(Double.toString(v).getBytes(StandardCharsets.US_ASCII));
                    break;
                }
                case 's':
                    if (!string(out, row.getUTF8String(i))) {
                        return false;
                    }
                    break;
                case 'y':
                    base64(out, row.getBinary(i));
                    break;
                case 'D':
                    out.putLong(row.getInt(i));
                    break;
                case 'T':
                    out.putLong(Math.floorDiv(row.getLong(i), 1000L));
                    break;
                case 'B':
                    base64(out, unscaledBytes(row.getDecimal(i, f.precision, f.scale)));
                    break;
                case 'N':
                    out.put(row.getDecimal(i, f.precision, f.scale).toJavaBigDecimal().toString()
                            .getBytes(StandardCharsets.US_ASCII));
                    break;
                case '{':
                    if (!struct(out, row.getStruct(i, f.fields.length), f.fields)) {
                        return false;
                    }
                    break;
                default:
                    throw new IllegalStateException("field kind " + f.kind);
            }
        }
        out.put((byte) '}');
        return true;
    }

    /** Kafka's Decimal.fromLogical: the unscaled value's minimal two's-complement bytes, big-endian. */
    static byte[] unscaledBytes(Decimal d) {
        if (d.precision() <= Decimal.MAX_LONG_DIGITS()) {
            long v = d.toUnscaledLong();
            int n = 8;
            while (n > 1) {  // drop leading bytes that only repeat the sign
                long top = v >> ((n - 1) * 8 - 1);
                if (top != 0 && top != -1) {
                    break;
                }
                n--;
            }
            byte[] b = new byte[n];
            for (int k = n - 1; k >= 0; k--) {
                b[k] = (byte) v;
                v >>= 8;
            }
            return b;
        }
        BigInteger unscaled = d.toJavaBigDecimal().unscaledValue();
        return unscaled.toByteArray();
    }

    private static void base64(Buffer out, byte[] value) {
        byte[] encoded = Base64.getEncoder().encode(value);
        out.ensure(encoded.length + 2);
        out.bytes[out.size++] = '"';
        System.arraycopy(encoded, 0, out.bytes, out.size, encoded.length);
        out.size += encoded.length;
        out.bytes[out.size++] = '"';
    }

    /** Jackson's string: quotes, backslash and controls escaped, everything else as it is. */
    private static boolean string(Buffer out, UTF8String value) {
        byte[] bytes = value.getBytes();
        for (byte b : bytes) {
            if (b < 0) {  // not ASCII: as Spark decodes it (malformed input becomes U+FFFD) and encodes it back
                bytes = value.toString().getBytes(StandardCharsets.UTF_8);
                break;
            }
        }
        out.ensure(bytes.length + 2);
        out.bytes[out.size++] = '"';
        for (byte b : bytes) {
            if (b >= 0 && b < 0x20 || b == '"' || b == '\\') {
                out.ensure(6);
                out.bytes[out.size++] = '\\';
                byte esc = SHORT_ESCAPES[b];
                if (esc != 0) {
                    out.bytes[out.size++] = esc;
                } else {
                    out.bytes[out.size++] = 'u';
                    out.bytes[out.size++] = '0';
                    out.bytes[out.size++] = '0';
                    out.bytes[out.size++] = HEX[(b >> 4) & 0xF];
                    out.bytes[out.size++] = HEX[b & 0xF];
                }
            } else {
                out.ensure(1);
                out.bytes[out.size++] = b;
            }
        }
        out.ensure(1);
        out.bytes[out.size++] = '"';
        return true;
    }

    // --- Spark's Expression ---------------------------------------------------------------------

    @Override
    public Object apply(Object value) {
        return value == null ? null : encode((InternalRow) value);
    }

    @Override
    protected Object[] constants() {
        return new Object[] {spec, prefix, suffix};
    }

    @Override
    protected Expression withChild(Expression newChild) {
        return new JsonRecord(newChild, spec, prefix, suffix);
    }

    @Override
    public DataType dataType() {
        return DataTypes.BinaryType;
    }

    @Override
    public boolean nullable() {
        return true;
    }

    @Override
    public String prettyName() {
        return "lakeconnect_json_record";
    }
}
