package io.lakeconnect;

import java.math.BigDecimal;

import org.apache.spark.sql.api.java.UDF1;

/**
 * Kafka's {@code Decimal.fromLogical} as a Spark SQL function: the unscaled value as minimal
 * two's-complement bytes, big-endian ({@code BigInteger.toByteArray}); null for null.
 *
 * <p>The caller passes a decimal column whose scale is the Connect schema's scale, so the unscaled value
 * Spark hands over is the one Kafka writes.
 */
public final class DecimalBytes implements UDF1<BigDecimal, byte[]> {
    private static final long serialVersionUID = 1L;

    @Override
    public byte[] call(BigDecimal value) {
        return value == null ? null : value.unscaledValue().toByteArray();
    }
}
