package io.lakeconnect;

import java.io.Serializable;

import org.apache.spark.sql.catalyst.expressions.Expression;

import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * The SQL function {@code lakeconnect_batch_constant(constant)}: a {@link BatchConstant} of the value of
 * its one argument, which must be constant (evaluated here, once).
 */
public final class BatchConstantBuilder extends AbstractFunction1<Seq<Expression>, Expression> implements Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public Expression apply(Seq<Expression> args) {
        if (args.size() != 1) {
            throw new IllegalArgumentException("lakeconnect_batch_constant takes 1 argument, not " + args.size());
        }
        Expression e = args.apply(0);
        if (!e.foldable()) {
            throw new IllegalArgumentException("lakeconnect_batch_constant: " + e + " is not a constant");
        }
        return new BatchConstant(e.eval(null), e.dataType());
    }
}
