"""Per-source sync state, kept in the lake: the pending run's manifest, the files each finished
run processed, the messageIds each run landed (for cross-run dedup, see landed_index), and the duplicates each
run dropped (kept for the dedup window).

A run first writes its manifest (run id and input files). If it crashes, the next sync redoes
that same run with the same id and files, so deterministic outputs are overwritten, never doubled.
The processed-file list advances only after data, discards and catalog are in place. ``segment-lake compact``
merges the finished runs' lists into one object (``processed/merged-<id>.json``), so the state holds a few objects
whatever the number of runs.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from .errors import InvalidSettings
from .layout import LakeLayout, StateLayout, run_of_name, written_before
from .storage import LakeStorage
from .uris import join

RUN_ID_TIME = "%Y%m%dT%H%M%SZ"  # a run id starts with its start time, so ids sort by it
_MERGED = "merged-"


def new_run_id(now: datetime) -> str:
    return f"{now:{RUN_ID_TIME}}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class RunManifest:
    """A run's id, input files with their sizes in bytes (empty in manifests of earlier versions), and start."""

    run_id: str
    files: tuple[str, ...]
    start_time: str
    sizes: tuple[int, ...] = ()
    replay: tuple[str, str] | None = None  # a replay's first and last day (YYYY-MM-DD)

    def to_json(self) -> str:
        return json.dumps({"run_id": self.run_id, "files": list(self.files), "start_time": self.start_time,
                           "sizes": list(self.sizes), "replay": list(self.replay) if self.replay else None})

    @staticmethod
    def from_json(text: str) -> RunManifest:
        data = json.loads(text)
        replay = data.get("replay")
        return RunManifest(data["run_id"], tuple(data["files"]), data["start_time"], tuple(data.get("sizes", ())),
                           tuple(replay) if replay else None)


class SourceState(StateLayout):
    """A source's sync state: its files (StateLayout) and what they say."""

    def __init__(self, storage: LakeStorage, root: str) -> None:
        """``root``: the source's state folder (LakeLayout.state)."""
        super().__init__(root)
        self.storage = storage

    def pending(self) -> RunManifest | None:
        if not self.storage.exists(self.pending_uri):
            return None
        return RunManifest.from_json(self.storage.read_text(self.pending_uri))

    def begin(self, manifest: RunManifest) -> None:
        self.storage.write_text(self.pending_uri, manifest.to_json())

    def processed_files(self) -> set[str]:
        done: set[str] = set()
        for info in self.storage.list_files(self.processed_uri):
            done.update(json.loads(self.storage.read_text(info.uri))["files"])
        return done

    def finished_runs(self) -> tuple[int, str | None]:
        """How many runs finished, and the id of the last (from one listing of the processed lists)."""
        names = sorted(info.uri.rsplit("/", 1)[-1] for info in self.storage.list_files(self.processed_uri))
        merged = [name for name in names if name.startswith(_MERGED)]
        count, last = 0, None
        if merged:
            newest = json.loads(self.storage.read_text(join(self.processed_uri, merged[-1])))
            count, last = newest["runs"], newest["last_run"]
        later = [run for run in map(run_of_name, names) if run is not None and (last is None or run > last)]
        return count + len(later), later[-1] if later else last

    def merge_processed(self, merge_id: str) -> int:
        """Merges the finished runs' lists into ``merged-<merge_id>.json`` and removes the rest; returns how many
        objects were merged. A crash before the removals leaves lists that say the same twice; runs merged are counted
        by their ids (they start with their start time: later runs sort after the last merged)."""
        infos = self.storage.list_files(self.processed_uri)
        if len(infos) < 2:
            return 0
        runs, last = self.finished_runs()
        self.storage.write_text(join(self.processed_uri, f"{_MERGED}{merge_id}.json"), json.dumps(
            {"files": sorted(self.processed_files()), "runs": runs, "last_run": last}))
        for info in infos:
            self.storage.delete(info.uri)
        return len(infos)

    def is_finished(self, run_id: str) -> bool:
        return self.storage.exists(self.processed_run_uri(run_id))

    def finish(self, manifest: RunManifest) -> None:
        """Advance the processed files, then clear the pending manifest."""
        self.storage.write_text(self.processed_run_uri(manifest.run_id), manifest.to_json())
        self.storage.delete(self.pending_uri)

    def registered(self) -> dict:
        """The catalog record (catalog/registered.py); empty when there is none yet."""
        return json.loads(self.storage.read_text(self.registered_uri)) if self.storage.exists(self.registered_uri) else {}

    def record_registered(self, record: dict) -> None:
        self.storage.write_text(self.registered_uri, json.dumps(record, sort_keys=True))

    def prune_duplicates(self, before: datetime) -> None:
        """Forget the duplicates dropped by runs that started before ``before``: the files are named
        by their run (layout.data_file_name)."""
        for info in self.storage.list_files(self.duplicates_uri):
            if written_before(info.uri, f"{before:{RUN_ID_TIME}}"):
                self.storage.delete(info.uri)



def require_known_source(storage: LakeStorage, layout: LakeLayout) -> None:
    """Refuses a source the lake does not have (no folder of tables, no run processed), naming those it has: a
    command on a mistyped id would find nothing and report success. (A state folder alone is no proof: a lock or a
    suppression list on a mistyped id makes one.)"""
    tables, states = layout.source_roots
    processed = [name for name in storage.list_folders(states) if storage.exists(StateLayout(join(states, name)).processed_uri)]
    known = sorted({*storage.list_folders(tables), *processed})
    if layout.source_id not in known:
        raise InvalidSettings(f"the lake has no source {layout.source_id!r} (it has "
                              f"{', '.join(known) if known else 'none'}): pass the --source-id its syncs use")
