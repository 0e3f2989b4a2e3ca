package io.lakeconnect;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * A strict JSON scanner over UTF-8 bytes, for the one-pass readers ({@link JsonEnvelope},
 * {@link JsonPayload}): RFC 8259 only (what Spark's JSON reader accepts with Kafka's settings, no
 * single quotes, no NaN), and narrower where Spark's Jackson parser has limits or where texts might
 * read back differently: every method answers false for anything it is not sure about (malformed
 * input, but also surrogate escapes, deep nesting, very long numbers or names), and the caller then
 * hands the record to the general expressions.
 *
 * <p>Not thread-safe: one instance per record.
 */
final class JsonScanner {
    /** Records larger than this go the general way (Jackson's and VARIANT's size limits are above it). */
    static final int MAX_BYTES = 8 << 20;
    private static final int MAX_DEPTH = 64;         // Jackson refuses more than 1000; Python's parser recurses
    private static final int MAX_NUMBER = 100;       // Jackson refuses numbers longer than 1000 characters
    private static final int MAX_NAME = 10_000;      // Jackson refuses names longer than 50000
    private static final byte[] TRUE = {'t', 'r', 'u', 'e'};
    private static final byte[] FALSE = {'f', 'a', 'l', 's', 'e'};
    private static final byte[] NULL = {'n', 'u', 'l', 'l'};
    private static final byte[] SCHEMA = "schema".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] PAYLOAD = "payload".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] BASE64 = new byte[128];

    static {
        java.util.Arrays.fill(BASE64, (byte) -1);
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int i = 0; i < alphabet.length(); i++) {
            BASE64[alphabet.charAt(i)] = (byte) i;
        }
    }

    final byte[] b;
    final int end;
    int pos;
    /** Bounds of the last string (inside its quotes) or number scanned. */
    int start;
    int stop;
    /** The last string had an escape; the last number had a fraction / an exponent. */
    boolean escaped;
    boolean fraction;
    boolean exponent;
    /** A number with a fraction or exponent was scanned since this was last cleared. */
    boolean sawFloat;

    JsonScanner(byte[] bytes) {
        b = bytes;
        end = bytes.length;
    }

    /** What {@link #envelope} does at a member's value: reads it; false when the record is not ours. */
    interface Member {
        boolean read(JsonScanner s, boolean schema);
    }

    /** Whether a record's bytes are worth a scan: not empty, not too large, well-formed UTF-8. */
    static boolean scannable(byte[] bytes) {
        return bytes.length > 0 && bytes.length <= MAX_BYTES && validUtf8(bytes);
    }

    /**
     * The whole input as a JsonConverter envelope: one object with exactly the members {@code schema} and
     * {@code payload}, in either order and with unescaped names, {@code member} reading each value. False
     * for anything else, or when {@code member} answers false.
     */
    boolean envelope(Member member) {
        ws();
        if (!take('{')) {
            return false;
        }
        ws();
        boolean schema = false;
        boolean payload = false;
        while (true) {
            if (!name()) {
                return false;
            }
            boolean isSchema = stringIs(SCHEMA);
            if (isSchema ? schema : (payload || !stringIs(PAYLOAD))) {
                return false;  // a duplicate, another member, or an escaped name
            }
            schema |= isSchema;
            payload |= !isSchema;
            ws();
            if (!member.read(this, isSchema)) {
                return false;
            }
            ws();
            if (take('}')) {
                break;
            }
            if (!take(',')) {
                return false;
            }
            ws();
        }
        ws();
        return schema && payload && pos == end;
    }

    /** Whether the bytes are well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF). */
    static boolean validUtf8(byte[] b) {
        int n = b.length;
        int i = 0;
        while (i < n) {
            int c = b[i];
            if (c >= 0) {
                i++;
                continue;
            }
            c &= 0xFF;
            if (c < 0xC2) {
                return false;
            }
            if (c < 0xE0) {
                if (i + 1 >= n || !continuation(b[i + 1])) {
                    return false;
                }
                i += 2;
            } else if (c < 0xF0) {
                if (i + 2 >= n) {
                    return false;
                }
                int c1 = b[i + 1] & 0xFF;
                if (!continuation(b[i + 1]) || !continuation(b[i + 2])
                        || (c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) {
                    return false;
                }
                i += 3;
            } else if (c < 0xF5) {
                if (i + 3 >= n) {
                    return false;
                }
                int c1 = b[i + 1] & 0xFF;
                if (!continuation(b[i + 1]) || !continuation(b[i + 2]) || !continuation(b[i + 3])
                        || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) {
                    return false;
                }
                i += 4;
            } else {
                return false;
            }
        }
        return true;
    }

    private static boolean continuation(byte x) {
        return (x & 0xC0) == 0x80;
    }

    void ws() {
        while (pos < end) {
            byte c = b[pos];
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                pos++;
            } else {
                return;
            }
        }
    }

    /** Whether the next byte is {@code c}; consumes it if so. */
    boolean take(char c) {
        if (pos < end && b[pos] == c) {
            pos++;
            return true;
        }
        return false;
    }

    boolean at(char c) {
        return pos < end && b[pos] == c;
    }

    /** A string at pos; false when malformed, or for a surrogate escape (Jackson writes lone ones back differently). */
    boolean string() {
        if (pos >= end || b[pos] != '"') {
            return false;
        }
        pos++;
        start = pos;
        escaped = false;
        while (pos < end) {
            byte c = b[pos];
            if (c == '"') {
                stop = pos++;
                return true;
            }
            if (c == '\\') {
                escaped = true;
                if (pos + 1 >= end) {
                    return false;
                }
                switch (b[pos + 1]) {
                    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                        pos += 2;
                        break;
                    case 'u':
                        int cp = pos + 6 <= end ? hex4(pos + 2) : -1;
                        if (cp < 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
                            return false;
                        }
                        pos += 6;
                        break;
                    default:
                        return false;
                }
            } else if (c >= 0 && c < 0x20) {
                return false;  // Jackson refuses unescaped control characters
            } else {
                pos++;
            }
        }
        return false;
    }

    private int hex4(int at) {
        int v = 0;
        for (int k = at; k < at + 4; k++) {
            int c = b[k];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) {
                return -1;
            }
            v = v * 16 + d;
        }
        return v;
    }

    /** A number at pos (JSON's grammar); false when malformed or longer than Jackson takes for certain. */
    boolean number() {
        start = pos;
        fraction = false;
        exponent = false;
        take('-');
        if (take('0')) {
            // no more digits may follow a leading zero: the caller then finds no delimiter
        } else if (digits() == 0) {
            return false;
        }
        if (take('.')) {
            fraction = true;
            if (digits() == 0) {
                return false;
            }
        }
        if (pos < end && (b[pos] == 'e' || b[pos] == 'E')) {
            exponent = true;
            pos++;
            if (!take('+')) {
                take('-');
            }
            if (digits() == 0) {
                return false;
            }
        }
        stop = pos;
        sawFloat |= fraction || exponent;
        return stop - start <= MAX_NUMBER;
    }

    private int digits() {
        int from = pos;
        while (pos < end && b[pos] >= '0' && b[pos] <= '9') {
            pos++;
        }
        return pos - from;
    }

    boolean literal(byte[] word) {
        if (pos + word.length > end) {
            return false;
        }
        for (int k = 0; k < word.length; k++) {
            if (b[pos + k] != word[k]) {
                return false;
            }
        }
        pos += word.length;
        return true;
    }

    boolean nullLiteral() {
        return literal(NULL);
    }

    /** Boolean.TRUE / FALSE for a literal at pos, null when there is none. */
    Boolean bool() {
        if (literal(TRUE)) {
            return Boolean.TRUE;
        }
        return literal(FALSE) ? Boolean.FALSE : null;
    }

    /** Skips any value at pos, checking it; {@code depth}: containers around it. */
    boolean value(int depth) {
        if (pos >= end) {
            return false;
        }
        switch (b[pos]) {
            case '"':
                return string();
            case '{':
                return object(depth + 1);
            case '[':
                return array(depth + 1);
            case 't':
                return literal(TRUE);
            case 'f':
                return literal(FALSE);
            case 'n':
                return literal(NULL);
            default:
                return number();
        }
    }

    private boolean object(int depth) {
        if (depth > MAX_DEPTH) {
            return false;
        }
        pos++;
        ws();
        if (take('}')) {
            return true;
        }
        while (true) {
            if (!name()) {
                return false;
            }
            ws();
            if (!value(depth)) {
                return false;
            }
            ws();
            if (take('}')) {
                return true;
            }
            if (!take(',')) {
                return false;
            }
            ws();
        }
    }

    /** A member's name and the colon after it (the scanner at the value). */
    boolean name() {
        if (!string() || stop - start > MAX_NAME) {
            return false;
        }
        ws();
        return take(':');
    }

    private boolean array(int depth) {
        if (depth > MAX_DEPTH) {
            return false;
        }
        pos++;
        ws();
        if (take(']')) {
            return true;
        }
        while (true) {
            if (!value(depth)) {
                return false;
            }
            ws();
            if (take(']')) {
                return true;
            }
            if (!take(',')) {
                return false;
            }
            ws();
        }
    }

    /** Whether the last string (no escapes in it) is exactly {@code word}. */
    boolean stringIs(byte[] word) {
        int n = stop - start;
        if (escaped || n != word.length) {
            return false;
        }
        for (int k = 0; k < n; k++) {
            if (b[start + k] != word[k]) {
                return false;
            }
        }
        return true;
    }

    /** The last string's UTF-8 bytes, escapes decoded (it passed {@link #string}, so no surrogate escapes). */
    byte[] stringBytes() {
        if (!escaped) {
            return java.util.Arrays.copyOfRange(b, start, stop);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(stop - start);
        int k = start;
        while (k < stop) {
            byte c = b[k];
            if (c != '\\') {
                out.write(c);
                k++;
                continue;
            }
            byte e = b[k + 1];
            switch (e) {
                case 'b': out.write('\b'); break;
                case 'f': out.write('\f'); break;
                case 'n': out.write('\n'); break;
                case 'r': out.write('\r'); break;
                case 't': out.write('\t'); break;
                case 'u':
                    byte[] ch = String.valueOf((char) hex4(k + 2)).getBytes(StandardCharsets.UTF_8);
                    out.write(ch, 0, ch.length);
                    k += 4;
                    break;
                default: out.write(e); break;  // " \ /
            }
            k += 2;
        }
        return out.toByteArray();
    }

    /**
     * The last string as standard base64 with its padding, decoded; null unless it is exactly the text
     * every decoder reads the same way (no escapes, no line breaks, unused bits zero).
     */
    byte[] base64() {
        int n = stop - start;
        if (escaped || n % 4 != 0) {
            return null;
        }
        int pad = n > 0 && b[stop - 1] == '=' ? (b[stop - 2] == '=' ? 2 : 1) : 0;
        byte[] out = new byte[n / 4 * 3 - pad];
        int o = 0;
        for (int k = start; k < stop; k += 4) {
            boolean last = k + 4 == stop;
            int c0 = sextet(b[k]);
            int c1 = sextet(b[k + 1]);
            int c2 = last && pad == 2 ? 0 : sextet(b[k + 2]);
            int c3 = last && pad >= 1 ? 0 : sextet(b[k + 3]);
            if ((c0 | c1 | c2 | c3) < 0) {
                return null;
            }
            int bits = c0 << 18 | c1 << 12 | c2 << 6 | c3;
            out[o++] = (byte) (bits >> 16);
            if (last && pad == 2) {
                if ((c1 & 0xF) != 0) {
                    return null;
                }
                break;
            }
            out[o++] = (byte) (bits >> 8);
            if (last && pad == 1) {
                if ((c2 & 0x3) != 0) {
                    return null;
                }
                break;
            }
            out[o++] = (byte) bits;
        }
        return out;
    }

    private static int sextet(byte c) {
        return c < 0 ? -1 : BASE64[c];
    }

    /** The last number's text (ASCII). */
    String numberText() {
        return new String(b, start, stop - start, StandardCharsets.ISO_8859_1);
    }
}
