// One raw line -> an event's flattened, kind-tagged fields, or the reason it is rejected.
// Runs inside Spark's JVM as a UDF so that no event crosses into Python. Compiled at run time
// by Janino (shipped with Spark), so: Java 7 syntax, no lambdas, raw collections with casts.
//
// A field value is the text of one JSON value with its kind as the first character:
//   b boolean, i integer within int64, d other number whose integer part fits decimal(38,6),
//   t ISO-8601 date-time ("t" + UTC "yyyy-MM-dd HH:mm:ss.ffffff" + \u001f + the original text),
//   s anything else (other strings, arrays as JSON text, larger numbers).
package segmentlake;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

public class ParseEvent implements UDF1 {
    static final int MAX_COLUMN_NAME = 250;
    static final int DECIMAL_INTEGER_DIGITS = 32;  // decimal(38,6) keeps 32 digits before the point
    static final String TIMESTAMP_SEPARATOR = "\u001f";
    static final String[] SEGMENT_TYPES = {"track", "identify", "page", "screen", "group", "alias"};
    // A boundary before an upper-case letter that follows a lower-case letter or digit (productId),
    // and inside runs of capitals before a capitalized word (HTMLPage).
    static final Pattern CAMEL_BOUNDARY = Pattern.compile("(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])");
    static final Pattern NOT_ALNUM = Pattern.compile("[^a-z0-9]+");
    static final int CACHE_LIMIT = 1 << 16;
    // The same keys recur in every event: slugs and column names are computed once per executor.
    static final Map SLUGS = new ConcurrentHashMap();
    static final AtomicInteger KEYS = new AtomicInteger();
    static final Key ROOT = new Key(null, null, null);
    static final ObjectMapper MAPPER = mapper();

    static ObjectMapper mapper() {
        ObjectMapper mapper = new ObjectMapper();
        mapper.enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
        mapper.enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
        mapper.setNodeFactory(JsonNodeFactory.withExactBigDecimals(true));  // 1.50 stays 1.50
        mapper.getFactory().enable(JsonParser.Feature.ALLOW_NON_NUMERIC_NUMBERS);
        return mapper;
    }

    public Object call(Object line) throws Exception {
        return parse((String) line);
    }

    /** (reason, segment_type, message_id, received_at, fields, discards). */
    public static Row parse(String line) {
        JsonNode event;
        try {
            event = MAPPER.readTree(line);
        } catch (JsonProcessingException error) {
            return rejected("not JSON: " + describe(error));
        }
        if (event == null || !event.isObject()) return rejected("not a JSON object");
        JsonNode type = event.get("type");
        if (type == null || !type.isTextual() || type.textValue().length() == 0) return rejected("no type");
        String kind = type.textValue().toLowerCase(Locale.ROOT);
        boolean known = false;
        for (int i = 0; i < SEGMENT_TYPES.length; i++) known = known || SEGMENT_TYPES[i].equals(kind);
        if (!known) return rejected("unknown type " + repr(type.textValue()));
        String segmentType = kind;
        if (kind.equals("track")) {
            JsonNode name = event.get("event");
            if (name == null || !name.isTextual() || name.textValue().strip().length() == 0) {
                return rejected("track without event");
            }
            String table = slug(name.textValue());
            if (table.length() == 0) return rejected("track event name " + repr(name.textValue()) + " has no letters or digits");
            segmentType = "track_" + table;
        }
        JsonNode id = event.get("messageId");
        if (id == null || id.isNull() || id.isContainerNode() || id.isBoolean() || (id.isTextual() && id.textValue().length() == 0)) {
            return rejected("no messageId");
        }
        JsonNode received = event.get("receivedAt");
        String receivedAt = received != null && received.isTextual() ? utcText(received.textValue()) : null;
        if (receivedAt == null) return rejected("no parseable receivedAt");
        Flattened flat = new Flattened(event);
        return RowFactory.create(new Object[] {null, segmentType, id.isTextual() ? id.textValue() : id.asText(),
                                               receivedAt, flat.fields, flat.discards});
    }

    static Row rejected(String reason) {
        return RowFactory.create(new Object[] {reason, null, null, null, null, null});
    }

    static String describe(JsonProcessingException error) {
        String message = error.getOriginalMessage();
        if (message == null) return "unreadable";
        // Python's words for the two commonest faults, as reasons have always said
        if (message.startsWith("Unrecognized token")) return "Expecting value";
        if (message.startsWith("Trailing token")) return "Extra data";
        int colon = message.indexOf(':');
        return colon > 0 ? message.substring(0, colon) : message;
    }

    /** The columns of one event in key order. A column's value is null until a key naming it has a
     *  non-null value; when more keys name it, the first non-null value wins and later ones are
     *  discarded with their key path. */
    static class Flattened {
        final Map fields = new LinkedHashMap();  // column -> kind-tagged text (null for JSON null)
        final List discards = new ArrayList();  // (column or key path, raw value, reason)
        final JsonNode event;

