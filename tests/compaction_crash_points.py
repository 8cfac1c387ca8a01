"""Crashes at every I/O boundary of a compaction (the storage and catalog wrappers of crash_points.py: before, after,
or halfway through its Nth write, a catalog switch included). After each death a reader of the catalog must see
every row once (each table's messageIds as before), the next sync must know every file processed and every
messageId landed (the compaction of the sync's state), and the lake's files must be the old ones or the merged ones
wherever the catalog points; then the next compact (or sync) finishes it, and the lake must equal one compacted
without a crash.

    python tests/compaction_crash_points.py      (make soak: every boundary, three ways)

Prints the trials and the crash points covered.
"""
from __future__ import annotations

import shutil
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from crash_points import SOAK, SOURCE, Shape, _batches, _stage_input, points_to_try, register_copy
from lake_checks import crash_points_main
from recording_environment import Boundaries, Died, DyingCatalog, DyingStorage

HOURS = 1e-9  # every partition of the generated (past) days is closed


def data_tables(spark, database: str) -> dict[str, str]:
    """The database's event tables (those in the lake's data folder), with their locations: one listing and one
    batch read of the catalog."""
    from segment_lake.catalog.local import LocalCatalog

    names = [row["tableName"] for row in spark.sql(f"SHOW TABLES IN `{database}`").collect() if not row["isTemporary"]]
    described = LocalCatalog(spark).describe_tables(database, sorted(names))
    return {table: info.location for table, info in described.items()
            if info and f"/segment-data/data/{SOURCE}/" in info.location}


def catalog_rows(spark, database: str) -> dict[str, Counter]:
    """What a reader of the catalog sees: each event table's messageIds, counted (one query over every table)."""
    tables = list(data_tables(spark, database))
    for table in tables:
        spark.sql(f"REFRESH TABLE `{database}`.`{table}`")
    query = " UNION ALL ".join(f"SELECT '{table}' AS t, message_id FROM `{database}`.`{table}`" for table in tables)
    found: dict[str, Counter] = {table: Counter() for table in tables}
    for row in spark.sql(f"SELECT t, message_id, count(*) AS n FROM ({query}) GROUP BY t, message_id").collect():
        found[row["t"]][row["message_id"]] = row["n"]
    return found


def files_per_partition(lake: Path) -> Counter:
    return Counter(str(f.parent.relative_to(lake)) for f in (lake / "segment-data" / "data" / SOURCE).rglob("*.parquet"))


def partitions_away(catalog, database: str, lake: Path) -> list[str]:
    """The partitions of the event tables the catalog does not point at in their own folder of the lake."""
    from segment_lake.catalog import same_location

    return [location for table in data_tables(catalog.spark, database)
            for v, location in catalog.partition_locations(database, table).items()
            if not same_location(location, f"file://{lake}/segment-data/data/{SOURCE}/segment_type={table}/"
                                           f"day={v[0]}/hr={v[1]}")]


def dedup_state(spark, lake: Path, span) -> tuple[set[str], set[str]]:
    """What keeps the next sync from landing an event twice: the files processed, and the messageIds dedup would
    compare a run's events received in ``span`` against."""
    from segment_lake.landed_index import landed_ids
    from segment_lake.layout import LakeLayout
    from segment_lake.state import SourceState
    from segment_lake.storage import HadoopStorage

    storage, layout = HadoopStorage(spark), LakeLayout(f"file://{lake}", SOURCE)
    state = SourceState(storage, layout.state)
    ids = landed_ids(spark, storage, state, layout, "day_hour", *span)
    return state.processed_files(), {row[0] for row in ids.frame.select("message_id").distinct().collect()}


