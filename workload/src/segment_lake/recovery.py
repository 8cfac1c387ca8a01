"""What a source's sync state is, and the way out of every state a sync can leave behind
(``segment-lake state show|reset``)."""
from __future__ import annotations

from collections.abc import Callable

from . import iceberg_tables
from .catalog import Catalog
from .compaction import finish_unfinished_compaction
from .deletion import finish_unfinished_deletion
from .errors import InvalidSettings
from .layout import LakeLayout, written_by
from .state import SourceState
from .storage import LakeStorage


def finish_unfinished(storage: LakeStorage, layout: LakeLayout, progress: Callable[[str], None] = print,
                      check: Callable[[], None] = lambda: None, catalog: Catalog | None = None) -> None:
    """Finishes the journaled operation a crash stopped (journal.py): a deletion, or given the catalog (whose
    locations a compaction switches) a deletion then a compaction. Every command that changes the source's files
    calls it first, holding the source's lock (``check``)."""
    if catalog is None:
        finish_unfinished_deletion(storage, layout, progress, check)
    else:
        finish_unfinished_compaction(storage, catalog, layout, progress, check)


def forget_attempt(storage: LakeStorage, layout: LakeLayout, run_id: str, redone: bool = True) -> None:
    """Removes what an attempt of ``run_id`` published: its files in the tables and in the duplicates' record
    (named by the run), and its landed ids, discards and rejected lines (folders of the run). An Iceberg table that
    committed the run keeps its files (its snapshot names them) when the run is ``redone``, which then leaves that
    table as it is; a run dropped for good is refused then: a new run would land those rows again."""
    committed = iceberg_tables.tables_committed_by(storage, layout, run_id)
    if committed and not redone:
        raise InvalidSettings(f"run {run_id} already committed Iceberg table {committed[0]}"
                              f"{f' and {len(committed) - 1} more' if len(committed) > 1 else ''}: dropping it would "
                              "land their rows twice; let the next sync redo the run instead")
    kept = [f"/{layout.table(name).rstrip('/').rsplit('/', 1)[1]}/" for name in committed]  # segment_type=<name>
    outputs = layout.run_outputs(run_id)
    for root in outputs.shared_folders:
        for info in storage.list_files(root):
            if written_by(info.uri, run_id) and not any(folder in info.uri for folder in kept):
                storage.delete(info.uri)
    for folder in (*outputs.own_folders, outputs.stage):
        storage.delete(folder, recursive=True)


def describe(state: SourceState) -> list[str]:
    """The source's state in a few lines: the unfinished run (if any) and what finished runs processed."""
    runs, last = state.finished_runs()
    lines = [f"finished runs: {runs}" + (f", the last {last}" if last else ""),
             f"files processed: {len(state.processed_files())}"]
    if state.storage.exists(state.deletion_uri):
        lines.append("unfinished deletion: its files are staged; the next sync or delete-users finishes it")
    if state.storage.exists(state.compaction_uri):
        lines.append("unfinished compaction: its merged files are staged; the next sync or compact finishes it")
    pending = state.pending()
    if pending is None:
        lines.append("unfinished run: none")
    else:
        size = sum(pending.sizes) / 1e6 if pending.sizes else None
        lines.append(f"unfinished run: {pending.run_id}, started {pending.start_time}, {len(pending.files)} files"
                     + (f" ({size:.1f} MB)" if size is not None else "")
                     + ": the next sync redoes it; `segment-lake state reset` drops it instead")
    return lines


def reset(storage: LakeStorage, layout: LakeLayout, state: SourceState) -> str | None:
    """Drops the unfinished run: removes what its attempts published, then its manifest, so the next sync
    starts a new run over every file no finished run processed (this run's files included). Returns its id."""
    finish_unfinished(storage, layout)  # a deletion's journal may name files of the run: switch them before they go
    pending = state.pending()
    if pending is None:
        return None
    if not state.is_finished(pending.run_id):  # a finished run's data stays: only its manifest was left
        forget_attempt(storage, layout, pending.run_id, redone=False)
    storage.delete(state.pending_uri)
    return pending.run_id