        Flattened(JsonNode event) {
            this.event = event;
            leaves(event, ROOT);
        }

        void leaves(JsonNode object, Key parent) {
            Iterator entries = object.fields();
            while (entries.hasNext()) {
                Map.Entry entry = (Map.Entry) entries.next();
                JsonNode value = (JsonNode) entry.getValue();
                Key key = parent.child((String) entry.getKey());
                if (value.isObject()) {
                    if (value.size() > 0) leaves(value, key);
                } else {
                    leaf(key, value);
                }
            }
        }

        void leaf(Key key, JsonNode value) {
            String encoded = encode(value);
            if (key.why != null) {
                if (encoded != null) discards.add(RowFactory.create(new Object[] {key.dotted, raw(value), key.why}));
                return;
            }
            String column = key.column;
            if (fields.get(column) == null) {
                fields.put(column, encoded);  // a column keeps the place where it was first seen
            } else if (encoded != null) {
                discards.add(RowFactory.create(new Object[] {column, raw(value),
                    "key " + repr(key.dotted) + " names the same column as " + repr(firstSource(event, ROOT, column))}));
            }
        }

        /** The first key path with a value that names ``column`` (collisions are rare: walk again). */
        static String firstSource(JsonNode object, Key parent, String column) {
            Iterator entries = object.fields();
            while (entries.hasNext()) {
                Map.Entry entry = (Map.Entry) entries.next();
                JsonNode value = (JsonNode) entry.getValue();
                Key key = parent.child((String) entry.getKey());
                String found = null;
                if (value.isObject()) found = firstSource(value, key, column);
                else if (column.equals(key.column) && !value.isNull()) found = key.dotted;
                if (found != null) return found;
            }
            return null;
        }
    }

    /** A key path, with its column name (or why it cannot have one) worked out once per executor. */
    static final class Key {
        final String dotted;
        final String column;  // null when the path cannot name a column
        final String why;
        final Map children = new ConcurrentHashMap();

        Key(String dotted, String column, String why) {
            this.dotted = dotted;
            this.column = column;
            this.why = why;
        }

        Key child(String name) {
            Key known = (Key) children.get(name);
            if (known != null) return known;
            String dotted = this.dotted == null ? name : this.dotted + "." + name;
            String part = slug(name);
            String column = null, why = this.why;
            if (why == null && part.length() == 0) why = "key has no letters or digits to name a column";
            if (why == null) {
                column = this.column == null ? part : this.column + "_" + part;
                if (column.length() > MAX_COLUMN_NAME) {
                    why = "column name longer than " + MAX_COLUMN_NAME + " characters";
                    column = null;
                }
            }
            Key made = new Key(dotted, column, why);
            // bounded: keys unique to one event (ids used as keys) are not kept
            if (KEYS.incrementAndGet() < CACHE_LIMIT) children.put(name, made);
            return made;
        }
    }

    /** Split camelCase, lower-case, turn every run of other characters into _, trim _. */
    public static String slug(String text) {
        String cached = (String) SLUGS.get(text);
        if (cached != null) return cached;
        String lowered = CAMEL_BOUNDARY.matcher(text).replaceAll("_").toLowerCase(Locale.ROOT);
        String joined = NOT_ALNUM.matcher(lowered).replaceAll("_");
        int start = 0, end = joined.length();
        while (start < end && joined.charAt(start) == '_') start++;
        while (end > start && joined.charAt(end - 1) == '_') end--;
        String result = joined.substring(start, end);
        if (SLUGS.size() > CACHE_LIMIT) SLUGS.clear();
        SLUGS.put(text, result);
        return result;
    }

    /** The kind-tagged text of a JSON scalar or array; null for JSON null. */
    public static String encode(JsonNode value) {
        if (value == null || value.isNull() || value.isMissingNode()) return null;
        if (value.isBoolean()) return value.booleanValue() ? "btrue" : "bfalse";
        if (value.isIntegralNumber()) {
            if (value.canConvertToLong()) return "i" + value.asText();
            return number(new BigDecimal(value.bigIntegerValue()));
        }
        if (value.isBigDecimal()) return number(value.decimalValue());
        if (value.isNumber()) {  // NaN and Infinity, read as doubles
            double number = value.doubleValue();
            return Double.isNaN(number) ? "sNaN" : number > 0 ? "sInfinity" : "s-Infinity";
        }
        if (value.isTextual()) {
            String text = value.textValue();
            String moment = utcText(text);
            return moment != null ? "t" + moment + TIMESTAMP_SEPARATOR + text : "s" + text;
        }
        return "s" + json(value);
    }

    static String number(BigDecimal value) {
        int adjusted = value.precision() - value.scale() - 1;
        return (adjusted >= DECIMAL_INTEGER_DIGITS ? "s" : "d") + value.toString();
    }

