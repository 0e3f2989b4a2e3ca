package io.lakeconnect;

import java.io.Serializable;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.Block;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.types.DataType;

import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A value that is the same for every record of a batch but differs from batch to batch (the batch's
 * timestamp, its append time), kept out of the generated code.
 *
 * <p>Spark writes a constant of a primitive type into the Java code it generates for a query, so two
 * batches that differ only in such a value compile two classes (Janino, 60 to 180 ms a batch measured
 * on 2 cores); this expression is read from the query's reference objects instead, and the code of the
 * next batch is the code of this one, found in Spark's cache. It is not foldable, for the same reason:
 * folded, it would be a constant in the code again.
 */
public final class BatchConstant extends Expression implements Serializable {
    private static final long serialVersionUID = 1L;

    private final Object value;  // Spark's internal form (a Long for a timestamp, a UTF8String for a string)
    private final DataType type;

    public BatchConstant(Object value, DataType type) {
        this.value = value;
        this.type = type;
    }

    @Override
    public Seq<Expression> children() {
        return CollectionConverters.asScala(java.util.List.<Expression>of()).toList();
    }

    @Override
    public Expression withNewChildrenInternal(IndexedSeq<Expression> newChildren) {
        return this;
    }

    @Override
    public boolean foldable() {
        return false;
    }

    @Override
    public boolean nullable() {
        return value == null;
    }

    @Override
    public DataType dataType() {
        return type;
    }

    @Override
    public Object eval(InternalRow input) {
        return value;
    }

    @Override
    public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
        String boxed = CodeGenerator.boxedType(type);
        String ref = ctx.addReferenceObj("batchConstant", value, boxed);
        String code = "\nboolean " + ev.isNull() + " = " + (value == null) + ";\n"
                + CodeGenerator.javaType(type) + " " + ev.value() + " = "
                + (value == null ? CodeGenerator.defaultValue(type, true) : "(" + boxed + ") " + ref) + ";\n";
        Block block = new CodeBlock(CollectionConverters.asScala(java.util.List.of(code)).toList(),
                CollectionConverters.asScala(java.util.List.<JavaCode>of()).toList());
        ev.code_$eq(block);
        return ev;
    }

    @Override
    public String prettyName() {
        return "lakeconnect_batch_constant";
    }

    @Override
    public int productArity() {
        return 2;
    }

    @Override
    public Object productElement(int n) {
        if (n == 0) {
            return value;
        }
        if (n == 1) {
            return type;
        }
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }

    @Override
    public boolean canEqual(Object other) {
        return other instanceof BatchConstant;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof BatchConstant && java.util.Objects.equals(value, ((BatchConstant) other).value)
                && type.equals(((BatchConstant) other).type);
    }

    @Override
    public int hashCode() {
        return 31 * java.util.Objects.hashCode(value) + type.hashCode();
    }
}
