package io.lakeconnect;

import java.util.Arrays;

import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The embedded schema of a JsonConverter record {@code {"schema":...,"payload":...}}, found in one scan
 * of its bytes: the raw text of the {@code schema} member when it is an object, null when it is JSON
 * null (or the record is null), and {@link #UNSURE} for anything else.
 *
 * <p>UNSURE covers every record the strict reading ({@code from_json} to a map, then the envelope
 * checks) might judge differently or reject: malformed JSON or UTF-8, empty bytes, members other than
 * exactly one {@code schema} and one {@code payload}, escaped top-level names, trailing content, a
 * schema that is not an object, and a schema object holding fractional numbers (whose text Spark
 * rewrites) or anything {@link JsonScanner} declines. The caller reads those records the strict way,
 * which also names the errors. For every other record the raw text parses to the same JSON value as
 * the strict reading's text of the member (which Jackson writes back compactly).
 */
public final class JsonEnvelope extends OneChildExpression {
    private static final long serialVersionUID = 1L;
    public static final UTF8String UNSURE = UTF8String.fromString("\u0001");

    public JsonEnvelope(Expression child) {
        super(child);
    }

    /** The record's schema text, null, or UNSURE (see the class comment). */
    public static UTF8String schemaText(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        if (!JsonScanner.scannable(bytes)) {
            return UNSURE;
        }
        int[] schemaAt = {-1, -1};
        boolean envelope = new JsonScanner(bytes).envelope((s, schema) -> {
            if (!schema) {
                return s.value(1);
            }
            if (s.nullLiteral()) {
                return true;
            }
            if (!s.at('{')) {
                return false;
            }
            schemaAt[0] = s.pos;
            s.sawFloat = false;
            if (!s.value(1) || s.sawFloat) {
                return false;
            }
            schemaAt[1] = s.pos;
            return true;
        });
        if (!envelope) {
            return UNSURE;
        }
        return schemaAt[0] < 0 ? null : UTF8String.fromBytes(Arrays.copyOfRange(bytes, schemaAt[0], schemaAt[1]));
    }

    // --- Spark's Expression ---------------------------------------------------------------------

    @Override
    public Object apply(Object value) {
        return schemaText((byte[]) value);
    }

    @Override
    protected Object[] constants() {
        return new Object[0];
    }

    @Override
    protected Expression withChild(Expression newChild) {
        return new JsonEnvelope(newChild);
    }

    @Override
    public DataType dataType() {
        return DataTypes.StringType;
    }

    @Override
    public boolean nullable() {
        return true;
    }

    @Override
    public String prettyName() {
        return "lakeconnect_json_schema_text";
    }
}
