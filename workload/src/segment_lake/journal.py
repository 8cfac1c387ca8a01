"""One journaled operation: the shape of every change to a lake that must never be left half done.

    plan -> stage -> journal -> switch -> report -> clean up

The operation finds what changes (plan) and writes the new files beside the old (stage); then it writes its journal
(``state/<source>/<name>.json``): the point of no return, naming every switch. ``finish`` carries the switches out,
each step found done or not from the files and the catalog so that it can run again after a crash, writes the
report, and removes the journal and the stage (``<name>-stage/``). Without a journal, a stage is what one that died
before its journal left, and is removed.

Deletion (deletion.py) and compaction (compaction.py) are such operations, each with a typed journal and a typed
report that the CLI formats. Two other switches keep shapes of their own, for a reason each:
- a sync's run is journaled by its manifest (state.py), written before anything is staged: a crashed run is redone
  from its input (its own files replaced), not switched from a plan;
- the landed index's generation (landed_index.py) is switched by one write, its pointer file, which stays: the
  pointer is both journal and switch, and the run folders it merged are removed after it (after a crash, by the
  next compaction). As a journaled operation it would add a journal write, and either copy the index out of a
  stage or keep a stage that is never removed.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Generic, Protocol, TypeVar

from .storage import LakeStorage


class Record:
    """A journal or a report: a dataclass kept as JSON."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"


class Report(Protocol):
    def to_json(self) -> str: ...

    def summary(self) -> list[str]: ...  # what the finished operation says


def summary(operation: str, done: str, left: list[str], why_left: str, then: str) -> list[str]:
    """What a finished operation says: what it did; and what it left as it was (``why_left`` of ``{n}`` such, with an
    example), and what to do about it."""
    lines = [f"{operation}: {done}"]
    if left:
        lines.append(f"{operation}: {why_left.format(n=len(left))} (e.g. {left[0]}): {then}")
    return lines


J = TypeVar("J", bound=Record)
R = TypeVar("R", bound=Report)


@dataclass(frozen=True)
class JournaledOperation(Generic[J, R]):
    journal_uri: str  # the point of no return (StateLayout)
    stage_uri: str  # its new files, beside the old
    read: Callable[[str], J]  # the journal from its JSON
    switch: Callable[[J], R]  # carries out the journal's switches (again), and returns the report
    report_uri: Callable[[J], str]


def begin(operation: JournaledOperation[J, R], storage: LakeStorage, journal: J, check: Callable[[], None],
          progress: Callable[[str], None]) -> R:
    """Writes the journal of a staged operation (the lock still held: ``check``), and finishes it."""
    check()  # the lake changes from here on
    storage.write_text(operation.journal_uri, journal.to_json())
    return finish(operation, storage, progress)


def finish(operation: JournaledOperation[J, R], storage: LakeStorage, progress: Callable[[str], None]) -> R | None:
    """Finishes the source's journaled operation of this kind; its report, or None when none was journaled."""
    journal_uri, stage_uri = operation.journal_uri, operation.stage_uri
    if not storage.exists(journal_uri):
        storage.delete(stage_uri, recursive=True)
        return None
    journal = operation.read(storage.read_text(journal_uri))
    report = operation.switch(journal)
    storage.write_text(operation.report_uri(journal), report.to_json())
    storage.delete(journal_uri)
    storage.delete(stage_uri, recursive=True)
    for line in report.summary():
        progress(line)
    return report

