"""Crashes at every I/O boundary of a user deletion (the storage wrapper of crash_points.py: before, after, or halfway
through its Nth write). After each death every file of the lake must hold its rows from before the deletion or
those from after it, never both and never neither; then the next delete-users (or, once the journal is written, the
next sync) finishes it, and the lake must equal one where the deletion ran without a crash.

    python tests/deletion_crash_points.py        (make soak: every boundary, three ways)

Prints the trials and the crash points covered.
"""
from __future__ import annotations

import shutil
import sys
from collections import Counter
from pathlib import Path

from crash_points import SOAK, SOURCE, Shape, _batches, _stage_input, points_to_try
from lake_checks import crash_points_main
from recording_environment import Boundaries, Died, DyingStorage


def lake_files(lake: Path) -> dict[str, Counter]:
    """The messageIds of every file a deletion may rewrite (tables, discards, duplicates), by path below the lake; read
    with pyarrow, file by file."""
    import pyarrow.parquet as pq

    roots = [lake / "segment-data" / area / SOURCE for area in ("data", "discards")]
    roots.append(lake / "segment-data" / "state" / SOURCE / "duplicates")
    return {str(f.relative_to(lake)): Counter(pq.read_table(f, columns=["message_id"]).column(0).to_pylist())
            for root in roots for f in sorted(root.rglob("*.parquet"))}


def users_to_delete(spark, lake: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The user with the most rows, and every user (or anonymous id, without a user id) of the smallest table file,
    so that the deletion both rewrites files and removes one."""
    from pyspark.sql import functions as F

    rows = (spark.read.option("mergeSchema", "true").parquet(str(lake / "segment-data" / "data" / SOURCE))
            .withColumn("file", F.input_file_name()))
    smallest = rows.groupBy("file").count().orderBy("count", "file").first()["file"]
    heaviest = rows.where("user_id IS NOT NULL").groupBy("user_id").count().orderBy(F.desc("count"), "user_id").first()
    in_smallest = rows.where(F.col("file") == smallest).select("user_id", "anonymous_id").collect()
    users = sorted({heaviest["user_id"]} | {r["user_id"] for r in in_smallest if r["user_id"] is not None})
    anonymous = sorted({r["anonymous_id"] for r in in_smallest if r["user_id"] is None})
    return tuple(users), tuple(anonymous)


def run_trials(spark, work: Path, trials: int | None, events: int, seed: int, shape: Shape = SOAK) -> dict:
    """A base lake from three syncs; a deletion without a crash (the reference), then one per crash point."""
    from segment_lake.catalog.local import LocalCatalog
    from segment_lake.deletion import UserDeletion
    from segment_lake.layout import LakeLayout
    from segment_lake.settings import SyncSettings
    from segment_lake.storage import HadoopStorage
    from segment_lake.sync import Sync

    source_root, files = _batches(work, events, seed, shape)
    base, inputs = work / "base", work / "input"
    settings = SyncSettings(source_id=SOURCE, input_uri=f"file://{inputs}", lake_uri=f"file://{base}",
                            glue_database=f"deletion_{seed}", catalog="local")
    for batch in (files[: len(files) // 3], files[len(files) // 3: 2 * len(files) // 3], files[2 * len(files) // 3:]):
        _stage_input(batch, source_root, inputs)
        Sync(spark, settings, LocalCatalog(spark), progress=lambda line: None).run()
    user_ids, anonymous_ids = users_to_delete(spark, base)
    before = lake_files(base)

    def delete(lake: Path, boundaries: Boundaries | None = None) -> None:
        storage = HadoopStorage(spark)
        if boundaries:
            storage = DyingStorage(storage, boundaries, spark)
        UserDeletion(spark, storage, LakeLayout(f"file://{lake}", SOURCE), progress=lambda line: None).run(
            user_ids, anonymous_ids)

    reference = work / "reference"
    shutil.copytree(base, reference)
    counting = Boundaries(f"file://{reference}")
    delete(reference, counting)
    after = lake_files(reference)
    changed = sorted(path for path in before if before[path] != after.get(path))
    assert any(path not in after for path in changed), "no file was removed"
    assert changed and sum(sum(c.values()) for c in before.values()) > sum(sum(c.values()) for c in after.values())

    covered: Counter = Counter()
    results = 0
    for n, how in points_to_try(counting.seen, trials, seed):
        lake = work / f"lake-{n}-{how}"
        shutil.copytree(base, lake)
        dying = Boundaries.at_point(f"file://{lake}", counting.seen, n, how)
        try:
            delete(lake, dying)
            raise AssertionError(f"the deletion outlived its death at write {n} ({how})")
        except Died:
            pass
        now = lake_files(lake)
        for path in sorted(set(before) | set(after)):  # each file whole: before or after
            assert now.get(path) in (before.get(path), after.get(path)), (
                f"death {how} write {n} ({dying.seen[-1]}): {path} holds neither its rows before nor after")
        journaled = (lake / "segment-data" / "state" / SOURCE / "deletion.json").exists()
        if journaled and results % 2:  # the next sync finishes it
            Sync(spark, SyncSettings(source_id=SOURCE, input_uri=f"file://{inputs}", lake_uri=f"file://{lake}",
                                     glue_database=f"deletion_{seed}", catalog="local"),
                 LocalCatalog(spark), progress=lambda line: None).run()
        else:
            delete(lake)
        assert lake_files(lake) == after, f"death {how} write {n} ({dying.seen[-1]}): the lake differs"
        assert not (lake / "segment-data" / "state" / SOURCE / "deletion.json").exists(), "the journal was left"
        assert not list((lake / "segment-stage").rglob("*.parquet")), "staged files were left behind"
        assert list((lake / "segment-data" / "deletions" / SOURCE).glob("*.json")), "no deletion report"
        covered[f"{how} {dying.seen[-1]}"] += 1
        results += 1
        shutil.rmtree(lake, ignore_errors=True)
    return {"trials": results, "writes_per_deletion": len(counting.seen), "crash_points": len(covered),
            "files_changed": len(changed), "files_removed": sum(1 for path in changed if path not in after),
            "covered": dict(sorted(covered.items()))}


if __name__ == "__main__":
    sys.exit(crash_points_main(__doc__, "deletion crash points", run_trials))
