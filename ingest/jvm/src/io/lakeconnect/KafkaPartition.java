package io.lakeconnect;

import org.apache.spark.sql.api.java.UDF2;

/**
 * Kafka's default partitioner for a keyed record, as a Spark SQL function:
 * {@code toPositive(murmur2(keyBytes)) % numPartitions}, null for a null key.
 *
 * <p>{@link #murmur2} is Kafka's {@code org.apache.kafka.common.utils.Utils.murmur2}, line for line.
 * Spark calls this inside its generated code, without a trip through Python.
 */
public final class KafkaPartition implements UDF2<byte[], Integer, Integer> {
    private static final long serialVersionUID = 1L;

    @Override
    public Integer call(byte[] key, Integer numPartitions) {
        if (key == null || numPartitions == null) {
            return null;
        }
        return (murmur2(key) & 0x7fffffff) % numPartitions;
    }

    public static int murmur2(final byte[] data) {
        int length = data.length;
        int seed = 0x9747b28c;
        final int m = 0x5bd1e995;
        final int r = 24;
        int h = seed ^ length;
        int length4 = length / 4;
        for (int i = 0; i < length4; i++) {
            final int i4 = i * 4;
            int k = (data[i4] & 0xff) + ((data[i4 + 1] & 0xff) << 8) + ((data[i4 + 2] & 0xff) << 16)
                    + ((data[i4 + 3] & 0xff) << 24);
            k *= m;
            k ^= k >>> r;
            k *= m;
            h *= m;
            h ^= k;
        }
        switch (length % 4) {
            case 3:
                h ^= (data[(length & ~3) + 2] & 0xff) << 16;
            case 2:
                h ^= (data[(length & ~3) + 1] & 0xff) << 8;
            case 1:
                h ^= data[length & ~3] & 0xff;
                h *= m;
        }
        h ^= h >>> 13;
        h *= m;
        h ^= h >>> 15;
        return h;
    }
}
