"""The parse stage (in Spark's JVM) on single lines: slugs, kind-tagged values, flattening, rejections with their
reason."""
import json
from datetime import datetime

import pytest
from pyspark.sql import functions as F

from segment_lake.environment import STORED_BYTES_PER_TASK, shuffle_tasks
from segment_lake.field_codec import DECODE
from segment_lake.parse import parse_lines
from segment_lake_contract import slug

pytestmark = [pytest.mark.fast, pytest.mark.spark]


RECEIVED = "2024-01-01T00:00:00Z"



def parse(spark, *lines):
    """The parser's rows for ``lines``, in order, with the fields decoded to kind-tagged text and
    ``columns``: the fields' keys in order (collect() turns a map into an unordered dict)."""
    frame = spark.createDataFrame([(line, "f", None) for line in lines], "value string, file string, unreadable string")
    rows = (parse_lines(frame, "", "day_hour", 1).orderBy("_row").withColumn("fields", F.expr(f"{DECODE}(fields)"))
            .withColumn("columns", F.map_keys("fields")).collect())
    return [row.asDict(recursive=True) for row in rows]



def flatten(spark, event: dict) -> dict:
    """The parser's fields, columns and discards of an identify carrying ``event``'s keys."""
    line = json.dumps({"type": "identify", "messageId": "m", "receivedAt": RECEIVED, **event})
    row = parse(spark, line)[0]
    assert row["reason"] is None, row["reason"]
    own = {"type", "message_id", "received_at"}
    return {"fields": {k: v for k, v in row["fields"].items() if k not in own and v is not None},
            "columns": [c for c in row["columns"] if c not in own],
            "discards": [(d["column"], d["value"], d["reason"]) for d in row["discards"]]}



SLUGS = [
    ("productId", "product_id"), ("messageId", "message_id"), ("receivedAt", "received_at"),
    ("101 Account Update", "101_account_update"), ("Order Completed", "order_completed"),
    ("  --Hello, World!--  ", "hello_world"), ("HTMLPage", "html_page"), ("utm2Source", "utm2_source"),
    ("integrations_All", "integrations_all"), ("e-mail", "e_mail"), ("ÄÖÜ", ""), ("already_snake", "already_snake"),
]



@pytest.mark.parametrize("text,expected", SLUGS)
def test_slug(text, expected):
    assert slug(text) == expected


def test_a_small_run_is_shuffled_into_few_tasks_and_a_large_one_into_every_partition():
    assert shuffle_tasks(0, 8) == 1  # an empty run (a file of blank lines) still has its one task
    assert shuffle_tasks(26_134, 8) == 1  # the sample's 19 lines
    assert shuffle_tasks(STORED_BYTES_PER_TASK, 8) == 1
    assert shuffle_tasks(STORED_BYTES_PER_TASK + 1, 8) == 2
    assert shuffle_tasks(8 * STORED_BYTES_PER_TASK, 8) == 8
    assert shuffle_tasks(100 * STORED_BYTES_PER_TASK, 8) == 8  # never more than the session's partitions
    assert shuffle_tasks(100 * STORED_BYTES_PER_TASK, 192) == 100  # a cluster's: as many as the bytes call for



def test_the_parser_slugs_keys_and_event_names_like_the_settings_do(spark):
    fields = flatten(spark, {"traits": {text: 1 for text, _ in SLUGS}})
    assert fields["columns"] == [f"traits_{expected}" for _, expected in SLUGS if expected]
    tracks = parse(spark, *(json.dumps({"type": "track", "event": text, "messageId": "m", "receivedAt": RECEIVED})
                            for text, _ in SLUGS))
    assert [row["table"] for row in tracks] == [f"track_{expected}" if expected else None for _, expected in SLUGS]



