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
import java.util.regex.Matcher;
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
    static final Pattern ISO_DATETIME = Pattern.compile(
        "^(\\d{4})-(\\d{2})-(\\d{2})[T ](\\d{2}):(\\d{2})(?::(\\d{2})(?:[.,](\\d{1,9}))?)?\\s*(Z|z|[+-]\\d{2}(?::?\\d{2})?)?$");
    static final int CACHE_LIMIT = 1 << 16;
    // The same keys recur in every event: slugs and column names are computed once per executor.
    static final Map SLUGS = new ConcurrentHashMap();
    static final Map COLUMNS = new ConcurrentHashMap();
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

    /** (reason, segment_type, message_id, received_at, fields, columns, discards). */
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
        Flattened flat = new Flattened();
        flat.leaves(event, new ArrayList());
        return RowFactory.create(new Object[] {null, segmentType, id.isTextual() ? id.textValue() : id.asText(),
                                               receivedAt, flat.fields, flat.columns, flat.discards});
    }

    static Row rejected(String reason) {
        return RowFactory.create(new Object[] {reason, null, null, null, null, null, null});
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

    /** The columns of one event in key order, and what could not become a column. When keys name the
     *  same column, the first non-null value wins and later ones are discarded with their key path. */
    static class Flattened {
        final Map fields = new LinkedHashMap();  // column -> kind-tagged text
        final List columns = new ArrayList();  // columns in key order, nulls included
        final List discards = new ArrayList();  // (column or key path, raw value, reason)
        final Map sources = new HashMap();  // column -> the key path that set it

        void leaves(JsonNode object, List path) {
            Iterator entries = object.fields();
            while (entries.hasNext()) {
                Map.Entry entry = (Map.Entry) entries.next();
                JsonNode value = (JsonNode) entry.getValue();
                path.add(entry.getKey());
                if (value.isObject()) {
                    if (value.size() > 0) leaves(value, path);
                } else {
                    leaf(path, value);
                }
                path.remove(path.size() - 1);
            }
        }

        void leaf(List path, JsonNode value) {
            String dotted = join(path, ".");
            String[] named = columnOf(path);
            String encoded = encode(value);
            if (named[1] != null) {
                if (encoded != null) discards.add(RowFactory.create(new Object[] {dotted, raw(value), named[1]}));
                return;
            }
            String column = named[0];
            if (!sources.containsKey(column)) columns.add(column);
            if (encoded == null) {
                if (!sources.containsKey(column)) sources.put(column, dotted);
                return;
            }
            if (fields.containsKey(column)) {
                discards.add(RowFactory.create(new Object[] {column, raw(value),
                    "key " + repr(dotted) + " names the same column as " + repr((String) sources.get(column))}));
                return;
            }
            sources.put(column, dotted);
            fields.put(column, encoded);
        }
    }

    /** {column, null} for a key path, or {null, why it cannot be a column}. */
    static String[] columnOf(List path) {
        String key = join(path, "\u0000");
        String[] cached = (String[]) COLUMNS.get(key);
        if (cached != null) return cached;
        String[] named = new String[2];
        StringBuilder column = new StringBuilder();
        for (int i = 0; i < path.size() && named[1] == null; i++) {
            String part = slug((String) path.get(i));
            if (part.length() == 0) named[1] = "key has no letters or digits to name a column";
            if (i > 0) column.append('_');
            column.append(part);
        }
        if (named[1] == null && column.length() > MAX_COLUMN_NAME) {
            named[1] = "column name longer than " + MAX_COLUMN_NAME + " characters";
        }
        if (named[1] == null) named[0] = column.toString();
        if (COLUMNS.size() > CACHE_LIMIT) COLUMNS.clear();
        COLUMNS.put(key, named);
        return named;
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

    /** An ISO-8601 date-time (with or without zone, up to nanoseconds) as UTC "yyyy-MM-dd HH:mm:ss.ffffff", else null. */
    public static String utcText(String text) {
        if (text.length() < 16) return null;
        for (int i = 0; i < 4; i++) if (!Character.isDigit(text.charAt(i))) return null;  // cheap test before the regex
        Matcher match = ISO_DATETIME.matcher(text.strip());
        if (!match.matches()) return null;
        String fraction = match.group(7) == null ? "0" : match.group(7);
        int micros = Integer.parseInt((fraction.length() > 6 ? fraction.substring(0, 6) : fraction + "000000".substring(fraction.length())));
        LocalDateTime moment;
        try {
            int year = Integer.parseInt(match.group(1));
            if (year < 1) return null;
            moment = LocalDateTime.of(year, Integer.parseInt(match.group(2)), Integer.parseInt(match.group(3)),
                Integer.parseInt(match.group(4)), Integer.parseInt(match.group(5)),
                match.group(6) == null ? 0 : Integer.parseInt(match.group(6)), micros * 1000);
        } catch (java.time.DateTimeException error) {
            return null;
        }
        String zone = match.group(8);
        if (zone != null && !zone.equals("Z") && !zone.equals("z")) {
            String digits = zone.substring(1).replace(":", "");
            int hours = Integer.parseInt(digits.substring(0, 2));
            int minutes = digits.length() > 2 ? Integer.parseInt(digits.substring(2, 4)) : 0;
            if (hours > 23 || minutes > 59) return null;
            long offset = (hours * 60L + minutes) * 60L;
            moment = zone.charAt(0) == '+' ? moment.minusSeconds(offset) : moment.plusSeconds(offset);
            if (moment.getYear() < 1 || moment.getYear() > 9999) return null;
        }
        StringBuilder out = new StringBuilder(26);
        pad(out, moment.getYear(), 4).append('-');
        pad(out, moment.getMonthValue(), 2).append('-');
        pad(out, moment.getDayOfMonth(), 2).append(' ');
        pad(out, moment.getHour(), 2).append(':');
        pad(out, moment.getMinute(), 2).append(':');
        pad(out, moment.getSecond(), 2).append('.');
        return pad(out, moment.getNano() / 1000, 6).toString();
    }

    static StringBuilder pad(StringBuilder out, int value, int width) {
        String digits = Integer.toString(value);
        for (int i = digits.length(); i < width; i++) out.append('0');
        return out.append(digits);
    }

    static String join(List parts, String separator) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            if (i > 0) out.append(separator);
            out.append((String) parts.get(i));
        }
        return out.toString();
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
