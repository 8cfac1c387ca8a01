"""Discover: the run's files (an unfinished run to redo, the files no finished run processed, or a replay's days),
and read their lines."""
from __future__ import annotations

from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession

from .errors import InvalidSettings, missing_input
from .jvm_code import load_class
from .progress import count
from .records import Run
from .recovery import forget_attempt
from .state import RunManifest
from .storage import FileInfo, LakeStorage
from .uris import join, relative_path

if TYPE_CHECKING:
    from .environment import SyncEnvironment

DAY_MS = 86_400_000


def new_files(storage: LakeStorage, input_uri: str, processed: set[str]) -> list[FileInfo]:
    """Files below ``input_uri`` (any folder structure, ``.gz`` or plain) not in ``processed``, sorted."""
    return [f for f in storage.list_files(input_uri) if f.uri not in processed]


def received_day(path: str) -> date | None:
    """The day of the first folder of ``path`` named as Segment's S3 destination names a day, its first millisecond
    since the epoch (``1704153600000/...`` is 2024-01-02); None when no folder is."""
    for folder in path.split("/")[:-1]:
        if folder.isdigit() and len(folder) == 13 and int(folder) % DAY_MS == 0:
            return datetime.fromtimestamp(int(folder) / 1000, UTC).date()
    return None


def other_sources(relative_paths: list[str], source_id: str) -> list[str]:
    """The folders that stand where a source's folder stands in Segment's S3 destination layout
    (``<source>/<day-epoch-ms>/...``), other than ``source_id``'s: an input one folder too high holds them."""
    found = set()
    for path in relative_paths:
        folders = path.split("/")[:-1]
        day = next((i for i, folder in enumerate(folders) if received_day(folder + "/x")), None)
        if day and folders[day - 1] != source_id:
            found.add(folders[day - 1])
    return sorted(found)


def replay_files(storage: LakeStorage, input_uri: str, first: date, last: date) -> list[FileInfo]:
    """Files below ``input_uri`` in the day folders from ``first`` to ``last``, processed or not, sorted."""
    chosen = []
    for info in storage.list_files(input_uri):
        day = received_day(relative_path(info.uri, input_uri))
        if day is not None and first <= day <= last:
            chosen.append(info)
    return chosen


def read_lines(spark: SparkSession, files: list[str], sizes: list[int]) -> DataFrame:
    """(value, file, unreadable): one row per line, gzip files decompressed by their ``.gz`` extension, in
    tasks of about equal bytes (``sizes``). A file that breaks off (truncated or corrupt, or removed since it
    was listed) gives its lines up to the fault and one row with a null value and ``unreadable`` saying
    where and why (``jvm/ReadFiles.java``)."""
    load_class(spark, "ReadFiles")
    stage = spark.sparkContext._jvm.segmentlake.ReadFiles.stage
    return DataFrame(stage(spark._jsparkSession, list(files), [int(size) for size in sizes]), spark)


def discover(env: SyncEnvironment, run_id: str, start_time: datetime) -> Run:
    """The unfinished run to redo, or a new run (``run_id``): over the files no finished run processed, or for a
    replay the files of its days, processed or not (dedup keeps what the lake has from landing twice). A new run
    with files is begun (its manifest written) before it returns."""
    manifest = _manifest(env, run_id, start_time)
    return Run(manifest, redo=manifest.run_id != run_id)


def _manifest(env: SyncEnvironment, run_id: str, start_time: datetime) -> RunManifest:
    settings, state = env.settings, env.state
    window = settings.replay
    replay = (window.first.isoformat(), window.last.isoformat()) if window else None
    pending = state.pending()
    if pending and state.is_finished(pending.run_id):
        state.finish(pending)  # crashed after advancing the state: only the cleanup was left
        pending = None
    if pending and replay and pending.replay != replay:
        raise InvalidSettings(f"source {settings.source_id} has an unfinished run {pending.run_id}: "
                              f"`segment-lake sync` redoes it; replay after it")
    if pending:
        pending = _without_missing_files(env, pending)
        if pending.files:
            return pending
        state.finish(pending)  # none of its files is left: nothing to redo
    if not env.storage.exists(settings.input_uri):
        raise missing_input(settings.input_uri)
    files = (replay_files(env.storage, settings.input_uri, window.first, window.last) if replay
             else new_files(env.storage, settings.input_uri, state.processed_files()))
    others = other_sources([relative_path(f.uri, settings.input_uri) for f in files], settings.source_id)
    if others:
        named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise InvalidSettings(
            f"--input {settings.input_uri!r} holds the folders of other sources ({named}), not only the day "
            f"folders of source {settings.source_id}: pass the folder of {settings.source_id}'s events, "
            f"{join(settings.input_uri, settings.source_id)}")
    manifest = RunManifest(run_id, tuple(f.uri for f in files), start_time.isoformat(), tuple(f.size for f in files),
                           replay)
    if files:
        state.begin(manifest)
    return manifest


def _without_missing_files(env: SyncEnvironment, manifest: RunManifest) -> RunManifest:
    """An unfinished run's files that still exist, with their sizes: a file removed since (by hand, or by a
    lifecycle rule) has nothing left to land, and waiting for it would block the source for good."""
    sizes = {file: env.storage.size(file) for file in manifest.files}
    missing = [file for file, size in sizes.items() if size is None]
    if not missing:
        return RunManifest(manifest.run_id, manifest.files, manifest.start_time,
                           tuple(sizes[file] for file in manifest.files), manifest.replay)
    shown = ", ".join(relative_path(file, env.settings.input_uri) for file in missing[:3])
    env.progress(f"discover: dropping {count(len(missing), 'file')} that unfinished run {manifest.run_id} listed "
                 f"and no longer exist{'s' if len(missing) == 1 else ''}: {shown}{' and more' if len(missing) > 3 else ''}")
    # with other files the redo writes other folders: what the attempt published must go first
    forget_attempt(env.storage, env.layout, manifest.run_id)
    kept_files = tuple(f for f in manifest.files if sizes[f] is not None)
    kept = RunManifest(manifest.run_id, kept_files, manifest.start_time, tuple(sizes[f] for f in kept_files),
                       manifest.replay)
    env.state.begin(kept)
    return kept
