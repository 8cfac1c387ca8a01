// One raw line -> an event's type, messageId, receivedAt and flattened fields (encoded by
// FieldCodec), or the reason it is rejected. Runs inside Spark's JVM (see ParseLines), so that no
// event crosses into Python. Compiled at run time by Janino (shipped with Spark), so: Java 7
// syntax, no lambdas, raw collections with casts.
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
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;

public class ParseEvent {
    static final int MAX_COLUMN_NAME = 250;
    // A track event's table, "<prefix>track_<name>", stays within Glue's 255 characters with a table prefix of up
    // to 50 (contract.TABLE_PREFIX).
    static final int MAX_EVENT_NAME = 199;
    static final int DECIMAL_INTEGER_DIGITS = 32;  // decimal(38,6) keeps 32 digits before the point
    public static final long NO_TIME = Long.MIN_VALUE;
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

    /** What a line is: a rejection (``reason``) or an event. */
    public static final class Parsed {
        public String reason, segmentType, messageId;
        public long receivedAt;  // microseconds since the epoch, UTC
        public byte[] fields;
        public List discards;  // String[] {column or key path, raw value, reason}

        static Parsed rejected(String reason) {
            Parsed parsed = new Parsed();
            parsed.reason = reason;
            return parsed;
        }
    }

    public static Parsed parse(String line, FieldCodec.Writer out) {
        JsonNode event;
        try {
            event = MAPPER.readTree(line);
        } catch (JsonProcessingException error) {
            return Parsed.rejected(notJson(error));
        }
        if (event == null || !event.isObject()) return Parsed.rejected("not a JSON object");
        JsonNode type = event.get("type");
        if (type == null || !type.isTextual() || type.textValue().length() == 0) return Parsed.rejected("no type");
        String kind = type.textValue().toLowerCase(Locale.ROOT);
        boolean known = false;
        for (int i = 0; i < SEGMENT_TYPES.length; i++) known = known || SEGMENT_TYPES[i].equals(kind);
        if (!known) return Parsed.rejected("unknown type " + repr(type.textValue()));
        String segmentType = kind;
        if (kind.equals("track")) {
            JsonNode name = event.get("event");
            if (name != null && !name.isNull() && !name.isTextual()) return Parsed.rejected("event is not a string");
            if (name == null || name.isNull() || name.textValue().strip().length() == 0) {
                return Parsed.rejected("track without event");
            }
            String table = slug(name.textValue());
            if (table.length() == 0) return Parsed.rejected("track event name " + repr(name.textValue()) + " has no letters or digits");
            if (table.length() > MAX_EVENT_NAME) {
                return Parsed.rejected("track event name longer than " + MAX_EVENT_NAME + " characters once slugged (its "
                                       + "table would pass Glue's limit of 255)");
            }
            segmentType = "track_" + table;
        }
        JsonNode id = event.get("messageId");
        if (id == null || id.isNull() || id.isContainerNode() || id.isBoolean() || (id.isTextual() && id.textValue().length() == 0)) {
            return Parsed.rejected("no messageId");
        }
        JsonNode received = event.get("receivedAt");
        long receivedAt = received != null && received.isTextual() ? utcMicros(received.textValue()) : NO_TIME;
        if (receivedAt == NO_TIME) return Parsed.rejected("no parseable receivedAt");
        Flattened flat = new Flattened(event);
        Parsed parsed = new Parsed();
        parsed.segmentType = segmentType;
        parsed.messageId = id.isTextual() ? id.textValue() : id.asText();
        parsed.receivedAt = receivedAt;
        out.reset();
        Iterator leaves = flat.fields.values().iterator();
        while (leaves.hasNext()) {
            Leaf leaf = (Leaf) leaves.next();
            write(out, leaf.key.columnBytes, leaf.value);
        }
        parsed.fields = out.toBytes();
        parsed.discards = flat.discards;
        return parsed;
    }

    /** ``not JSON at line L column C: what`` (Jackson's line and column, 1-based). */
    static String notJson(JsonProcessingException error) {
        com.fasterxml.jackson.core.JsonLocation at = error.getLocation();
        String where = at == null || at.getLineNr() < 1 ? "" : " at line " + at.getLineNr() + " column " + at.getColumnNr();
        return "not JSON" + where + ": " + describe(error);
    }

    static String describe(JsonProcessingException error) {
        String message = error.getOriginalMessage();
        if (message == null) return "unreadable";
        // Python's words for the commonest faults, as reasons have always said
        if (message.startsWith("Unrecognized token")) return "expecting value";
        if (message.startsWith("Trailing token")) return "extra data";
        if (message.indexOf("expecting closing quote") >= 0) return "unterminated string";
        int colon = message.indexOf(':');
        String what = colon > 0 ? message.substring(0, colon) : message;
        return what.length() == 0 ? what : Character.toLowerCase(what.charAt(0)) + what.substring(1);
    }

    /** A column's value in an event: null until a key naming it has a non-null value. */
    static final class Leaf {
        final Key key;
        JsonNode value;

        Leaf(Key key, JsonNode value) {
            this.key = key;
            this.value = value;
        }
    }

