"""The sync never crashes on input: every line read is landed, a duplicate, or rejected with its reason (the
rejected line kept), and every limit it applies is named where the user looks (hostile_corpus.py has the input)."""
import gzip
import itertools
import json
import os
from collections import Counter
from decimal import Decimal

import hostile_corpus as corpus
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parquet_reader import column_values
from sync_harness import Lake, make_catalog

from segment_lake.state import SourceState
from segment_lake.sync import Sync

pytestmark = pytest.mark.spark


def test_hostile_files_and_lines_are_landed_or_rejected_with_their_reason(spark, tmp_path):
    folder = corpus.write(tmp_path / "input")
    lines = corpus.lines()
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{folder.parent}", "hostile", "hostile_input")
    said = []
    result = Sync(spark, lake.settings(), lake.catalog, progress=said.append).run()
    assert result.status == "finished"
    assert result.read_count == result.row_count + result.duplicate_count + result.rejected_count

    rejected = lake.rejected()
    by_raw = {row["raw"]: row["reason"] for row in rejected if row.get("raw") is not None}
    for name in ("array", "number", "string", "null", "true"):
        assert by_raw[lines[name]] == "not a JSON object"
    assert by_raw[lines["thousand_digits"]] == "not JSON: number length (1001) exceeds the maximum length (1000)"
    assert by_raw[lines["deep_1500"]] == "not JSON: depth (1001) exceeds the maximum allowed nesting depth (1000)"
    assert by_raw[lines["slugless"]] == "track event name '!!! ???' has no letters or digits"
    assert by_raw[lines["emoji_name"]] == "track event name '\U0001f600' has no letters or digits"
    assert by_raw[lines["epoch_received"]] == "no parseable receivedAt"
    for i in range(len(corpus.REJECTED_TIMES)):
        assert by_raw[lines[f"bad_time{i}"]] == "no parseable receivedAt"
    unreadable = {row["file"].rsplit("/", 1)[-1]: row["reason"] for row in rejected if row.get("raw") is None}
    assert unreadable["lines.json.gz"] == (f"too long: line 2 has {len(lines['over_limit'])} bytes, over the limit of "
                                           f"16777216 (16 MiB); skipped, the input file keeps it")
    assert unreadable["truncated.json.gz"].startswith("unreadable: EOFException: Unexpected end of input stream")
    assert unreadable["garbage.json.gz"].startswith("unreadable: ")
    assert {r["file"].rsplit("/", 1)[-1] for r in rejected if r.get("raw") is not None and r["raw"] not in lines.values()} \
        == {"garbage.json"}  # its one line of bytes, kept as text
    assert result.rejected_count == len(rejected) == 5 + 5 + len(corpus.REJECTED_TIMES) + 3 + 1

    hostile = {row["message_id"]: row for row in lake.rows("track_hostile")}
    assert len(hostile["ten_mb"]["properties_blob"]) == corpus.TEN_MB
    assert (hostile["nan"]["properties_a"], hostile["nan"]["properties_b"], hostile["nan"]["properties_c"]) == (
        "NaN", "Infinity", "-Infinity")
    assert hostile["huge_int"]["properties_n"] == Decimal(2**70) and hostile["huge_int"]["properties_m"] == -Decimal(2**70)
    assert hostile["beyond_decimal"]["properties_d"] == "123456789012345678901234567890123456789.5"
    assert hostile["beyond_decimal"]["properties_e"] == "1E+40"
    assert hostile["keys"]["properties_a_b"] == 5
    assert hostile["latin1"]["name"] == "caf\ufffd \ufffd\ufffd"
    cut = [m for m in hostile if m.startswith("cut")]
    assert 0 < len(cut) < 2000
    assert len(lake.rows("track_flip")) == 20
    times = spark.read.parquet(lake.location("track_times")).selectExpr("message_id", "cast(received_at as string)")
    assert dict(times.collect()) == {f"time{i}": shown for i, shown in enumerate(corpus.LANDING_TIMES.values())}

    discards = Counter((d["message_id"], d["reason"]) for d in lake.discards())
    assert discards[("deep_200", "column name longer than 250 characters")] == 1
    assert discards[("keys", "key has no letters or digits to name a column")] == 3
    assert discards[("keys", "column name longer than 250 characters")] == 1
    assert discards[("keys", "key 'properties.a_b' names the same column as 'properties.a b'")] == 1
    assert discards[("keys", "key 'properties.aB' names the same column as 'properties.a b'")] == 1
    # the 20,000-property event: the table takes columns up to its limit, the rest of the values are discarded
    wide_columns = lake.columns("track_wide")
    assert len(wide_columns) == 5000
    over = discards[("wide", "the table has its limit of 5000 columns (--max-columns-per-table)")]
    assert over == 20_000 + 4 - 5000  # its properties and its type, event, messageId and receivedAt
    assert any("track_wide has its limit of 5,000 columns" in line for line in said)
    assert result.discarded_value_count == sum(discards.values())
    report = json.loads(lake.storage.read_text(lake.layout.report(result.run_id, result.start_time)).splitlines()[0])
    assert report["discarded_value_count"] == result.discarded_value_count


