"""Pure functions of the sync: slugs, value kinds, flattening, line parsing, the type lattice."""
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from segment_lake.flatten import flatten_event
from segment_lake.infer import plan_schema, type_of_kinds
from segment_lake.parse import parse_line
from segment_lake.slug import slug
from segment_lake.values import encode, parse_timestamp


@pytest.mark.parametrize("text,expected", [
    ("productId", "product_id"), ("messageId", "message_id"), ("receivedAt", "received_at"),
    ("101 Account Update", "101_account_update"), ("Order Completed", "order_completed"),
    ("  --Hello, World!--  ", "hello_world"), ("HTMLPage", "html_page"), ("utm2Source", "utm2_source"),
    ("integrations_All", "integrations_all"), ("e-mail", "e_mail"), ("ÄÖÜ", ""), ("already_snake", "already_snake"),
])
def test_slug(text, expected):
    assert slug(text) == expected


@pytest.mark.parametrize("value,expected", [
    (True, "btrue"), (False, "bfalse"), (None, None), (42, "i42"), (-(2**63), f"i{-(2**63)}"),
    (2**63, f"d{2**63}"), (10**40, f"s{10**40}"), (Decimal("19.99"), "d19.99"), (Decimal("5.0"), "d5.0"),
    (Decimal("1E+40"), "s1E+40"), ("hello", "shello"), ("5", "s5"), ([1, "a", {"b": None}], 's[1,"a",{"b":null}]'),
    ("2024-01-02T03:04:05.123Z", "t2024-01-02 03:04:05.123000\x1f2024-01-02T03:04:05.123Z"),
    ("2024-01-02T05:04:05+02:00", "t2024-01-02 03:04:05.000000\x1f2024-01-02T05:04:05+02:00"),
])
def test_encode(value, expected):
    assert encode(value) == expected


def test_parse_timestamp_forms():
    utc = timezone.utc
    assert parse_timestamp("2024-01-02T03:04:05Z") == datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc)
    assert parse_timestamp("2024-01-02 03:04") == datetime(2024, 1, 2, 3, 4, tzinfo=utc)
    assert parse_timestamp("2024-01-02T03:04:05.123456789Z") == datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=utc)
    assert parse_timestamp("2024-01-02T00:30:00-0130") == datetime(2024, 1, 2, 2, 0, tzinfo=utc)
    for bad in ("2024-13-01T00:00:00Z", "2024-01-02", "yesterday", "2024-01-02T25:00:00Z", ""):
        assert parse_timestamp(bad) is None, bad


def test_flatten_joins_nested_keys_and_keeps_arrays_whole():
    flat = flatten_event({"messageId": "m", "context": {"page": {"url": "u"}}, "properties": {"revenue": 5,
                          "tags": ["a"], "empty": {}}, "integrations": {"All": True}, "traits": {"email": None}})
    assert flat.columns == ["message_id", "context_page_url", "properties_revenue", "properties_tags",
                            "integrations_all", "traits_email"]
    assert flat.fields == {"message_id": "sm", "context_page_url": "su", "properties_revenue": "i5",
                           "properties_tags": 's["a"]', "integrations_all": "btrue"}
    assert flat.discards == []


def test_flatten_merges_colliding_keys_deterministically():
    flat = flatten_event({"properties": {"productId": None, "product_id": "b", "ProductID": "c"}})
    assert flat.fields == {"properties_product_id": "sb"}
    assert flat.discards == [("properties_product_id", "c",
                              "key 'properties.ProductID' names the same column as 'properties.product_id'")]


def test_flatten_discards_overlong_and_unnameable_columns():
    long_key = "k" * 251
    flat = flatten_event({"properties": {long_key: 1, "!!!": "x"}, "a": 1})
    assert flat.fields == {"a": "i1"}
    reasons = {d[2] for d in flat.discards}
    assert "column name longer than 250 characters" in reasons
    assert "key has no letters or digits to name a column" in reasons
    assert any(d[0] == "properties." + long_key and d[1] == "1" for d in flat.discards)


@pytest.mark.parametrize("line,reason", [
    ("not json", "not JSON: Expecting value"), ("[1,2]", "not a JSON object"),
    ('{"messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}', "no type"),
    ('{"type":"click","messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}', "unknown type 'click'"),
    ('{"type":"track","messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}', "track without event"),
    ('{"type":"track","event":"!!","messageId":"m","receivedAt":"2024-01-01T00:00:00Z"}', "track event name '!!' has no letters or digits"),
    ('{"type":"identify","receivedAt":"2024-01-01T00:00:00Z"}', "no messageId"),
    ('{"type":"identify","messageId":"m"}', "no parseable receivedAt"),
    ('{"type":"identify","messageId":"m","receivedAt":"soon"}', "no parseable receivedAt"),
])
def test_rejections_carry_their_reason(line, reason):
    assert parse_line(line).reason == reason


def test_accepted_line():
    parsed = parse_line('{"type":"track","event":"101 Account Update","messageId":7,'
                        '"receivedAt":"2024-01-01T23:59:59.5+01:00","properties":{"price":1.50}}')
    assert parsed.reason is None
    assert parsed.segment_type == "track_101_account_update"
    assert parsed.message_id == "7"
    assert parsed.received_at == datetime(2024, 1, 1, 22, 59, 59, 500000, tzinfo=timezone.utc)
    assert parsed.fields["properties_price"] == "d1.50"
    assert parsed.fields["event"] == "s101 Account Update"


@pytest.mark.parametrize("kinds,expected", [
    ({"i"}, "bigint"), ({"i", "d"}, "decimal(38,6)"), ({"i", "s"}, "string"), ({"b"}, "boolean"),
    ({"b", "i"}, "string"), ({"t"}, "timestamp"), ({"t", "s"}, "string"), ({"d"}, "decimal(38,6)"),
])
def test_type_lattice(kinds, expected):
    assert type_of_kinds(kinds) == expected


def test_plan_keeps_catalog_types_and_appends_new_columns_in_first_seen_order():
    existing = [("a", "bigint"), ("b", "string")]
    observed = [("c", {"s"}, (2, "m", 0)), ("a", {"s"}, (0, "m", 0)), ("d", {"i"}, (1, "m", 3)),
                ("sent_at", {"s"}, (1, "m", 1)), ("e", set(), (0, "m", 5))]
    schema = plan_schema(existing, observed)
    assert schema.columns == (("a", "bigint"), ("b", "string"), ("sent_at", "timestamp"), ("d", "bigint"),
                              ("c", "string"))
    assert schema.new_columns == ("sent_at", "d", "c")
