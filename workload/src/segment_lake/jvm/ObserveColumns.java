// Type inference's one pass over a run: for every (table, column), the kinds of value seen (see
// FieldCodec) and where the column was first seen (earliest receivedAt, then messageId, then key
// position), so that new columns are appended in a stable order; and every table's date
// partitions, so that the catalog can be updated while the tables are written. Each task folds its
// rows into a small summary; the driver merges the summaries. Compiled by Janino: Java 7 syntax.
package segmentlake;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.unsafe.types.UTF8String;

public class ObserveColumns implements FlatMapFunction {
    // The event row's columns this reads (names of ParseLines.SCHEMA; infer.py selects them), and where a row has them
    public static final String[] READS = {"table", "_message_id", "_received_at", "fields", "partition"};
    final int table, messageId, receivedAt, fieldsAt, partition;

    ObserveColumns(org.apache.spark.sql.types.StructType row) {
        table = row.fieldIndex(READS[0]);
        messageId = row.fieldIndex(READS[1]);
        receivedAt = row.fieldIndex(READS[2]);
        fieldsAt = row.fieldIndex(READS[3]);
        partition = row.fieldIndex(READS[4]);
    }

    /** What one (table, column) looked like over some rows. */
    static final class Seen {
        final String table, column;
        String kinds = "";  // the kinds seen, one letter each (JSON null is not a kind)
        long receivedAt;
        String messageId;
        int position;

        Seen(String table, String column, long receivedAt, String messageId, int position) {
            this.table = table;
            this.column = column;
            this.receivedAt = receivedAt;
            this.messageId = messageId;
            this.position = position;
        }

        void kind(byte kind) {
            if (kind != FieldCodec.NULL && kinds.indexOf(kind) < 0) kinds += (char) kind;
        }

        void merge(Seen other) {
            for (int i = 0; i < other.kinds.length(); i++) kind((byte) other.kinds.charAt(i));
            if (other.before(receivedAt, messageId, position)) {
                receivedAt = other.receivedAt;
                messageId = other.messageId;
                position = other.position;
            }
        }

        /** As sent from a task to the driver (plain values: the driver loads these classes apart). */
        Object[] values() {
            return new Object[] {table, column, kinds, Long.valueOf(receivedAt), messageId, Integer.valueOf(position)};
        }

        static Seen of(Object[] values) {
            Seen seen = new Seen((String) values[0], (String) values[1], ((Long) values[3]).longValue(), (String) values[4],
                                 ((Integer) values[5]).intValue());
            seen.kinds = (String) values[2];
            return seen;
        }

        boolean before(long at, String id, int index) {
            if (receivedAt != at) return receivedAt < at;
            int order = messageId.compareTo(id);
            return order != 0 ? order < 0 : position < index;
        }
    }

    /** {"columns": [[table, column, kinds, receivedAt micros, messageId, position]], "partitions":
     *  [[table, partition]]} over ``events`` (table, _message_id, _received_at, fields, partition), as JSON. */
    public static String observe(Dataset events) throws java.io.IOException {
        List partials = events.queryExecution().toRdd().toJavaRDD().mapPartitions(new ObserveColumns(events.schema())).collect();
        Map merged = new HashMap();
        Set partitions = new HashSet();
        for (int i = 0; i < partials.size(); i++) {
            Object[] values = (Object[]) partials.get(i);
            if (values.length == 2) {  // [table, partition]
                partitions.add(java.util.Arrays.asList(values));
                continue;
            }
            Seen seen = Seen.of(values);
            String key = seen.table + "\u0000" + seen.column;
            Seen known = (Seen) merged.get(key);
            if (known == null) merged.put(key, seen);
            else known.merge(seen);
        }
        List columns = new ArrayList();
        Iterator all = merged.values().iterator();
        while (all.hasNext()) {
            columns.add(((Seen) all.next()).values());
        }
        Map out = new HashMap();
        out.put("columns", columns);
        out.put("partitions", new ArrayList(partitions));
        return new ObjectMapper().writeValueAsString(out);
    }

    public Iterator call(Object input) {
        Iterator rows = (Iterator) input;
        Map seen = new HashMap();  // table -> (column bytes -> Seen)
        Map partitions = new HashMap();  // table -> partition paths
        while (rows.hasNext()) {
            InternalRow row = (InternalRow) rows.next();
            String table = row.getUTF8String(this.table).toString();
            Map columns = (Map) seen.get(table);
            if (columns == null) {
                columns = new HashMap();
                seen.put(table, columns);
                partitions.put(table, new HashSet());
            }
            Set paths = (Set) partitions.get(table);
            UTF8String path = row.getUTF8String(this.partition);
            if (!paths.contains(path)) paths.add(path.clone());
            long receivedAt = row.getLong(this.receivedAt);
            String messageId = null;
            FieldCodec.Reader fields = new FieldCodec.Reader(row.getBinary(this.fieldsAt));
            for (int position = 0; fields.next(); position++) {
                Object column = fields.column();
                Seen known = (Seen) columns.get(column);
                if (messageId == null) messageId = row.getUTF8String(this.messageId).toString();
                if (known == null) {
                    known = new Seen(table, column.toString(), receivedAt, messageId, position);
                    columns.put(((org.apache.spark.unsafe.types.UTF8String) column).clone(), known);
                } else if (!known.before(receivedAt, messageId, position)) {
                    known.receivedAt = receivedAt;
                    known.messageId = messageId;
                    known.position = position;
                }
                known.kind(fields.kind);
            }
        }
        List out = new ArrayList();
        Iterator tables = seen.values().iterator();
        while (tables.hasNext()) {
            Iterator columns = ((Map) tables.next()).values().iterator();
            while (columns.hasNext()) out.add(((Seen) columns.next()).values());
        }
        Iterator tablePaths = partitions.entrySet().iterator();
        while (tablePaths.hasNext()) {
            Map.Entry entry = (Map.Entry) tablePaths.next();
            for (Iterator paths = ((Set) entry.getValue()).iterator(); paths.hasNext();) {
                out.add(new Object[] {entry.getKey(), paths.next().toString()});
            }
        }
        return out.iterator();
    }
}
