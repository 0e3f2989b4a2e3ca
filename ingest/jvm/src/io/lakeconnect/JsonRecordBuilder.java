package io.lakeconnect;

import java.io.Serializable;

import org.apache.spark.sql.catalyst.expressions.Expression;

import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * The SQL function {@code lakeconnect_json_record(struct, spec, prefix, suffix)}: builds a
 * {@link JsonRecord}. The last three arguments must be constant strings.
 */
public final class JsonRecordBuilder extends AbstractFunction1<Seq<Expression>, Expression> implements Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public Expression apply(Seq<Expression> args) {
        if (args.size() != 4) {
            throw new IllegalArgumentException("lakeconnect_json_record takes 4 arguments, not " + args.size());
        }
        return new JsonRecord(args.apply(0), constant(args.apply(1)), constant(args.apply(2)), constant(args.apply(3)));
    }

    private static String constant(Expression e) {
        if (!e.foldable()) {
            throw new IllegalArgumentException("lakeconnect_json_record: " + e + " is not a constant string");
        }
        Object value = e.eval(null);
        if (value == null) {
            throw new IllegalArgumentException("lakeconnect_json_record: " + e + " is null");
        }
        return value.toString();
    }
}