# ---- payload fuzzing: make test runs a few seeded examples, make soak many (SEGMENT_LAKE_FUZZ_EXAMPLES)

FUZZ_EXAMPLES = int(os.environ.get("SEGMENT_LAKE_FUZZ_EXAMPLES", "15"))
TIMES = [*corpus.LANDING_TIMES, *corpus.REJECTED_TIMES]
keys = st.one_of(st.text(max_size=12), st.sampled_from(["", "!!!", "\U0001f600", "k" * 260, "a b", "a_b", "aB", "day",
                                                         "hr", "messageId", "receivedAt", "Type"]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**80), 2**80), st.floats(), st.text(max_size=20),
                    st.sampled_from(TIMES), st.decimals(allow_nan=False).map(lambda d: float(d)))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
                      max_leaves=20)
events = st.fixed_dictionaries(
    {"type": st.sampled_from(["track", "identify", "page", "screen", "group", "alias", "Track", "bogus", ""]),
     "messageId": st.one_of(st.sampled_from(["m1", "m2", "m3", ""]), st.integers(0, 3), st.text(max_size=4)),
     "receivedAt": st.sampled_from(TIMES)},
    optional={"event": st.one_of(st.sampled_from(["Order Completed", "order_completed", "!!!", ""]), st.text(max_size=8)),
              "properties": st.dictionaries(keys, values, max_size=6), "traits": st.dictionaries(keys, values, max_size=4),
              "context": values, "userId": scalars})
lines = st.one_of(events.map(json.dumps), events.map(json.dumps), values.map(json.dumps),
                  st.text(min_size=1, max_size=30).map(lambda t: t.replace("\n", " ").replace("\r", " "))
                  ).filter(lambda line: line.strip(" "))
fuzz_runs = itertools.count()


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(drawn=st.lists(lines, min_size=1, max_size=40), compressed=st.booleans())
def test_fuzzed_payloads_are_each_landed_a_duplicate_or_rejected(spark, tmp_path, drawn, compressed):
    run = next(fuzz_runs)
    folder = tmp_path / f"fuzz{run}" / "input" / "1704153600000"
    folder.mkdir(parents=True)
    text = ("\n".join(drawn) + "\n").encode()
    (folder / ("events.json.gz" if compressed else "events.json")).write_bytes(gzip.compress(text) if compressed else text)
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/fuzz{run}/lake",
                f"file://{folder.parent}", "fuzz", f"fuzz_{run}")
    result = lake.sync()

    assert result.status == "finished" and result.read_count == len(drawn)
    assert result.read_count == result.row_count + result.duplicate_count + result.rejected_count
    rejected = lake.rejected() if result.rejected_count else []
    assert len(rejected) == result.rejected_count and not Counter(r["raw"] for r in rejected) - Counter(drawn)
    accepted = Counter(drawn) - Counter(r["raw"] for r in rejected)
    expected_ids = {str(json.loads(line)["messageId"]) for line in accepted}
    # ids and counts only, read with pyarrow (a Python datetime cannot hold every receivedAt the lake keeps)
    landed = [str(value) for value in column_values(lake.parquet_files(lake.layout.tables))]
    duplicates_uri = SourceState(lake.storage, lake.layout.state).duplicates_uri
    dropped = [str(value) for value in column_values(lake.parquet_files(duplicates_uri))] if result.duplicate_count else []
    assert len(landed) == result.row_count and len(dropped) == result.duplicate_count
    assert set(landed) | set(dropped) == expected_ids
    if result.discarded_value_count:
        assert len(column_values(lake.parquet_files(lake.layout.discards))) == result.discarded_value_count


def test_a_source_at_its_table_limit_rejects_the_events_of_tables_it_cannot_create(spark, tmp_path):
    from dataclasses import replace

    from lake_events import write_run1, write_run2

    write_run1(tmp_path / "input", "src1")
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input/segment-logs/src1", "src1", "table_limit")
    settings = replace(lake.settings(), max_tables_per_source=3)
    said = []
    first = Sync(spark, settings, lake.catalog, progress=said.append).run()
    assert sorted(t.table_name for t in first.tables) == ["alias", "group", "identify"]  # the first three by name
    assert any("source src1 has its limit of 3 tables (--max-tables-per-source): the events of 4 new tables are "
               "rejected" in line for line in said)
    refused = [r for r in lake.rejected() if "--max-tables-per-source" in r["reason"]]
    assert sorted(r["message_id"] for r in refused) == ["m1", "m10", "m12", "m2", "m5", "m6", "m9"]
    assert refused[0]["reason"].startswith("the source has its limit of 3 tables (--max-tables-per-source): no table ")
    assert first.read_count == first.row_count + first.duplicate_count + first.rejected_count
    assert lake.catalog.tables_columns("table_limit", ["page"])["page"] is None

    write_run2(tmp_path / "input", "src1")
    second = Sync(spark, settings, lake.catalog, progress=said.append).run()
    assert sorted(t.table_name for t in second.tables) == ["identify"]
    assert second.read_count == second.row_count + second.duplicate_count + second.rejected_count
