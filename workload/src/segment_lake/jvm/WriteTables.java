// Writes every table of a run in one Spark job: each task takes rows sorted by (table, partition),
// casts each row's fields (see FieldCodec.java) to its table's column types, and writes
// one Parquet file after another through Spark's own Parquet writer, so the number of jobs does not
// grow with the number of tables. Values that cannot be cast without loss become NULL and go to a
// discards file. Each task also writes the messageId and receivedAt of the rows it wrote to a
// landed file (the dedup index of later runs). Returns one line per file written: kind, table,
// partition, path, rows (tab-separated).
// Compiled at run time by Janino (shipped with Spark), so: Java 7 syntax, raw collections.
package segmentlake;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetOutputWriter;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

public class WriteTables implements FlatMapFunction {
    // How a value is cast: one code per column type (the types are Spark's DDL names, column_types.py)
    static final int STRING = 0, BIGINT = 1, DECIMAL = 2, BOOLEAN = 3, TIMESTAMP = 4;
    static final StructType LANDED_SCHEMA = StructType.fromDDL("message_id string, received_at timestamp");

    final EventColumns in;  // where the event row (ParseLines.SCHEMA) has each column this reads
    final StructType discardsSchema;  // a discarded value's record (parquet_tables.DISCARD_COLUMNS)
    final int[] discardsAt;  // where each of its columns goes: table, column, messageId, receivedAt, value, reason
    final Map columns;  // table -> list of [column, type name] in table order
    final Map settings;  // Hadoop and Parquet settings, prepared on the driver
    final String stage;
    final Set reserved;  // column names that are partition keys
    final long maxRecordsPerFile;
    final int maxColumns;

    WriteTables(StructType rows, StructType discardsSchema, Map columns, Map settings, String stage, Set reserved,
                long maxRecordsPerFile, int maxColumns) {
        this.in = new EventColumns(rows);
        this.discardsSchema = discardsSchema;
        String[] names = {"table_name", "column_name", "message_id", "received_at", "value", "reason"};
        this.discardsAt = new int[names.length];
        for (int i = 0; i < names.length; i++) discardsAt[i] = discardsSchema.fieldIndex(names[i]);
        this.columns = columns;
        this.settings = settings;
        this.stage = stage;
        this.reserved = reserved;
        this.maxRecordsPerFile = maxRecordsPerFile;
        this.maxColumns = maxColumns;
    }

