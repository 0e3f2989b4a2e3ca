package io.lakeconnect;

import java.io.Serializable;

import org.apache.spark.sql.catalyst.expressions.Expression;

import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * The SQL function {@code lakeconnect_json_payload(bytes, spec)}: builds a {@link JsonPayload}. The spec
 * must be a constant string.
 */
public final class JsonPayloadBuilder extends AbstractFunction1<Seq<Expression>, Expression> implements Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public Expression apply(Seq<Expression> args) {
        if (args.size() != 2) {
            throw new IllegalArgumentException("lakeconnect_json_payload takes 2 arguments, not " + args.size());
        }
        Expression spec = args.apply(1);
        Object value = spec.foldable() ? spec.eval(null) : null;
        if (value == null) {
            throw new IllegalArgumentException("lakeconnect_json_payload: " + spec + " is not a constant string");
        }
        return new JsonPayload(args.apply(0), value.toString());
    }
}
