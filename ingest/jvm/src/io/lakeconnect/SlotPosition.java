package io.lakeconnect;

import java.util.HashMap;

import org.apache.spark.sql.api.java.UDF2;

/**
 * The position of a record among the records of its slot that came before it in this task, as long as
 * their sequence numbers rise; -1 for a record whose sequence number is not above the slot's last one.
 *
 * <p>A topic append numbers the offsets of each (Spark partition, topic partition) slot in one pass over
 * the records as they arrive, without sorting them first; -1 tells it they did not arrive in order, and
 * it sorts them instead. Spark gives every task its own deserialized copy of this function, so the
 * counts are per task; it must be registered as nondeterministic, so that Spark calls it exactly once
 * per record, in order.
 */
public final class SlotPosition implements UDF2<Integer, Long, Long> {
    private static final long serialVersionUID = 1L;

    private transient HashMap<Integer, long[]> slots;

    @Override
    public Long call(Integer slot, Long seq) {
        if (slot == null || seq == null) {
            return -1L;
        }
        if (slots == null) {
            slots = new HashMap<>();
        }
        long[] state = slots.get(slot); // {records so far, last sequence number}
        if (state == null) {
            slots.put(slot, new long[] {1L, seq});
            return 0L;
        }
        if (seq <= state[1]) {
            return -1L;
        }
        state[1] = seq;
        return state[0]++;
    }
}
