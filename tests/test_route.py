"""Routing: an event's table and partition from its type, name and receivedAt (UTC)."""
import pytest

from segment_lake.parse import parse_lines
from segment_lake.route import partition_keys

pytestmark = [pytest.mark.fast, pytest.mark.spark]


@pytest.mark.parametrize("option,expected", [
    ("day_hour", "day=2024-01-02/hr=23"),
    ("year_month_day_hour", "year=2024/month=01/day=02/hr=23"),
    ("year_month_day", "year=2024/month=01/day=02"),
    ("day", "day=2024-01-02"),
])
def test_route_names_tables_and_partitions_by_received_at_in_utc(spark, option, expected):
    line = '{"type":"track","event":"Order Completed","messageId":"m","receivedAt":"2024-01-03T00:59:00+01:00"}'
    lines = spark.createDataFrame([(line, "f", None)], "value string, file string, unreadable string")
    row = parse_lines(lines, "ios_", option, 1).first()
    assert row["table"] == "ios_track_order_completed"
    assert row["partition"] == expected
    assert [part.split("=")[0] for part in expected.split("/")] == partition_keys(option)

