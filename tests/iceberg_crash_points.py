"""Crashes at the Iceberg writes of a sync, a user deletion and a compaction (``--table-format iceberg``): each
table's commit of a run (``commit_table``), each table's deleting commit (``delete_rows``) and each table's compaction
(``maintain_table``: Iceberg's rewrite, expiry and orphan removal, each one commit), the process dying before or
after it (nothing written after, as after a SIGKILL). Each trial syncs a lake of its own twice, dying in the second
sync, and syncs again; then deletes a user, dying in the deletion, and lets the next sync finish it; then compacts,
dying in the compaction, and compacts again. After each, every table must hold the rows of a lake that never died,
each once (read through Iceberg's catalog, which names the live files), with no run or deletion left unfinished;
after the compaction, each table one snapshot and no Parquet file in its folder that the snapshot does not name.
An Iceberg lake cannot be copied per trial, as the other harnesses do: its metadata names its files by absolute
paths.

    python tests/iceberg_crash_points.py          (every Iceberg write of each, both ways; its own Spark with Iceberg)

Prints the trials and the crash points covered.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from crash_points import SMALL, SOURCE, _batches, _stage_input, points_to_try
from lake_checks import harness_arguments
from recording_environment import Boundaries, Died, DyingStorage

ICEBERG_WRITES = ("commit_table", "delete_rows", "maintain_table")


def run_trials(spark, work: Path, trials: int | None, events: int, seed: int) -> dict:
    """A reference lake (two syncs, a deletion, a compaction) counts the writes; then a lake per trial, dying at an
    Iceberg write of its second sync, of its deletion and of its compaction (``trials`` of each, one per kind and way
    first; None: every one)."""
    from segment_lake.catalog.local import LocalCatalog
    from segment_lake.compaction import Compaction
    from segment_lake.deletion import UserDeletion
    from segment_lake.layout import LakeLayout
    from segment_lake.settings import SyncSettings
    from segment_lake.storage import HadoopStorage
    from segment_lake.sync import Sync

    source_root, files = _batches(work, events, seed, SMALL)
    half = len(files) // 2
    counter = iter(range(1_000_000))

    def lake(name: str):
        inputs, database = work / name / "input", f"iceberg_{next(counter)}_{seed}"
        _stage_input(files[:half], source_root, inputs)
        settings = SyncSettings(source_id=SOURCE, input_uri=f"file://{inputs}", lake_uri=f"file://{work / name}/lake",
                                glue_database=database, catalog="local", table_format="iceberg")
        return settings, inputs

    def storage_for(settings, boundaries):
        storage = HadoopStorage(spark)
        return DyingStorage(storage, boundaries, spark) if boundaries else storage

    def sync(settings, boundaries=None):
        Sync(spark, settings, LocalCatalog(spark), progress=lambda line: None,
             storage=storage_for(settings, boundaries)).run()

    def delete(settings, user, boundaries=None):
        UserDeletion(spark, storage_for(settings, boundaries), LakeLayout(settings.lake_uri, SOURCE),
                     progress=lambda line: None).run((user,), ())

    def compact(settings, boundaries=None, progress=lambda line: None):
        Compaction(spark, storage_for(settings, boundaries), LocalCatalog(spark), LakeLayout(settings.lake_uri, SOURCE),
                   settings.database, "", settings.date_partition, progress=progress).run(0, 256)

    def compacted(settings) -> None:
        """Each table has one snapshot left, and its folder no Parquet file that snapshot does not name."""
        for table in [t.name for t in spark.catalog.listTables(settings.database) if not t.isTemporary]:
            name = f"{settings.database}.{table}"
            described = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}
            if described.get("Provider") != "iceberg":  # the discards and duplicates: Parquet records
                continue
            assert spark.sql(f"SELECT count(*) FROM {name}.snapshots").first()[0] == 1, table
            live = {_path(r.file_path) for r in spark.sql(f"SELECT file_path FROM {name}.files").collect()}
            on_disk = {str(p) for p in Path(_path(described["Location"])).rglob("*.parquet")}
            assert on_disk == live, f"{table}: {len(on_disk - live)} files no snapshot names, {len(live - on_disk)} lost"

    def rows(settings) -> Counter:
        """Each table's rows as (table, messageId, receivedAt), as Iceberg reads them."""
        found: Counter = Counter()
        for table in [t for t in spark.catalog.listTables(settings.database) if not t.isTemporary]:
            for row in spark.table(f"{settings.database}.{table.name}").select("message_id", "received_at").collect():
                found[(table.name, row.message_id, str(row.received_at))] += 1
        assert found and max(found.values()) == 1, f"{sum(c - 1 for c in found.values())} rows doubled"
        state = Path(settings.lake_uri.removeprefix("file://")) / "segment-data" / "state" / SOURCE
        assert not (state / "pending.json").exists() and not (state / "deletion.json").exists(), "left unfinished"
        return found

    # the reference: every write counted, the rows after the second sync and after the deletion
    settings, inputs = lake("reference")
    sync(settings)
    _stage_input(files[half:], source_root, inputs)
    counting = Boundaries(settings.lake_uri)
    sync(settings, counting)
    synced = rows(settings)
    # the user with rows in the most tables: a death between two tables' deleting commits is then tried too
    tables = [spark.table(f"{settings.database}.{t.name}") for t in spark.catalog.listTables(settings.database)
              if not t.isTemporary]
    held: Counter = Counter(row.user_id for table in tables if "user_id" in table.columns for row in
                            table.where("user_id IS NOT NULL").select("user_id").distinct().collect())
    user = held.most_common(1)[0][0]
    deleting = Boundaries(settings.lake_uri)
    delete(settings, user, deleting)
    deleted = rows(settings)
    assert len(deleted) < len(synced), f"user {user} had no rows"
    compacting, said = Boundaries(settings.lake_uri), []
    compact(settings, compacting, said.append)
    merged = [re.search(r"(\d+) files merged into (\d+)", line) for line in said if "through Iceberg" in line]
    assert merged and int(merged[0][1]) > int(merged[0][2]), said  # the compaction merged files: it had work to die in
    assert rows(settings) == deleted
    compacted(settings)

    def chosen(seen) -> list[tuple[int, str]]:
        """The Iceberg writes' points of a counted run: the first of each kind first, then the others."""
        points = [(n, how) for n, how in points_to_try(seen, None, seed) if seen[n - 1].operation in ICEBERG_WRITES]
        kinds = {f"{how} {seen[n - 1]}": (n, how) for n, how in reversed(points)}
        ordered = list(kinds.values()) + [p for p in points if p not in kinds.values()]
        return ordered[:trials] if trials is not None else ordered

    def die(step: str, lake_uri: str, seen, point, run) -> str:
        """Runs ``run`` dying at ``point`` of the counted writes ``seen``; the write it died at."""
        dying = Boundaries.at_point(lake_uri, seen, *point)
        try:
            run(dying)
            raise AssertionError(f"the {step} outlived its death at write {point}")
        except Died:
            return f"{step}: {point[1]} {dying.seen[-1]}"

    # each trial's lake takes a death in its second sync, then one in its deletion, then one in its compaction (while
    # points of each are left)
    covered: Counter = Counter()
    sync_points, deletion_points = chosen(counting.seen), chosen(deleting.seen)
    compaction_points = chosen(compacting.seen)
    trials_run = max(len(sync_points), len(deletion_points), len(compaction_points))
    for trial in range(trials_run):
        settings, inputs = lake(f"trial-{trial}")
        sync(settings)
        _stage_input(files[half:], source_root, inputs)
        if trial < len(sync_points):
            point = die("sync", settings.lake_uri, counting.seen, sync_points[trial],
                        lambda dying, s=settings: sync(s, dying))
            covered[point] += 1
        sync(settings)  # redoes the run (or, with no death in it, syncs the second half)
        assert rows(settings) == synced, f"after {covered}"
        if trial < len(deletion_points):
            point = die("deletion", settings.lake_uri, deleting.seen, deletion_points[trial],
                        lambda dying, s=settings: delete(s, user, dying))
            covered[point] += 1
            sync(settings)  # finishes the deletion first
            assert rows(settings) == deleted, point
        elif trial < len(compaction_points):
            delete(settings, user)
        if trial < len(compaction_points):
            point = die("compaction", settings.lake_uri, compacting.seen, compaction_points[trial],
                        lambda dying, s=settings: compact(s, dying))
            covered[point] += 1
            compact(settings)  # compacts again: what the dead one did stays done
            assert rows(settings) == deleted, point
            compacted(settings)
    return {"trials": trials_run, "crash_points": len(covered), "covered": dict(sorted(covered.items()))}


def _path(uri: str) -> str:
    """A local path from ``file:/p`` or ``file:///p``."""
    return "/" + uri.removeprefix("file:").lstrip("/")


def main() -> int:
    args = harness_arguments(__doc__, trials=None, events=600, work=".cache/iceberg-crash-points")
    from segment_lake.session import build_session

    spark = build_session("iceberg crash points", f"file://{args.work.resolve()}/metastore-lake", iceberg=True)
    print(json.dumps(run_trials(spark, args.work.resolve(), args.trials, args.events, args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
