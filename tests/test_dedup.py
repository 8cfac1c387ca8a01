"""The dedup stage on tiny DataFrames: the first event of a messageId kept within the window, in a run and across
runs; the duplicates recorded with the event they repeat."""
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segment_lake.dedup import duplicate_rows, without_duplicates
from segment_lake.state import SourceState
from segment_lake.storage import HadoopStorage
from segment_lake.uris import join
from segment_lake_contract import DEDUP_WINDOW_DAYS

pytestmark = [pytest.mark.fast, pytest.mark.spark]


def _ids(spark, rows):
    """Dedup's input: (_row, _message_id, _received_at, file), all in table "t"."""
    return spark.createDataFrame([(*row, "t") for row in rows],
                                 "_row long, _message_id string, _received_at timestamp, file string, table string")


TASKS = 3  # the ids shuffled into several partitions, as a larger run's are


def _dropped(spark, rows, landed=None, run_id="run1"):
    return sorted(r["_row"] for r in duplicate_rows(_ids(spark, rows), landed, run_id, TASKS).collect())



def test_dedup_in_a_run_keeps_the_first_in_received_at_order_then_file_then_line(spark):
    t = datetime(2024, 1, 2, 3)
    assert _dropped(spark, [(1, "m", t.replace(minute=5), "a"), (2, "m", t, "b"), (3, "n", t, "a"),
                            (4, "o", t, "b"), (5, "o", t, "a"), (6, "o", t, "a")]) == [1, 4, 6]



def test_dedup_in_a_run_has_the_window_of_seven_days_from_the_kept_event(spark):
    day = datetime(2024, 1, 1)
    # kept on day 0; 7 days later a duplicate of it; 9 days: kept; 12 days: a duplicate of the 9th day's
    assert _dropped(spark, [(1, "m", day, "a"), (2, "m", day + timedelta(days=7), "a"),
                            (3, "m", day + timedelta(days=9), "a"), (4, "m", day + timedelta(days=12), "a")]) == [2, 4]



def test_cross_run_dedup_honours_the_window_and_the_run(spark):
    t = datetime(2024, 1, 10)
    landed = spark.createDataFrame([
        ("a", datetime(2024, 1, 4), "run1"),   # 6 days before: duplicate
        ("b", datetime(2024, 1, 2), "run1"),   # 8 days before: a new event
        ("c", datetime(2024, 1, 17), "run1"),  # 7 days after: duplicate
        ("d", t, "run2"),                      # landed by the run being redone: not a duplicate
    ], "message_id string, received_at timestamp, run_id string")
    assert _dropped(spark, [(1, "a", t, "f"), (2, "b", t, "f"), (3, "c", t, "f"), (4, "d", t, "f")],
                    landed, "run2") == [1, 3]



def test_a_duplicate_names_its_file_table_and_the_kept_event(spark):
    t = datetime(2024, 1, 10)
    landed = spark.createDataFrame([("a", datetime(2024, 1, 9), "run0")],
                                   "message_id string, received_at timestamp, run_id string")
    events = _ids(spark, [(1, "a", t, "f1"), (2, "b", t, "f1"), (3, "b", t + timedelta(hours=1), "f2")])
    record = {r["_row"]: r.asDict() for r in duplicate_rows(events, landed, "run1", TASKS).collect()}
    assert record == {
        1: {"_row": 1, "message_id": "a", "received_at": t, "table_name": "t", "file": "f1", "run_id": "run1",
            "original_run_id": "run0", "original_received_at": datetime(2024, 1, 9)},
        3: {"_row": 3, "message_id": "b", "received_at": t + timedelta(hours=1), "table_name": "t", "file": "f2",
            "run_id": "run1", "original_run_id": "run1", "original_received_at": t}}



def test_a_duplicate_repeats_the_nearest_event_kept_before_it(spark):
    day = datetime(2024, 1, 1)
    landed = spark.createDataFrame([("m", day - timedelta(days=1), "run0")],
                                   "message_id string, received_at timestamp, run_id string")
    # kept: day -1 (run0) and day 7 (8 days after it); day 6 repeats day -1's, not day 7's (kept after it)
    events = [(1, "m", day + timedelta(days=6), "a"), (2, "m", day + timedelta(days=7), "a"),
              (3, "m", day + timedelta(days=8), "a")]
    record = {r["_row"]: (r["original_run_id"], r["original_received_at"])
              for r in duplicate_rows(_ids(spark, events), landed, "run1", TASKS).collect()}
    assert record == {1: ("run0", day - timedelta(days=1)), 3: ("run1", day + timedelta(days=7))}