    /** Writes ``rows`` (sorted by table and partition within each partition) below ``stage``.
     *  ``columnsJson`` maps each table to its [name, type] pairs; ``reservedJson`` lists the partition
     *  keys; ``parquetJson`` adds Parquet settings. Returns the files written, one per line. */
    public static String write(SparkSession spark, Dataset rows, String columnsJson, String stage, String reservedJson,
                               long maxRecordsPerFile, int maxColumns, String parquetJson, String discardsDdl)
            throws java.io.IOException {
        StructType discardsSchema = StructType.fromDDL(discardsDdl);
        ObjectMapper json = new ObjectMapper();
        Map columns = (Map) json.readValue(columnsJson, Map.class);
        List reservedColumns = (List) json.readValue(reservedJson, List.class);
        Job job = Job.getInstance(spark.sessionState().newHadoopConf());
        // Spark's own set-up of a Parquet write (codec, timestamp type, write support), as for df.write
        new ParquetFileFormat().prepareWrite(spark, job, scala.collection.immutable.Map$.MODULE$.empty(),
                                             discardsSchema);
        Map settings = new HashMap();
        Iterator entries = job.getConfiguration().iterator();
        while (entries.hasNext()) {
            Map.Entry entry = (Map.Entry) entries.next();
            settings.put(entry.getKey(), entry.getValue());
        }
        settings.putAll((Map) json.readValue(parquetJson, Map.class));
        Set reserved = new HashSet();
        for (int i = 0; i < reservedColumns.size(); i++) reserved.add(UTF8String.fromString((String) reservedColumns.get(i)));
        WriteTables task = new WriteTables(rows.schema(), discardsSchema, columns, settings, stage, reserved,
                                           maxRecordsPerFile, maxColumns);
        // A job outside Spark SQL's own execution does not carry the session's SQL settings to its
        // tasks (the Parquet writer reads them there): pass them as local properties, as Spark SQL does.
        org.apache.spark.SparkContext context = spark.sparkContext();
        Map sqlConf = (Map) scala.collection.JavaConverters.mapAsJavaMapConverter(
            spark.sessionState().conf().getAllConfs()).asJava();
        Map previous = new HashMap();
        Iterator keys = sqlConf.keySet().iterator();
        while (keys.hasNext()) {
            String key = (String) keys.next();
            previous.put(key, context.getLocalProperty(key));
            context.setLocalProperty(key, (String) sqlConf.get(key));
        }
        List written;
        try {
            written = rows.queryExecution().toRdd().toJavaRDD().mapPartitions(task).collect();
        } finally {
            Iterator restore = previous.entrySet().iterator();
            while (restore.hasNext()) {
                Map.Entry entry = (Map.Entry) restore.next();
                context.setLocalProperty((String) entry.getKey(), (String) entry.getValue());
            }
        }
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < written.size(); i++) lines.append((String) written.get(i)).append('\n');
        return lines.toString();
    }

    public Iterator call(Object input) throws Exception {
        Iterator rows = (Iterator) input;
        Configuration hadoop = new Configuration(false);
        Iterator entries = settings.entrySet().iterator();
        while (entries.hasNext()) {
            Map.Entry entry = (Map.Entry) entries.next();
            hadoop.set((String) entry.getKey(), (String) entry.getValue());
        }
        TaskContext context = TaskContext.get();
        // a retried task writes new names; only the files it reports are published
        String prefix = "part-" + context.partitionId() + "-" + context.attemptNumber() + "-";
        Task task = new Task(hadoop, prefix, context.partitionId(), context.attemptNumber());
        try {
            while (rows.hasNext()) task.write((InternalRow) rows.next());
            task.closeAll();
        } catch (Exception error) {
            task.abort();
            throw error;
        }
        return task.written.iterator();
    }

    /** One table's column positions and types. Columns named like a partition key (an Iceberg table's files hold
     *  them) take the values of the file's partition. */
    static final class Table {
        final String name;
        final StructType schema;
        final Map index = new HashMap();  // UTF8String column -> Integer position
        final int[] types;
        final List keyColumns = new ArrayList();  // [position, key name] of each partition key column
        final int dataColumns;

        Table(String name, List pairs, Set reserved) {
            this.name = name;
            StructType fields = new StructType();
            types = new int[pairs.size()];
            for (int i = 0; i < pairs.size(); i++) {
                List pair = (List) pairs.get(i);
                String column = (String) pair.get(0), type = (String) pair.get(1);
                index.put(UTF8String.fromString(column), Integer.valueOf(i));
                types[i] = typeCode(type);
                fields = fields.add(column, DataType.fromDDL(type));  // the type names are Spark's DDL (column_types.py)
                if (reserved.contains(UTF8String.fromString(column))) keyColumns.add(new Object[] {Integer.valueOf(i), column});
            }
            schema = fields;
            dataColumns = types.length - keyColumns.size();
        }

        /** The values of the partition key columns in the file of ``partition`` (key=value/...), by position. */
        Object[] keyValues(String partition) {
            Map found = new HashMap();
            String[] parts = partition.split("/");
            for (int i = 0; i < parts.length; i++) {
                int equals = parts[i].indexOf('=');
                found.put(parts[i].substring(0, equals), parts[i].substring(equals + 1));
            }
            Object[] values = new Object[types.length];
            for (int i = 0; i < keyColumns.size(); i++) {
                Object[] key = (Object[]) keyColumns.get(i);
                values[((Integer) key[0]).intValue()] = UTF8String.fromString((String) found.get(key[1]));
            }
            return values;
        }
    }

    /** A Parquet file being written. */
    static final class Output {
        final String kind, table, partition, path;
        final OutputWriter writer;
        long rows;

        /** ``context``: the task's, shared by its files (a copy of the settings for each of thousands of small
         *  files cost as much as writing them); the writer reads the schema from it once, as it starts. */
        Output(String kind, String table, String partition, String path, StructType schema,
               TaskAttemptContextImpl context) {
            this.kind = kind;
            this.table = table;
            this.partition = partition;
            this.path = path;
            ParquetWriteSupport$.MODULE$.setSchema(schema, context.getConfiguration());
            writer = new ParquetOutputWriter(path, context);
        }

        void write(InternalRow row) {
            writer.write(row);
            rows++;
        }

        Object close() {
            writer.close();
            return kind + "\t" + table + "\t" + partition + "\t" + path + "\t" + rows;
        }
    }

    final class Task {
        final TaskAttemptContextImpl context;
        final String prefix;
        final Map tables = new HashMap();
        final List written = new ArrayList();
        Output data, discards, landed;
        UTF8String table, partition;
        Object[] keyValues;  // of the data file being written: its partition's key values, by column position
        Table current;
        int files;

        Task(Configuration hadoop, String prefix, int partitionId, int attempt) {
            this.context = new TaskAttemptContextImpl(
                hadoop, new TaskAttemptID("segmentlake", 0, TaskType.MAP, partitionId, attempt));
            this.prefix = prefix;
        }

        void write(InternalRow row) {
            UTF8String rowTable = row.getUTF8String(in.table), rowPartition = row.getUTF8String(in.partition);
            if (data == null || !rowTable.equals(table) || !rowPartition.equals(partition) || data.rows >= maxRecordsPerFile) {
                if (data != null) written.add(data.close());
                data = null;
                table = rowTable.clone();
                partition = rowPartition.clone();
                current = table(table.toString());
                keyValues = current.keyValues(partition.toString());
                data = new Output("data", current.name, partition.toString(),
                                  stage + "/tables/" + current.name + "/" + partition + "/" + prefix + (files++) + ".snappy.parquet",
                                  current.schema, context);
            }
            // a row starts from the file's partition key values (none but in an Iceberg table's files)
            Object[] values = current.keyColumns.isEmpty() ? new Object[current.types.length] : (Object[]) keyValues.clone();
            ArrayData parsed = row.getArray(in.discards);
            for (int i = 0; i < parsed.numElements(); i++) {
                InternalRow discard = parsed.getStruct(i, 3);
                discard(row, discard.getUTF8String(0), discard.getUTF8String(1), discard.getUTF8String(2));
            }
            FieldCodec.Reader fields = new FieldCodec.Reader(row.getBinary(in.fields));
            while (fields.next()) {
                if (fields.kind == FieldCodec.NULL) continue;
                UTF8String column = fields.column();
                Integer position = (Integer) current.index.get(column);
                if (reserved.contains(column)) {
                    discard(row, column, fields.original(), UTF8String.fromString("column name is a partition key of the table"));
                } else if (position == null && current.dataColumns >= maxColumns) {
                    discard(row, column, fields.original(), UTF8String.fromString(
                        "the table has its limit of " + maxColumns + " columns (--max-columns-per-table)"));
                } else if (position == null) {  // the schema is inferred from these rows: a bug, not data
                    throw new IllegalStateException("column " + column + " is not in the schema of " + current.name);
                } else {
                    int type = current.types[position.intValue()];
                    Object value = cast(fields, type);
                    if (value == null) {
                        discard(row, column, fields.original(), UTF8String.fromString(
                            "cannot be stored in a " + current.schema.fields()[position.intValue()].dataType().simpleString()
                            + " column without loss"));
                    }
                    values[position.intValue()] = value;
                }
            }
            data.write(new GenericInternalRow(values));
            if (landed == null) {
                landed = new Output("landed", null, null, stage + "/landed/" + prefix + (files++) + ".snappy.parquet",
                                    LANDED_SCHEMA, context);
            }
            landed.write(new GenericInternalRow(new Object[] {row.getUTF8String(in.messageId), receivedAt(row)}));
        }

        Object receivedAt(InternalRow row) {
            return row.isNullAt(in.receivedAt) ? null : Long.valueOf(row.getLong(in.receivedAt));
        }

        void discard(InternalRow row, UTF8String column, UTF8String value, UTF8String reason) {
            if (discards == null) {
                discards = new Output("discards", null, null, stage + "/discards/" + prefix + (files++) + ".snappy.parquet",
                                      discardsSchema, context);
            }
            Object[] record = new Object[discardsAt.length];
            Object[] values = {UTF8String.fromString(current.name), column, row.getUTF8String(in.messageId), receivedAt(row),
                               value, reason};
            for (int i = 0; i < values.length; i++) record[discardsAt[i]] = values[i];
            discards.write(new GenericInternalRow(record));
        }

        Table table(String name) {
            Table known = (Table) tables.get(name);
            if (known == null) {
                List pairs = (List) columns.get(name);
                if (pairs == null) throw new IllegalStateException("no schema for table " + name);
                known = new Table(name, pairs, reserved);
                tables.put(name, known);
            }
            return known;
        }

        void closeAll() {
            if (data != null) written.add(data.close());
            if (discards != null) written.add(discards.close());
            if (landed != null) written.add(landed.close());
            data = discards = landed = null;
        }

        void abort() {
            try {
                closeAll();
            } catch (RuntimeException ignored) {  // the task's own failure is the one to report
            }
        }
    }

    static int typeCode(String type) {
        DataType parsed = DataType.fromDDL(type);
        if (parsed instanceof org.apache.spark.sql.types.StringType) return STRING;
        if (parsed instanceof org.apache.spark.sql.types.LongType) return BIGINT;
        if (parsed instanceof org.apache.spark.sql.types.DecimalType) return DECIMAL;
        if (parsed instanceof org.apache.spark.sql.types.BooleanType) return BOOLEAN;
        if (parsed instanceof org.apache.spark.sql.types.TimestampType) return TIMESTAMP;
        throw new IllegalArgumentException("unsupported column type " + type);
    }

    /** The event row's columns the writer reads (names of ParseLines.SCHEMA; write.py selects them, so the sort
     *  before the write moves no others), and where a row has them. */
    public static final String[] READS = {"table", "partition", "_message_id", "_received_at", "fields", "discards"};

    static final class EventColumns implements java.io.Serializable {
        final int table, partition, messageId, receivedAt, fields, discards;

        EventColumns(StructType row) {
            table = row.fieldIndex(READS[0]);
            partition = row.fieldIndex(READS[1]);
            messageId = row.fieldIndex(READS[2]);
            receivedAt = row.fieldIndex(READS[3]);
            fields = row.fieldIndex(READS[4]);
            discards = row.fieldIndex(READS[5]);
        }
    }

    /** The current field of ``fields`` as ``type``, or null when that loses information. */
    static Object cast(FieldCodec.Reader fields, int type) {
        byte kind = fields.kind;
        if (type == STRING) return fields.original();
        if (type == TIMESTAMP) return kind == FieldCodec.TIME ? Long.valueOf(fields.number) : null;
        if (type == BIGINT && kind == FieldCodec.INTEGER) return Long.valueOf(fields.number);
        if (type == BOOLEAN && kind == FieldCodec.BOOLEAN) return Boolean.valueOf(fields.number == 1);
        String text = fields.original().toString();
        if (type == BIGINT) {
            if (kind != FieldCodec.DECIMAL && kind != FieldCodec.STRING) return null;
            BigDecimal number = decimal(text);
            if (number == null) return null;
            BigDecimal exact = number.setScale(6, RoundingMode.HALF_UP);  // as decimal(38,6) would hold it
            BigDecimal whole = number.setScale(0, RoundingMode.HALF_UP);
            if (exact.precision() > 38 || whole.compareTo(exact) != 0 || whole.unscaledValue().bitLength() > 63) return null;
            return Long.valueOf(whole.longValueExact());
        }
        if (type == DECIMAL) {
            if (kind != FieldCodec.INTEGER && kind != FieldCodec.DECIMAL && kind != FieldCodec.STRING) return null;
            BigDecimal number = decimal(text);
            if (number == null) return null;
            Decimal decimal = Decimal.apply(number);
            return decimal.changePrecision(38, 6) ? decimal : null;
        }
        if (kind != FieldCodec.STRING) return null;  // a boolean column takes true/false words
        String word = stripSpaces(text).toLowerCase(java.util.Locale.ROOT);
        return word.equals("true") ? Boolean.TRUE : word.equals("false") ? Boolean.FALSE : null;
    }

    /** A number as Spark reads one from text (Java's trim, then BigDecimal), or null. */
    static BigDecimal decimal(String text) {
        try {
            return new BigDecimal(text.trim());
        } catch (NumberFormatException error) {
            return null;
        }
    }

    static String stripSpaces(String text) {
        int start = 0, end = text.length();
        while (start < end && text.charAt(start) == ' ') start++;
        while (end > start && text.charAt(end - 1) == ' ') end--;
        return text.substring(start, end);
    }
}