    /** The columns of one event in key order. A column's value is null until a key naming it has a
     *  non-null value; when more keys name it, the first non-null value wins and later ones are
     *  discarded with their key path. */
    static class Flattened {
        final Map fields = new LinkedHashMap();  // column -> Leaf
        final List discards = new ArrayList();  // String[] {column or key path, raw value, reason}
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
                    leaf(key, value.isNull() ? null : value);
                }
            }
        }

        void leaf(Key key, JsonNode value) {
            if (key.why != null) {
                if (value != null) discards.add(new String[] {key.dotted, raw(value), key.why});
                return;
            }
            Leaf known = (Leaf) fields.get(key.column);
            if (known == null) {
                fields.put(key.column, new Leaf(key, value));
            } else if (known.value == null) {
                known.value = value;  // a column keeps the place where it was first seen
            } else if (value != null) {
                discards.add(new String[] {key.column, raw(value),
                    "key " + repr(key.dotted) + " names the same column as " + repr(firstSource(event, ROOT, key.column))});
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
        final byte[] columnBytes;
        final String why;
        final Map children = new ConcurrentHashMap();

        Key(String dotted, String column, String why) {
            this.dotted = dotted;
            this.column = column;
            this.columnBytes = column == null ? null : column.getBytes(StandardCharsets.UTF_8);
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

    /** One field: a JSON scalar or array (null for JSON null) with its kind. */
    static void write(FieldCodec.Writer out, byte[] column, JsonNode value) {
        if (value == null) {
            out.nullField(column);
        } else if (value.isBoolean()) {
            out.booleanField(column, value.booleanValue());
        } else if (value.isIntegralNumber()) {
            if (value.canConvertToLong()) out.integerField(column, value.longValue());
            else number(out, column, new BigDecimal(value.bigIntegerValue()));
        } else if (value.isBigDecimal()) {
            number(out, column, value.decimalValue());
        } else if (value.isNumber()) {  // NaN and Infinity, read as doubles
            double number = value.doubleValue();
            out.textField(column, FieldCodec.STRING, Double.isNaN(number) ? "NaN" : number > 0 ? "Infinity" : "-Infinity");
        } else if (value.isTextual()) {
            String text = value.textValue();
            long moment = utcMicros(text);
            if (moment != NO_TIME) out.timeField(column, moment, text);
            else out.textField(column, FieldCodec.STRING, text);
        } else {
            out.textField(column, FieldCodec.STRING, json(value));
        }
    }

    static void number(FieldCodec.Writer out, byte[] column, BigDecimal value) {
        int adjusted = value.precision() - value.scale() - 1;
        out.textField(column, adjusted >= DECIMAL_INTEGER_DIGITS ? FieldCodec.STRING : FieldCodec.DECIMAL, value.toString());
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

    /** An RFC 3339 date-time (``T``, ``t`` or a space between date and time; ``Z``, ``z``, an offset or no zone; a
     *  fraction of any length, kept to the microsecond) as UTC microseconds since the epoch, else NO_TIME.
     *  Scanned by hand: most strings of an event are tested, and a regular expression cost a tenth of the parse. */
    public static long utcMicros(String text) {
        if (text.length() < 16) return NO_TIME;
        for (int i = 0; i < 4; i++) if (!Character.isDigit(text.charAt(i))) return NO_TIME;
        String s = text.strip();
        int n = s.length();
        if (n < 16 || s.charAt(4) != '-' || s.charAt(7) != '-' || s.charAt(13) != ':') return NO_TIME;
        if (s.charAt(10) != 'T' && s.charAt(10) != 't' && s.charAt(10) != ' ') return NO_TIME;
        int year = digits(s, 0, 4), month = digits(s, 5, 2), day = digits(s, 8, 2);
        int hour = digits(s, 11, 2), minute = digits(s, 14, 2), second = 0, micros = 0;
        if (year < 1 || month < 0 || day < 0 || hour < 0 || minute < 0) return NO_TIME;
        int i = 16;
        if (i < n && s.charAt(i) == ':') {
            second = digits(s, i + 1, 2);
            if (second < 0) return NO_TIME;
            i += 3;
            if (i < n && (s.charAt(i) == '.' || s.charAt(i) == ',')) {
                int start = ++i;
                while (i < n && isDigit(s.charAt(i))) i++;
                if (i == start) return NO_TIME;
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
                if (hours < 0) return NO_TIME;
                i += 3;
                if (i < n) {
                    if (s.charAt(i) == ':') i++;
                    minutes = digits(s, i, 2);
                    if (minutes < 0) return NO_TIME;
                    i += 2;
                }
                if (hours > 23 || minutes > 59) return NO_TIME;
                offsetMinutes = (sign == '+' ? 1 : -1) * (hours * 60 + minutes);
            } else {
                return NO_TIME;
            }
        }
        if (i != n) return NO_TIME;
        if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59) {
            return NO_TIME;
        }
        LocalDateTime local = LocalDateTime.of(year, month, day, hour, minute, second);
        LocalDateTime utc = offsetMinutes == 0 ? local : local.minusMinutes(offsetMinutes);
        if (utc.getYear() < 1 || utc.getYear() > 9999) return NO_TIME;
        return utc.toEpochSecond(ZoneOffset.UTC) * 1000000L + micros;
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