def test_a_long_run_of_redeliveries_keeps_one(spark):
    t = datetime(2024, 1, 1)
    assert len(_dropped(spark, [(n, "m", t + timedelta(seconds=n), "a") for n in range(3000)])) == 2999



@pytest.mark.parametrize("broadcast_max, join", [(10, "BroadcastHashJoin"), (2, "SortMergeJoin")])
def test_the_duplicates_leave_the_events_by_a_broadcast_when_few_and_a_shuffle_when_many(spark, broadcast_max, join):
    """A replay makes nearly every event a duplicate: past the bound their row ids are not broadcast (a hash map
    growing with the run), and the same events remain."""
    t = datetime(2024, 1, 2)
    events = _ids(spark, [(n, f"m{n % 4}", t + timedelta(seconds=n), "a") for n in range(8)])
    duplicates = duplicate_rows(events, None, "run1", TASKS)
    found = duplicates.count()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # Spark itself would broadcast so small a table
    try:
        kept = without_duplicates(events, duplicates, found, broadcast_max)
        assert join in kept._jdf.queryExecution().executedPlan().toString()
        assert sorted(r["_row"] for r in kept.collect()) == [0, 1, 2, 3]
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_the_duplicates_record_keeps_the_runs_of_the_dedup_window(spark, tmp_path):
    storage = HadoopStorage(spark)
    state = SourceState(storage, f"file://{tmp_path}/state")
    runs = ["20240101T000000Z-aaaa", "20240108T000000Z-bbbb", "20240108T060000Z-cccc"]
    for run in runs:
        storage.write_text(join(state.duplicates_uri, f"part-{run}-00000.snappy.parquet"), "x")
    state.prune_duplicates(datetime(2024, 1, 8, 3))
    assert [f.uri.rsplit("/", 1)[-1] for f in storage.list_files(state.duplicates_uri)] == [
        "part-20240108T060000Z-cccc-00000.snappy.parquet"]



def _model_kept(events):
    """The dedup rule, independently: walk (row, id, at, file) in (at, file, row) order; keep an event
    unless a kept one with its id is at most 7 days away."""
    kept: dict[str, list[datetime]] = {}
    rows = set()
    for row, message_id, at, _ in sorted(events, key=lambda e: (e[2], e[3], e[0])):
        if not any(abs(at - k) <= timedelta(days=DEDUP_WINDOW_DAYS) for k in kept.get(message_id, [])):
            kept.setdefault(message_id, []).append(at)
            rows.add(row)
    return rows



@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 40)), min_size=1, max_size=14),
       st.integers(1, 3), st.data())
def test_the_landed_set_does_not_depend_on_how_files_are_split_into_runs(spark, drawn, per_file, data):
    """Events every 12 hours (ties and exact 7-day gaps are common) in files in receivedAt order (their
    lines in any order), split into runs at random file boundaries; each run deduplicates against what
    the earlier ones landed."""
    ordered = sorted(drawn, key=lambda e: e[1])
    events = [(row, message_id, datetime(2024, 1, 1) + timedelta(hours=12 * half_days), f"f{row // per_file:03d}")
              for row, (message_id, half_days) in enumerate(ordered)]
    # within a file, lines need not be in receivedAt order: renumber them in a drawn order
    for start in range(0, len(events), per_file):
        lines = data.draw(st.permutations(range(start, min(start + per_file, len(events)))))
        for line, index in zip(lines, range(start, start + len(lines)), strict=True):
            events[index] = (line, *events[index][1:])
    files = sorted({e[3] for e in events})
    cuts = sorted(data.draw(st.sets(st.integers(1, len(files) - 1), max_size=3)) if len(files) > 1 else [])
    runs = [files[a:b] for a, b in zip([0, *cuts], [*cuts, len(files)], strict=True)]
    landed_rows, index = set(), []
    for number, run_files in enumerate(runs):
        run_events = [e for e in events if e[3] in run_files]
        landed = spark.createDataFrame(index, "message_id string, received_at timestamp, run_id string") if index else None
        dropped = _dropped(spark, run_events, landed, f"run{number}")
        kept = [e for e in run_events if e[0] not in dropped]
        landed_rows.update(e[0] for e in kept)
        index += [(e[1], e[2], f"run{number}") for e in kept]
    assert landed_rows == _model_kept(events)

