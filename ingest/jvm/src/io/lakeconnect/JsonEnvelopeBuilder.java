package io.lakeconnect;

import java.io.Serializable;

import org.apache.spark.sql.catalyst.expressions.Expression;

import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/** The SQL function {@code lakeconnect_json_schema_text(bytes)}: builds a {@link JsonEnvelope}. */
public final class JsonEnvelopeBuilder extends AbstractFunction1<Seq<Expression>, Expression> implements Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public Expression apply(Seq<Expression> args) {
        if (args.size() != 1) {
            throw new IllegalArgumentException("lakeconnect_json_schema_text takes 1 argument, not " + args.size());
        }
        return new JsonEnvelope(args.apply(0));
    }
}
