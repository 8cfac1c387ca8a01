// Reads a run's files into lines, file by file, so that one broken file never fails the run: a file
// that cannot be read to its end (truncated or corrupt gzip, unreadable bytes, removed since it was
// listed) gives the lines read before the fault and one row saying where and why the rest was lost.
// Lines split on \n, \r\n or \r and keep their bytes as they are, as Spark's text source does.
// Compiled at run time by Janino: Java 7 syntax.
package segmentlake;

import java.io.FileNotFoundException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.SerializableConfiguration;

public class ReadFiles implements FlatMapFunction {
    // value is null on the row of a file's unreadable rest, whose reason says where and why
    public static final StructType SCHEMA = StructType.fromDDL("value string, file string, unreadable string");
    // as Spark's file sources: a task takes files up to 128 MB, each file costing 4 MB more to open
    static final long MAX_TASK_BYTES = 128L << 20, OPEN_COST = 4L << 20;
    // A line longer than this is counted and skipped, not held: Segment's own API takes events of 32 KB at most,
    // and one line of gigabytes must not take an executor's memory.
    public static final int MAX_LINE_BYTES = 16 << 20;
    static final byte[] TOO_LONG = new byte[0];

    final SerializableConfiguration conf;

    ReadFiles(SerializableConfiguration conf) {
        this.conf = conf;
    }

    /** The lines of ``files`` (with their ``sizes`` in bytes), in tasks of about equal bytes. */
    public static Dataset stage(SparkSession spark, List files, List sizes) {
        int slots = spark.sparkContext().defaultParallelism();
        long total = 0;
        for (int i = 0; i < sizes.size(); i++) total += ((Number) sizes.get(i)).longValue() + OPEN_COST;
        long perTask = Math.min(MAX_TASK_BYTES, Math.max(OPEN_COST, total / Math.max(1, slots)));
        int tasks = (int) Math.max(1, Math.min(files.size(), (total + perTask - 1) / perTask));
        // the largest file first onto the task with the fewest bytes so far
        Integer[] order = new Integer[files.size()];
        for (int i = 0; i < order.length; i++) order[i] = Integer.valueOf(i);
        final List sizeList = sizes;
        Arrays.sort(order, new java.util.Comparator() {
            public int compare(Object a, Object b) {
                return Long.compare(((Number) sizeList.get(((Integer) b).intValue())).longValue(),
                                    ((Number) sizeList.get(((Integer) a).intValue())).longValue());
            }
        });
        List groups = new ArrayList();
        long[] load = new long[tasks];
        for (int t = 0; t < tasks; t++) groups.add(new ArrayList());
        for (int k = 0; k < order.length; k++) {
            int lightest = 0;
            for (int t = 1; t < tasks; t++) if (load[t] < load[lightest]) lightest = t;
            int i = order[k].intValue();
            ((List) groups.get(lightest)).add(files.get(i));
            load[lightest] += ((Number) sizes.get(i)).longValue() + OPEN_COST;
        }
        SerializableConfiguration conf = new SerializableConfiguration(spark.sessionState().newHadoopConf());
        RDD rows = new JavaSparkContext(spark.sparkContext()).parallelize(groups, tasks)
            .flatMap(new ReadFiles(conf)).rdd();
        return spark.internalCreateDataFrame(rows, SCHEMA, false);
    }

    public Iterator call(Object group) throws IOException {
        final Iterator files = ((List) group).iterator();
        final CompressionCodecFactory codecs = new CompressionCodecFactory(conf.value());
        return new Iterator() {
            FileLines current;
            GenericInternalRow next;

            public boolean hasNext() {
                while (next == null) {
                    if (current == null) {
                        if (!files.hasNext()) return false;
                        current = new FileLines((String) files.next(), conf, codecs);
                    }
                    next = current.next();
                    if (next == null) current = null;
                }
                return true;
            }

            public Object next() {
                hasNext();
                Object row = next;
                next = null;
                return row;
            }

            public void remove() {
                throw new UnsupportedOperationException();
            }
        };
    }

    /** The lines of one file, then (if it broke off) the row of its unreadable rest; null after the end. */
    static final class FileLines {
        UTF8String fileName;
        Counting raw;
        InputStream in;
        long size = -1, lines, longLine;
        final byte[] buffer = new byte[1 << 16];
        int position, limit;
        byte[] line = new byte[1 << 12];
        boolean done;

