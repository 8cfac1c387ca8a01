"""Crashes at every I/O boundary of a sync: storage and catalog wrappers that let the process "die" before or
after its Nth write (a file written, moved or deleted; a database or table registered), and, for a move, halfway
(the copy made and the original left, as a rename on S3 is a copy and a delete). After the death nothing more is
written, as after a SIGKILL; then a clean re-run, and the lake must equal one synced without a crash.

    python tests/crash_points.py                 (make soak: every boundary of a sync, three ways)

Prints the trials and the crash points covered.
"""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from lake_checks import check_lake, harness_arguments
from recording_environment import Action, Boundaries, Died, DyingCatalog, DyingStorage

SOURCE = "src0001"


def points_to_try(seen: list[Action], trials: int | None, seed: int) -> list[tuple[int, str]]:
    """Where to die, (write number, how), given the writes ``seen`` in a run: every one when ``trials`` is None, else
    a seeded sample of that many, one point per kind of write and way of dying first."""
    points = [(n, how) for n in range(1, len(seen) + 1) for how in ("before", "after", "half")
              if how != "half" or seen[n - 1].can_be_halfway]
    if trials is not None:
        random.Random(seed).shuffle(points)
        kinds = {f"{how} {seen[n - 1]}": (n, how) for n, how in reversed(points)}
        points = (list(kinds.values()) + [p for p in points if p not in kinds.values()])[:trials]
    return points


@dataclass(frozen=True)
class Shape:
    """What the harnesses generate: distinct track event names, hours and files per hour. The default is make soak's;
    make test's samples use SMALL, whose partitions each still get a file of each of three syncs."""
    event_names: int = 6
    hours: int = 2
    files_per_hour: int = 2


SOAK, SMALL = Shape(), Shape(event_names=1, hours=1, files_per_hour=3)


def _batches(work: Path, events: int, seed: int, shape: Shape = SOAK) -> tuple[Path, list[Path]]:
    generated = work / "generated"
    cli = str(Path(sys.executable).with_name("segment-lake"))
    subprocess.run([cli, "generate", "--output", str(generated), "--events", str(events), "--seed", str(seed),
                    "--event-names", str(shape.event_names), "--hours", str(shape.hours),
                    "--files-per-hour", str(shape.files_per_hour), "--duplicate-rate", "0.05",
                    "--malformed-rate", "0.01"], check=True, capture_output=True)
    files = sorted((generated / "segment-logs" / SOURCE).rglob("*.gz"))
    return generated / "segment-logs" / SOURCE, files


def _stage_input(files: list[Path], source_root: Path, input_dir: Path) -> None:
    for file in files:
        target = input_dir / file.relative_to(source_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(file, target)


def register_copy(catalog, base_database: str, database: str, base: Path, lake: Path) -> None:
    """Registers the event tables of ``lake``, a copy of the lake ``base``, in a database of their own: the base's
    columns and partitions, at the copy's locations (through the catalog's own calls, so for either catalog)."""
    from segment_lake.catalog import TableChange
    from segment_lake.route import partition_keys

    catalog.ensure_database(database)
    tables = sorted(folder.name.split("=", 1)[1] for folder in (base / "segment-data" / "data" / SOURCE).glob("segment_type=*"))
    catalog.register(database, [
        TableChange(table, tuple(info.columns), tuple(partition_keys("day_hour")),
                    tuple(sorted(catalog.partition_locations(base_database, table))),
                    info.location.replace(str(base), str(lake), 1))
        for table, info in catalog.describe_tables(base_database, tables).items()])


def run_trials(spark, work: Path, trials: int | None, events: int, seed: int, catalogs: dict,
               shape: Shape = SOAK) -> dict:
    """A base lake synced from the first half of the files; then, on a copy of it registered in a database of its
    own, the second half synced without a crash (the reference, which counts the writes) and, on another copy per
    crash point (every write when ``trials`` is None, else a seeded sample), with a death at one write, then a clean
    re-run; each lake is checked against the reference. ``catalogs``: name -> function(spark, database) making a
    catalog."""
    from segment_lake.settings import SyncSettings
    from segment_lake.storage import HadoopStorage
    from segment_lake.sync import Sync

    source_root, files = _batches(work, events, seed, shape)
    half, inputs = len(files) // 2, work / "input"
    counter = iter(range(1_000_000))

    def settings_for(lake: Path, database: str, catalog_kind: str) -> SyncSettings:
        return SyncSettings(source_id=SOURCE, input_uri=f"file://{inputs}", lake_uri=f"file://{lake}",
                            glue_database=database, catalog="local" if catalog_kind == "local" else "glue")

    def sync(settings, catalog, boundaries=None):
        storage = HadoopStorage(spark)
        if boundaries:
            storage, catalog = DyingStorage(storage, boundaries, spark), DyingCatalog(catalog, boundaries)
        return Sync(spark, settings, catalog, progress=lambda line: None, storage=storage).run()

    _stage_input(files[:half], source_root, inputs)
    bases = {}
    for catalog_kind, make in catalogs.items():
        base, database = work / f"base-{catalog_kind}", f"crash_base_{catalog_kind}_{seed}"
        catalog = make(spark, database)
        sync(settings_for(base, database, catalog_kind), catalog)
        bases[catalog_kind] = (base, database, catalog)
    _stage_input(files[half:], source_root, inputs)

    def copy_of(catalog_kind: str, name: str):
        base, base_database, catalog = bases[catalog_kind]
        lake, database = work / name, f"crash_{next(counter)}_{seed}"
        shutil.copytree(base, lake)
        register_copy(catalog, base_database, database, base, lake)
        return lake, settings_for(lake, database, catalog_kind), catalog

    covered: Counter = Counter()
    results = []
    for catalog_kind in catalogs:
        reference, settings, catalog = copy_of(catalog_kind, f"reference-{catalog_kind}")
        counting = Boundaries(settings.lake_uri)
        sync(settings, catalog, counting)
        expected = check_lake(reference, SOURCE, inputs, catalog, settings.database)
        for n, how in points_to_try(counting.seen, trials, seed):
            lake, settings, catalog = copy_of(catalog_kind, f"lake-{catalog_kind}-{n}-{how}")
            dying = Boundaries.at_point(settings.lake_uri, counting.seen, n, how)
            try:
                sync(settings, catalog, dying)
                raise AssertionError(f"the sync outlived its death at write {n} ({how})")
            except Died:
                pass
            sync(settings, catalog)
            landed = check_lake(lake, SOURCE, inputs, catalog, settings.database)
            assert landed == expected, (f"death {how} write {n} ({dying.seen[-1]}): "
                                        f"{sum((landed - expected).values())} events too many, "
                                        f"{sum((expected - landed).values())} missing")
            covered[f"{how} {dying.seen[-1]}"] += 1
            results.append((catalog_kind, n, how))
            shutil.rmtree(lake, ignore_errors=True)
    return {"trials": len(results), "writes_per_sync": len(counting.seen), "crash_points": len(covered),
            "covered": dict(sorted(covered.items()))}


def main() -> int:
    args = harness_arguments(__doc__, trials=None, events=3000, work=".cache/crash-points")
    from segment_lake.catalog.local import LocalCatalog
    from segment_lake.session import build_session

    spark = build_session("crash points", f"file://{args.work.resolve()}/metastore-lake")
    summary = run_trials(spark, args.work.resolve(), args.trials, args.events, args.seed,
                         {"local": lambda spark, database: LocalCatalog(spark)})
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