def run_trials(spark, work: Path, trials: int | None, events: int, seed: int, shape: Shape = SOAK) -> dict:
    """A base lake from three syncs (three files per partition); a compaction without a crash (the reference), then
    one per crash point, each on a copy of the base registered in its own database."""
    from segment_lake.catalog.local import LocalCatalog
    from segment_lake.compaction import Compaction
    from segment_lake.landed_index import from_micros
    from segment_lake.layout import LakeLayout
    from segment_lake.settings import SyncSettings
    from segment_lake.storage import HadoopStorage
    from segment_lake.sync import Sync

    source_root, files = _batches(work, events, seed, shape)
    base, inputs = work / "base", work / "input"
    base_database = f"compaction_{seed}"

    def settings(lake: Path, database: str) -> SyncSettings:
        return SyncSettings(source_id=SOURCE, input_uri=f"file://{inputs}", lake_uri=f"file://{lake}",
                            glue_database=database, catalog="local")

    # every third file of each hour per sync: each partition gets a file from each of the three syncs
    for batch in (files[0::3], files[1::3], files[2::3]):
        _stage_input(batch, source_root, inputs)
        Sync(spark, settings(base, base_database), LocalCatalog(spark), progress=lambda line: None).run()
    before_rows = catalog_rows(spark, base_database)
    landed = spark.read.parquet(f"{base}/segment-data/state/{SOURCE}/landed").selectExpr("min(unix_micros(received_at))")
    span = (from_micros(landed.first()[0]) - timedelta(days=1), datetime.now(UTC) + timedelta(days=365))
    before_state = dedup_state(spark, base, span)

    def compact(lake: Path, database: str, boundaries: Boundaries | None = None) -> dict:
        storage, catalog = HadoopStorage(spark), LocalCatalog(spark)
        if boundaries:
            storage, catalog = DyingStorage(storage, boundaries, spark), DyingCatalog(catalog, boundaries)
        return Compaction(spark, storage, catalog, LakeLayout(f"file://{lake}", SOURCE), database, "", "day_hour",
                          progress=lambda line: None).run(HOURS, 256)

    reference, trial = work / "reference", 0
    shutil.copytree(base, reference)
    register_copy(LocalCatalog(spark), base_database, f"{base_database}_reference", base, reference)
    counting = Boundaries(f"file://{reference}")
    report = compact(reference, f"{base_database}_reference", counting)
    after = files_per_partition(reference)
    assert report.merged_files_before > report.merged_files_after > 0, report
    assert catalog_rows(spark, f"{base_database}_reference") == before_rows

    covered: Counter = Counter()
    for n, how in points_to_try(counting.seen, trials, seed):
        trial += 1
        lake, database = work / f"lake-{n}-{how}", f"{base_database}_{trial}"
        shutil.copytree(base, lake)
        register_copy(LocalCatalog(spark), base_database, database, base, lake)
        dying = Boundaries.at_point(f"file://{lake}", counting.seen, n, how)
        try:
            compact(lake, database, dying)
            raise AssertionError(f"the compaction outlived its death at write {n} ({how})")
        except Died:
            pass
        where = f"death {how} write {n} ({dying.seen[-1]})"
        assert catalog_rows(spark, database) == before_rows, f"{where}: a reader sees other rows"
        assert dedup_state(spark, lake, span) == before_state, f"{where}: the next sync would not see what landed"
        if (lake / "segment-data" / "state" / SOURCE / "compaction.json").exists() and trial % 2:
            Sync(spark, settings(lake, database), LocalCatalog(spark), progress=lambda line: None).run()  # finishes it
        else:
            compact(lake, database)
        assert catalog_rows(spark, database) == before_rows, f"{where}: rows differ after finishing"
        assert files_per_partition(lake) == after, f"{where}: the partitions' files differ from the reference's"
        state = lake / "segment-data" / "state" / SOURCE
        assert not (state / "compaction.json").exists() and not (state / "compaction-stage").exists(), where
        away = partitions_away(LocalCatalog(spark), database, lake)
        assert not away, f"{where}: partitions elsewhere: {away[:3]}"
        covered[f"{how} {dying.seen[-1]}"] += 1
        spark.sql(f"DROP DATABASE `{database}` CASCADE")
        shutil.rmtree(lake, ignore_errors=True)
    return {"trials": trial, "writes_per_compaction": len(counting.seen), "crash_points": len(covered),
            "files_before": report.merged_files_before, "files_after": report.merged_files_after,
            "covered": dict(sorted(covered.items()))}


if __name__ == "__main__":
    sys.exit(crash_points_main(__doc__, "compaction crash points", run_trials))