    static String raw(JsonNode value) {
        return value.isTextual() ? value.textValue() : json(value);
    }

    static String json(JsonNode value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException error) {
            throw new IllegalStateException(error);
        }
    }

    /** An ISO-8601 date-time (with or without zone, up to nanoseconds) as UTC "yyyy-MM-dd HH:mm:ss.ffffff", else null.
     *  Scanned by hand: most strings of an event are tested, and a regular expression cost a tenth of the parse. */
    public static String utcText(String text) {
        if (text.length() < 16) return null;
        for (int i = 0; i < 4; i++) if (!Character.isDigit(text.charAt(i))) return null;
        String s = text.strip();
        int n = s.length();
        if (n < 16 || s.charAt(4) != '-' || s.charAt(7) != '-' || s.charAt(13) != ':') return null;
        if (s.charAt(10) != 'T' && s.charAt(10) != ' ') return null;
        int year = digits(s, 0, 4), month = digits(s, 5, 2), day = digits(s, 8, 2);
        int hour = digits(s, 11, 2), minute = digits(s, 14, 2), second = 0, micros = 0;
        if (year < 1 || month < 0 || day < 0 || hour < 0 || minute < 0) return null;
        int i = 16;
        if (i < n && s.charAt(i) == ':') {
            second = digits(s, i + 1, 2);
            if (second < 0) return null;
            i += 3;
            if (i < n && (s.charAt(i) == '.' || s.charAt(i) == ',')) {
                int start = ++i;
                while (i < n && isDigit(s.charAt(i))) i++;
                if (i == start || i - start > 9) return null;
                for (int k = 0; k < 6; k++) micros = micros * 10 + (start + k < i ? s.charAt(start + k) - '0' : 0);
            }
        }
        while (i < n && " \t\n\u000b\f\r".indexOf(s.charAt(i)) >= 0) i++;
        int offsetMinutes = 0;
        if (i < n) {
            char sign = s.charAt(i);
            if (sign == 'Z' || sign == 'z') {
                i++;
            } else if (sign == '+' || sign == '-') {
                int hours = digits(s, i + 1, 2), minutes = 0;
                if (hours < 0) return null;
                i += 3;
                if (i < n) {
                    if (s.charAt(i) == ':') i++;
                    minutes = digits(s, i, 2);
                    if (minutes < 0) return null;
                    i += 2;
                }
                if (hours > 23 || minutes > 59) return null;
                offsetMinutes = (sign == '+' ? 1 : -1) * (hours * 60 + minutes);
            } else {
                return null;
            }
        }
        if (i != n) return null;
        if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59) {
            return null;
        }
        if (offsetMinutes != 0) {
            LocalDateTime utc = LocalDateTime.of(year, month, day, hour, minute, second).minusMinutes(offsetMinutes);
            if (utc.getYear() < 1 || utc.getYear() > 9999) return null;
            year = utc.getYear();
            month = utc.getMonthValue();
            day = utc.getDayOfMonth();
            hour = utc.getHour();
            minute = utc.getMinute();
        }
        StringBuilder out = new StringBuilder(26);
        pad(out, year, 4).append('-');
        pad(out, month, 2).append('-');
        pad(out, day, 2).append(' ');
        pad(out, hour, 2).append(':');
        pad(out, minute, 2).append(':');
        pad(out, second, 2).append('.');
        return pad(out, micros, 6).toString();
    }

    static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    /** The ``width`` ASCII digits at ``start`` as a number, or -1. */
    static int digits(String s, int start, int width) {
        if (start + width > s.length()) return -1;
        int value = 0;
        for (int i = start; i < start + width; i++) {
            char c = s.charAt(i);
            if (!isDigit(c)) return -1;
            value = value * 10 + (c - '0');
        }
        return value;
    }

    static int daysIn(int year, int month) {
        if (month == 2) return (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28;
        return month == 4 || month == 6 || month == 9 || month == 11 ? 30 : 31;
    }

    static StringBuilder pad(StringBuilder out, int value, int width) {
        String digits = Integer.toString(value);
        for (int i = digits.length(); i < width; i++) out.append('0');
        return out.append(digits);
    }

    /** Python's repr of a string, as the reasons have always quoted names. */
    static String repr(String text) {
        char quote = text.indexOf('\'') >= 0 && text.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder out = new StringBuilder().append(quote);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == quote || c == '\\') out.append('\\').append(c);
            else if (c == '\n') out.append("\\n");
            else if (c == '\r') out.append("\\r");
            else if (c == '\t') out.append("\\t");
            else if (c < 0x20 || c == 0x7f) out.append(String.format("\\x%02x", new Object[] {Integer.valueOf(c)}));
            else out.append(c);
        }
        return out.append(quote).toString();
    }
}
