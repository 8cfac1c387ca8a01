// Parses a run's lines (ParseEvent), routes each event to its table and date partition, and
// shuffles the rows once by (table, partition). The shuffle's files on local disk are what the
// later stages read again (counts, dedup, inference, write), instead of a cache in the heap, and
// they are already grouped as the writer needs them. Compiled at run time by Janino: Java 7 syntax.
package segmentlake;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

public class ParseLines implements FlatMapFunction {
    // file and line number make the row id; table, partition and salt spread rows over the shuffle
    public static final StructType SCHEMA = StructType.fromDDL(
        "_row bigint, file string, reason string, raw string, table string, partition string, "
        + "_message_id string, _received_at timestamp, fields binary, "
        + "discards array<struct<column:string,value:string,reason:string>>, salt int");
    // A table partition with more rows than this in one input task is split over several shuffle
    // tasks, so one busy table does not become one long task; smaller ones stay in one file.
    static final int ROWS_PER_SPLIT = 16384;
    static final long MICROS_PER_HOUR = 3600L * 1000000L;

    final String tablePrefix;
    final String[] keys, patterns;

    ParseLines(String tablePrefix, String[] keys, String[] patterns) {
        this.tablePrefix = tablePrefix;
        this.keys = keys;
        this.patterns = patterns;
    }

    /** ``lines`` (value, file) parsed, routed and shuffled into ``tasks`` partitions by table and
     *  partition; ``partitionsJson`` is the partition keys with their date patterns, [[key, pattern]]. */
    public static Dataset stage(SparkSession spark, Dataset lines, String tablePrefix, String partitionsJson, int tasks)
            throws java.io.IOException {
        List pairs = (List) new ObjectMapper().readValue(partitionsJson, List.class);
        String[] keys = new String[pairs.size()], patterns = new String[pairs.size()];
        for (int i = 0; i < pairs.size(); i++) {
            keys[i] = (String) ((List) pairs.get(i)).get(0);
            patterns[i] = (String) ((List) pairs.get(i)).get(1);
        }
        RDD parsed = lines.queryExecution().toRdd().toJavaRDD()
            .mapPartitions(new ParseLines(tablePrefix, keys, patterns)).rdd();
        Dataset shuffled = spark.internalCreateDataFrame(parsed, SCHEMA, false).repartition(
            tasks, new Column[] {new Column("table"), new Column("partition"), new Column("salt")});
        // the RDD of the shuffle's output: every job on it reuses the shuffle files
        return spark.internalCreateDataFrame(shuffled.queryExecution().toRdd(), SCHEMA, false);
    }

    public Iterator call(Object input) {
        final Iterator lines = (Iterator) input;
        final long base = ((long) TaskContext.getPartitionId()) << 33;  // as monotonically_increasing_id
        final FieldCodec.Writer out = new FieldCodec.Writer();
        final Map tables = new HashMap(), partitions = new HashMap(), counts = new HashMap();
        final DateTimeFormatter[] formats = new DateTimeFormatter[patterns.length];
        for (int i = 0; i < patterns.length; i++) formats[i] = DateTimeFormatter.ofPattern(patterns[i]);
        return new Iterator() {
            InternalRow next;
            long index;

            public boolean hasNext() {
                while (next == null && lines.hasNext()) next = row((InternalRow) lines.next());
                return next != null;
            }

            public Object next() {
                hasNext();
                InternalRow row = next;
                next = null;
                return row;
            }

            public void remove() {
                throw new UnsupportedOperationException();
            }

            InternalRow row(InternalRow line) {
                if (line.isNullAt(0)) {  // the unreadable rest of a file (ReadFiles): rejected with its reason
                    Object[] values = new Object[SCHEMA.size()];
                    values[0] = Long.valueOf(base + index++);
                    values[1] = line.getUTF8String(1).clone();
                    values[2] = line.getUTF8String(2).clone();
                    values[10] = Integer.valueOf(0);
                    return new GenericInternalRow(values);
                }
                String value = line.getUTF8String(0).toString();
                if (isBlank(value)) return null;
                Object[] values = new Object[SCHEMA.size()];
                values[0] = Long.valueOf(base + index++);
                values[1] = line.getUTF8String(1).clone();
                ParseEvent.Parsed parsed = ParseEvent.parse(value, out);
                if (parsed.reason != null) {
                    values[2] = UTF8String.fromString(parsed.reason);
                    values[3] = UTF8String.fromString(value);
                    values[10] = Integer.valueOf(0);
                    return new GenericInternalRow(values);
                }
                UTF8String table = (UTF8String) tables.get(parsed.segmentType);
                if (table == null) {
                    table = UTF8String.fromString(tablePrefix + parsed.segmentType);
                    tables.put(parsed.segmentType, table);
                }
                UTF8String partition = partition(parsed.receivedAt);
                values[4] = table;
                values[5] = partition;
                values[6] = UTF8String.fromString(parsed.messageId);
                values[7] = Long.valueOf(parsed.receivedAt);
                values[8] = parsed.fields;
                values[9] = discards(parsed.discards);
                String split = table + "/" + partition;
                Integer count = (Integer) counts.get(split);
                int seen = count == null ? 0 : count.intValue();
                counts.put(split, Integer.valueOf(seen + 1));
                values[10] = Integer.valueOf(seen / ROWS_PER_SPLIT);
                return new GenericInternalRow(values);
            }

            /** The partition path (day=2024-01-02/hr=03) of a receivedAt; every key is an hour or coarser. */
            UTF8String partition(long micros) {
                Long hour = Long.valueOf(Math.floorDiv(micros, MICROS_PER_HOUR));
                UTF8String known = (UTF8String) partitions.get(hour);
                if (known != null) return known;
                LocalDateTime moment = LocalDateTime.ofEpochSecond(hour.longValue() * 3600L, 0, ZoneOffset.UTC);
                StringBuilder path = new StringBuilder();
                for (int i = 0; i < keys.length; i++) {
                    if (i > 0) path.append('/');
                    path.append(keys[i]).append('=').append(formats[i].format(moment));
                }
                UTF8String made = UTF8String.fromString(path.toString());
                partitions.put(hour, made);
                return made;
            }
        };
    }

    /** A line of nothing but spaces is no event (as Spark's trim sees it). */
    static boolean isBlank(String line) {
        for (int i = 0; i < line.length(); i++) if (line.charAt(i) != ' ') return false;
        return true;
    }

    static GenericArrayData discards(List discards) {
        Object[] rows = new Object[discards.size()];
        for (int i = 0; i < rows.length; i++) {
            String[] discard = (String[]) discards.get(i);
            rows[i] = new GenericInternalRow(new Object[] {
                UTF8String.fromString(discard[0]), UTF8String.fromString(discard[1]), UTF8String.fromString(discard[2])});
        }
        return new GenericArrayData(rows);
    }
}
