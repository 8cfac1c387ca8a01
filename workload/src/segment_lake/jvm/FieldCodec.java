// An event's flattened fields as one compact binary value: what the sync keeps between its stages
// (a map of ~35 strings per event cost more to shuffle and cache than parsing the JSON did).
//
// Each field, in key order: column (varint length + UTF-8), kind (one byte), then by kind:
//   n JSON null: nothing          b boolean: one byte 0/1      i integer within int64: 8 bytes
//   t ISO-8601 date-time: UTC microseconds (8 bytes), then its original text
//   d other number whose integer part fits decimal(38,6), s anything else: its text
// (text = varint length + UTF-8). The kind-tagged text form (``Decode``, ``Encode``) is the same
// information for tests and inspection: "i42", "d1.50", "btrue", "sabc", and for a time
// "t" + UTC "yyyy-MM-dd HH:mm:ss.ffffff" + \u001f + the original text.
// Compiled at run time by Janino (shipped with Spark), so: Java 7 syntax, raw collections.
package segmentlake;

import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.unsafe.types.UTF8String;

public class FieldCodec {
    public static final byte NULL = (byte) 'n', BOOLEAN = (byte) 'b', INTEGER = (byte) 'i', TIME = (byte) 't',
        DECIMAL = (byte) 'd', STRING = (byte) 's';
    static final char TIME_SEPARATOR = (char) 0x1f;

    /** Appends fields to a growing buffer. */
    public static final class Writer {
        byte[] buffer = new byte[1024];
        int size;

        public void reset() {
            size = 0;
        }

        public byte[] toBytes() {
            byte[] out = new byte[size];
            System.arraycopy(buffer, 0, out, 0, size);
            return out;
        }

        public void nullField(byte[] column) {
            column(column, NULL);
        }

        public void booleanField(byte[] column, boolean value) {
            column(column, BOOLEAN);
            put((byte) (value ? 1 : 0));
        }

        public void integerField(byte[] column, long value) {
            column(column, INTEGER);
            putLong(value);
        }

        public void timeField(byte[] column, long micros, String original) {
            column(column, TIME);
            putLong(micros);
            text(original.getBytes(StandardCharsets.UTF_8));
        }

        public void textField(byte[] column, byte kind, String text) {
            column(column, kind);
            text(text.getBytes(StandardCharsets.UTF_8));
        }

        void column(byte[] column, byte kind) {
            text(column);
            put(kind);
        }

        void text(byte[] bytes) {
            int length = bytes.length;
            while (length >= 0x80) {
                put((byte) (length | 0x80));
                length >>>= 7;
            }
            put((byte) length);
            ensure(bytes.length);
            System.arraycopy(bytes, 0, buffer, size, bytes.length);
            size += bytes.length;
        }

        void putLong(long value) {
            ensure(8);
            for (int shift = 56; shift >= 0; shift -= 8) buffer[size++] = (byte) (value >>> shift);
        }

        void put(byte value) {
            ensure(1);
            buffer[size++] = value;
        }

        void ensure(int more) {
            if (size + more <= buffer.length) return;
            byte[] grown = new byte[Math.max(buffer.length * 2, size + more)];
            System.arraycopy(buffer, 0, grown, 0, size);
            buffer = grown;
        }
    }

    /** Walks the fields of one encoded value: ``next()`` then the current field's parts. */
    public static final class Reader {
        final byte[] bytes;
        int at, columnStart, columnLength, textStart, textLength;
        public byte kind;
        public long number;  // the integer, the time's microseconds, the boolean as 0/1

        public Reader(byte[] bytes) {
            this.bytes = bytes;
        }

        public boolean next() {
            if (at >= bytes.length) return false;
            columnLength = length();
            columnStart = at;
            at += columnLength;
            kind = bytes[at++];
            textStart = textLength = 0;
            if (kind == BOOLEAN) {
                number = bytes[at++];
            } else if (kind == INTEGER || kind == TIME) {
                number = 0;
                for (int i = 0; i < 8; i++) number = (number << 8) | (bytes[at++] & 0xff);
            }
            if (kind == TIME || kind == DECIMAL || kind == STRING) {
                textLength = length();
                textStart = at;
                at += textLength;
            }
            return true;
        }