@pytest.mark.parametrize("value,expected", [
    ("true", "btrue"), ("false", "bfalse"), ("null", None), ("42", "i42"), (str(-(2**63)), f"i{-(2**63)}"),
    (str(2**63), f"d{2**63}"), (str(10**40), f"s{10**40}"), ("19.99", "d19.99"), ("5.0", "d5.0"),
    ("1E+40", "s1E+40"), ("1e5", "d1E+5"), ('"hello"', "shello"), ('"5"', "s5"),
    ('[1, "a", {"b": null}, 19.0]', 's[1,"a",{"b":null},19.0]'),
    ('"2024-01-02T03:04:05.123Z"', "t2024-01-02 03:04:05.123000\x1f2024-01-02T03:04:05.123Z"),
    ('"2024-01-02T05:04:05+02:00"', "t2024-01-02 03:04:05.000000\x1f2024-01-02T05:04:05+02:00"),
    ('"2024-01-02 03:04"', "t2024-01-02 03:04:00.000000\x1f2024-01-02 03:04"),
    ('"2024-01-02T03:04:05.123456789Z"', "t2024-01-02 03:04:05.123456\x1f2024-01-02T03:04:05.123456789Z"),
    ('"2024-01-02T00:30:00-0130"', "t2024-01-02 02:00:00.000000\x1f2024-01-02T00:30:00-0130"),
    ('"2024-13-01T00:00:00Z"', "s2024-13-01T00:00:00Z"), ('"2024-01-02"', "s2024-01-02"),
    ('"2024-01-02T25:00:00Z"', "s2024-01-02T25:00:00Z"), ('"0001-01-01T00:00:00+01:00"', "s0001-01-01T00:00:00+01:00"),
    ('"2024-02-29T00:00:00Z"', "t2024-02-29 00:00:00.000000\x1f2024-02-29T00:00:00Z"),
    ('"2023-02-29T00:00:00Z"', "s2023-02-29T00:00:00Z"), ('"2024-04-31 00:00"', "s2024-04-31 00:00"),
    ('"2024-01-02T03:04:05,5 Z"', "t2024-01-02 03:04:05.500000\x1f2024-01-02T03:04:05,5 Z"),
    ('"2024-01-02T23:30:00-01:00"', "t2024-01-03 00:30:00.000000\x1f2024-01-02T23:30:00-01:00"),
    ('"2024-01-02T03:04:05+05"', "t2024-01-01 22:04:05.000000\x1f2024-01-02T03:04:05+05"),
    ('"2024-01-02T03:04:05+05:3"', "s2024-01-02T03:04:05+05:3"), ('"2024-01-02T03:04:05+24:00"', "s2024-01-02T03:04:05+24:00"),
    ('"2024-01-02T03:04:05.1234567890Z"', "t2024-01-02 03:04:05.123456\x1f2024-01-02T03:04:05.1234567890Z"),
    ('"2020-01-24t11:59:02.402+05:30"', "t2020-01-24 06:29:02.402000\x1f2020-01-24t11:59:02.402+05:30"),
    ('"2020-01-24t11:59:02z"', "t2020-01-24 11:59:02.000000\x1f2020-01-24t11:59:02z"),
    ('"2024-01-02T03:04:05.Z"', "s2024-01-02T03:04:05.Z"),
    ('"2024-01-02T03:04:05Zulu"', "s2024-01-02T03:04:05Zulu"), ('"2024-01-02T03:04:5"', "s2024-01-02T03:04:5"),
])
def test_values_carry_their_kind(spark, value, expected):
    line = f'{{"type":"identify","messageId":"m","receivedAt":"{RECEIVED}","traits":{{"v":{value}}}}}'
    row = parse(spark, line)[0]
    assert row["fields"].get("traits_v") == expected
    assert "traits_v" in row["fields"]



def test_flatten_joins_nested_keys_and_keeps_arrays_whole(spark):
    flat = flatten(spark, {"context": {"page": {"url": "u"}}, "properties": {"revenue": 5, "tags": ["a"], "empty": {}},
                           "integrations": {"All": True}, "traits": {"email": None}})
    assert flat["columns"] == ["context_page_url", "properties_revenue", "properties_tags", "integrations_all",
                               "traits_email"]
    assert flat["fields"] == {"context_page_url": "su", "properties_revenue": "i5", "properties_tags": 's["a"]',
                              "integrations_all": "btrue"}
    assert flat["discards"] == []