        FileLines(String file, SerializableConfiguration conf, CompressionCodecFactory codecs) {
            Path path = new Path(file);
            // named as Spark's input_file_name() names it (URL-encoded), the form the lake's records have
            fileName = UTF8String.fromString(SparkPath.fromPath(path).urlEncoded());
            try {
                FileSystem fs = path.getFileSystem(conf.value());
                FileStatus status = fs.getFileStatus(path);
                fileName = UTF8String.fromString(SparkPath.fromPath(status.getPath()).urlEncoded());
                size = status.getLen();
                raw = new Counting(fs.open(path));
                CompressionCodec codec = codecs.getCodec(path);
                in = codec == null || size == 0 ? raw : codec.createInputStream(raw);
            } catch (FileNotFoundException e) {
                in = null;
                fault = "the file no longer exists";
            } catch (IOException e) {
                in = null;
                fault = describe(e);
            }
        }

        String fault;

        GenericInternalRow next() {
            if (done) return null;
            if (in != null) {
                try {
                    byte[] read = readLine();
                    if (read == TOO_LONG) {
                        lines++;
                        return new GenericInternalRow(new Object[] {null, fileName, UTF8String.fromString(
                            "too long: line " + lines + " has " + longLine + " bytes, over the limit of " + MAX_LINE_BYTES
                            + " (16 MiB); skipped, the input file keeps it")});
                    }
                    if (read != null) {
                        lines++;
                        return new GenericInternalRow(new Object[] {UTF8String.fromBytes(read), fileName, null});
                    }
                    close();
                    done = true;
                    return null;
                } catch (IOException e) {
                    fault = describe(e) + " at byte " + raw.count + " of " + size + ", after " + lines + " lines";
                } catch (RuntimeException e) {  // a decompressor may fail this way on corrupt input
                    fault = describe(e) + " at byte " + raw.count + " of " + size + ", after " + lines + " lines";
                }
                close();
            }
            done = true;
            return new GenericInternalRow(new Object[] {null, fileName, UTF8String.fromString("unreadable: " + fault)});
        }

        static String describe(Throwable e) {
            String message = e.getMessage();
            return e.getClass().getSimpleName() + (message == null ? "" : ": " + message.split("\n")[0]);
        }

        /** The next line's bytes without its end (\n, \r\n or \r), TOO_LONG (its length in ``longLine``) for a line
         *  over MAX_LINE_BYTES, or null at the end of the file. */
        byte[] readLine() throws IOException {
            int length = 0;
            long skipped = 0;
            boolean any = false;
            while (true) {
                if (position == limit) {
                    limit = in.read(buffer, 0, buffer.length);
                    position = 0;
                    if (limit <= 0) {
                        limit = 0;
                        return !any ? null : skipped > 0 ? tooLong(skipped) : Arrays.copyOf(line, length);
                    }
                }
                any = true;
                int start = position;
                while (position < limit && buffer[position] != '\n' && buffer[position] != '\r') position++;
                int chunk = position - start;
                if (skipped > 0 || length + chunk > MAX_LINE_BYTES) {
                    skipped += (skipped == 0 ? length : 0) + chunk;
                    length = 0;
                } else if (length + chunk > line.length) line = Arrays.copyOf(line, Math.min(MAX_LINE_BYTES, Math.max(line.length * 2, length + chunk)));
                if (skipped == 0) {
                    System.arraycopy(buffer, start, line, length, chunk);
                    length += chunk;
                }
                if (position < limit) {
                    byte end = buffer[position++];
                    if (end == '\r') {  // \r\n is one line end
                        if (position == limit) {
                            limit = in.read(buffer, 0, buffer.length);
                            position = 0;
                            if (limit < 0) limit = 0;
                        }
                        if (position < limit && buffer[position] == '\n') position++;
                    }
                    return skipped > 0 ? tooLong(skipped) : Arrays.copyOf(line, length);
                }
            }
        }

        byte[] tooLong(long bytes) {
            longLine = bytes;
            if (line.length > 1 << 20) line = new byte[1 << 12];  // the buffer a long line grew is not kept
            return TOO_LONG;
        }

        void close() {
            try {
                if (in != null) in.close();
            } catch (IOException ignored) {
                // the file was read as far as it could be; closing it can add nothing
            }
            in = null;
        }
    }

    /** The bytes read so far from the file itself (before decompression): where a fault is. */
    static final class Counting extends FilterInputStream {
        long count;

        Counting(InputStream in) {
            super(in);
        }

        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) count++;
            return b;
        }

        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            if (n > 0) count += n;
            return n;
        }

        public long skip(long n) throws IOException {
            long skipped = super.skip(n);
            count += skipped;
            return skipped;
        }
    }
}