        public UTF8String column() {
            return UTF8String.fromBytes(bytes, columnStart, columnLength);
        }

        /** The value's text as the event had it (for a time, its original spelling); null for JSON null. */
        public UTF8String original() {
            if (kind == NULL) return null;
            if (kind == BOOLEAN) return UTF8String.fromString(number == 1 ? "true" : "false");
            if (kind == INTEGER) return UTF8String.fromString(Long.toString(number));
            return UTF8String.fromBytes(bytes, textStart, textLength);
        }

        /** The kind-tagged text of the current field. */
        public String tagged() {
            if (kind == NULL) return null;
            if (kind == TIME) return "t" + utcText(number) + TIME_SEPARATOR + original();
            return (char) kind + original().toString();
        }

        int length() {
            int value = 0;
            for (int shift = 0; ; shift += 7) {
                byte b = bytes[at++];
                value |= (b & 0x7f) << shift;
                if (b >= 0) return value;
            }
        }
    }

    /** UTC "yyyy-MM-dd HH:mm:ss.ffffff" of microseconds since the epoch. */
    public static String utcText(long micros) {
        LocalDateTime moment = LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1000000L), 0, ZoneOffset.UTC);
        StringBuilder out = new StringBuilder(26);
        pad(out, moment.getYear(), 4).append('-');
        pad(out, moment.getMonthValue(), 2).append('-');
        pad(out, moment.getDayOfMonth(), 2).append(' ');
        pad(out, moment.getHour(), 2).append(':');
        pad(out, moment.getMinute(), 2).append(':');
        pad(out, moment.getSecond(), 2).append('.');
        return pad(out, (int) Math.floorMod(micros, 1000000L), 6).toString();
    }

    static StringBuilder pad(StringBuilder out, int value, int width) {
        String digits = Integer.toString(value);
        for (int i = digits.length(); i < width; i++) out.append('0');
        return out.append(digits);
    }

    /** SQL function: encoded fields -> map of column to kind-tagged text (null for JSON null), in key order. */
    public static final class Decode implements UDF1 {
        public Object call(Object encoded) {
            if (encoded == null) return null;
            Map fields = new LinkedHashMap();
            Reader reader = new Reader((byte[]) encoded);
            while (reader.next()) fields.put(reader.column().toString(), reader.tagged());
            return fields;
        }
    }

    /** SQL function: encoded fields, column -> that field's text as the event had it (null when absent or JSON
     *  null), without decoding the others. */
    public static final class Field implements org.apache.spark.sql.api.java.UDF2 {
        public Object call(Object encoded, Object column) {
            if (encoded == null || column == null) return null;
            UTF8String wanted = UTF8String.fromString((String) column);
            Reader reader = new Reader((byte[]) encoded);
            while (reader.next()) {
                if (reader.column().equals(wanted)) {
                    UTF8String text = reader.original();
                    return text == null ? null : text.toString();
                }
            }
            return null;
        }
    }

    /** SQL function: the inverse of ``Decode`` (builds encoded fields in tests). */
    public static final class Encode implements UDF1 {
        public Object call(Object tagged) {
            if (tagged == null) return null;
            Writer writer = new Writer();
            Map map = (Map) scala.collection.JavaConverters.mapAsJavaMapConverter((scala.collection.Map) tagged).asJava();
            Iterator entries = map.entrySet().iterator();
            while (entries.hasNext()) {
                Map.Entry entry = (Map.Entry) entries.next();
                byte[] column = ((String) entry.getKey()).getBytes(StandardCharsets.UTF_8);
                String text = (String) entry.getValue();
                byte kind = text == null ? NULL : (byte) text.charAt(0);
                String rest = text == null ? null : text.substring(1);
                if (kind == NULL) writer.nullField(column);
                else if (kind == BOOLEAN) writer.booleanField(column, rest.equals("true"));
                else if (kind == INTEGER) writer.integerField(column, Long.parseLong(rest));
                else if (kind == TIME) {
                    int separator = rest.indexOf(TIME_SEPARATOR);
                    writer.timeField(column, ParseEvent.utcMicros(rest.substring(0, separator) + "Z"), rest.substring(separator + 1));
                } else writer.textField(column, kind, rest);
            }
            return writer.toBytes();
        }
    }
}
