package io.lakeconnect;

import java.util.Arrays;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.Block;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;

import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The plumbing lakeconnect's Catalyst expressions share: one child, a few constants, and a Java method
 * that maps the child's value to the result ({@link #apply}). Spark's {@code UnaryExpression} cannot be
 * extended from Java, so this is a plain {@code Expression}; it is code-generated as a call of
 * {@link #apply} on a reference to itself, so the stage around it stays code-generated.
 *
 * <p>A subclass's constructor takes the child and then {@link #constants()} in order: Spark copies a tree
 * node by calling the constructor with its product elements.
 */
abstract class OneChildExpression extends Expression implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    protected final Expression child;

    protected OneChildExpression(Expression child) {
        this.child = child;
    }

    /** The result for the child's value (null when the child is null). */
    public abstract Object apply(Object value);

    /** The constructor arguments after the child: what makes this expression what it is. */
    protected abstract Object[] constants();

    /** This expression over another child. */
    protected abstract Expression withChild(Expression newChild);

    @Override
    public final Seq<Expression> children() {
        return CollectionConverters.asScala(java.util.List.of(child)).toList();
    }

    @Override
    public final Object eval(InternalRow input) {
        return apply(child.eval(input));
    }

    @Override
    public final ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
        String self = ctx.addReferenceObj(prettyName(), this, getClass().getName());
        String type = CodeGenerator.javaType(dataType());
        ExprCode in = child.genCode(ctx);
        String code = "\n" + type + " " + ev.value() + " = (" + CodeGenerator.boxedType(dataType()) + ") " + self + ".apply("
                + in.isNull() + " ? null : (Object) " + in.value() + ");\n"
                + "boolean " + ev.isNull() + " = " + ev.value() + " == null;\n";
        Block block = new CodeBlock(CollectionConverters.asScala(java.util.List.of(code)).toList(),
                CollectionConverters.asScala(java.util.List.<JavaCode>of()).toList());
        ev.code_$eq(in.code().$plus(block));
        return ev;
    }

    @Override
    public final Expression withNewChildrenInternal(IndexedSeq<Expression> newChildren) {
        return withChild(newChildren.apply(0));
    }

    @Override
    public final int productArity() {
        return 1 + constants().length;
    }

    @Override
    public final Object productElement(int n) {
        Object[] constants = constants();
        if (n < 0 || n > constants.length) {
            throw new IndexOutOfBoundsException(String.valueOf(n));
        }
        return n == 0 ? child : constants[n - 1];
    }

    @Override
    public final boolean canEqual(Object other) {
        return other != null && other.getClass() == getClass();
    }

    @Override
    public final boolean equals(Object other) {
        return canEqual(other) && child.equals(((OneChildExpression) other).child)
                && Arrays.equals(constants(), ((OneChildExpression) other).constants());
    }

    @Override
    public final int hashCode() {
        return 31 * (31 * getClass().hashCode() + child.hashCode()) + Arrays.hashCode(constants());
    }
}