def test_flatten_merges_colliding_keys_deterministically(spark):
    flat = flatten(spark, {"properties": {"productId": None, "product_id": "b", "ProductID": "c"}})
    assert flat["fields"] == {"properties_product_id": "sb"}
    assert flat["discards"] == [("properties_product_id", "c",
                                 "key 'properties.ProductID' names the same column as 'properties.product_id'")]



def test_flatten_discards_overlong_and_unnameable_columns(spark):
    long_key = "k" * 251
    flat = flatten(spark, {"properties": {long_key: 1, "!!!": "x"}, "a": 1})
    assert flat["fields"] == {"a": "i1"}
    reasons = {d[2] for d in flat["discards"]}
    assert reasons == {"column name longer than 250 characters", "key has no letters or digits to name a column"}
    assert ("properties." + long_key, "1", "column name longer than 250 characters") in flat["discards"]



def test_a_repeated_key_keeps_its_first_place_and_its_last_value(spark):
    line = f'{{"type":"identify","messageId":"m","receivedAt":"{RECEIVED}","traits":{{"a":1,"b":2,"a":3}}}}'
    row = parse(spark, line)[0]
    assert [c for c in row["columns"] if c.startswith("traits")] == ["traits_a", "traits_b"]
    assert row["fields"]["traits_a"] == "i3"



@pytest.mark.parametrize("line,reason", [
    ("not json", "not JSON at line 1 column 4: expecting value"), ("[1,2]", "not a JSON object"),
    ("5", "not a JSON object"), ('{"type":"page"} {}', "not JSON at line 1 column 17: extra data"),
    ('{"type":"page"', "not JSON at line 1 column 15: unexpected end-of-input"),
    ('{"type":"track","event":"Order Completed","properties":{"note":"unfinished}}',
     "not JSON at line 1 column 77: unterminated string"),
    ('{"type":"track","event":{"name":"x"},"messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}', "event is not a string"),
    ('{"type":"track","event":null,"messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}', "track without event"),
    ('{"messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}', "no type"),
    ('{"type":"click","messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}', "unknown type 'click'"),
    ('{"type":"track","messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}', "track without event"),
    ('{"type":"track","event":"!!","messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}',
     "track event name '!!' has no letters or digits"),
    ('{"type":"track","event":"%s","messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}' % ("Long Name" * 22),
     "track event name longer than 199 characters once slugged (its table would pass Glue's limit of 255)"),
    ('{"type":"identify","receivedAt":"2024-01-01T00:00:00Z"}', "no messageId"),
    ('{"type":"identify","messageId":"","receivedAt":"2024-01-01T00:00:00Z"}', "no messageId"),
    ('{"type":"identify","messageId":"m"}', "no parseable receivedAt"),
    ('{"type":"identify","messageId":"m","receivedAt":"soon"}', "no parseable receivedAt"),
    ('{"type":"identify","messageId":"m","receivedAt":"2024-01-01x00:00:00Z"}', "no parseable receivedAt"),
])
def test_rejections_carry_their_reason(spark, line, reason):
    row = parse(spark, line)[0]
    assert row["reason"] == reason
    assert row["raw"] == line and row["fields"] is None



def test_accepted_line(spark):
    row = parse(spark, '{"type":"track","event":"101 Account Update","messageId":7,'
                       '"receivedAt":"2024-01-01T23:59:59.5+01:00","properties":{"price":1.50}}')[0]
    assert row["reason"] is None and row["raw"] is None
    assert row["table"] == "track_101_account_update"
    assert row["partition"] == "day=2024-01-01/hr=22"
    assert row["_message_id"] == "7"
    assert row["_received_at"] == datetime(2024, 1, 1, 22, 59, 59, 500000)
    assert row["fields"]["properties_price"] == "d1.50"
    assert row["fields"]["event"] == "s101 Account Update"



def test_blank_lines_are_not_events(spark):
    assert parse(spark, "", "   ") == []



def test_received_at_in_any_rfc3339_form_routes_the_event(spark):
    row = parse(spark, '{"type":"identify","messageId":"m","receivedAt":"2020-01-24t11:59:02.402+05:30"}')[0]
    assert row["reason"] is None
    assert row["partition"] == "day=2020-01-24/hr=06"
    assert row["_received_at"] == datetime(2020, 1, 24, 6, 29, 2, 402000)

