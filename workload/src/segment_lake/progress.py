"""Progress lines of a sync: what a long stage is doing when it starts, how far Spark has got every
30 seconds while a stage runs, and each stage's outcome with its time when it ends.

    segment-lake: [   4.3s] parse: reading 8 files
    segment-lake: [  34.3s] parse: 41 of 64 tasks done
    segment-lake: [  41.5s] parse: 1000000 lines, 987 rejected (37.2s)
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from . import interrupt

Sink = Callable[[str], None]
Tasks = Callable[[], "tuple[int, int] | None"]  # (done, total) of the running Spark stages, None when idle

HEARTBEAT_SECONDS = 30.0
_STARTED = time.monotonic()


def stderr_sink(line: str) -> None:
    """On stderr, with the seconds since the process started (JVM start-up included)."""
    print(f"segment-lake: [{time.monotonic() - _STARTED:6.1f}s] {line}", file=sys.stderr, flush=True)


def count(number: int, noun: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def spark_tasks(spark) -> Tasks:
    """Reads Spark's status tracker: the tasks done and in all of the running stages."""
    tracker = spark.sparkContext.statusTracker()

    def tasks():
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done, total = done + info.numCompletedTasks, total + info.numTasks
        return (done, total) if total else None
    return tasks


class Outcome:
    """What a stage says when it ends; set by the stage's code."""

    def __init__(self) -> None:
        self.text = ""

    def __call__(self, text: str) -> None:
        self.text = text


class Progress:
    """Announces stages to a ``sink``; while one runs, one background thread (for the whole run: each
    thread that calls into Spark's JVM holds a connection to it) reports Spark's ``tasks``."""

    def __init__(self, sink: Sink = stderr_sink, tasks: Tasks | None = None,
                 heartbeat_seconds: float = HEARTBEAT_SECONDS) -> None:
        self.sink = sink
        self.tasks = tasks
        self.heartbeat_seconds = heartbeat_seconds
        self._changed = threading.Condition()
        self._stage: tuple[str, float] | None = None  # a new tuple per stage: compared by identity
        self._closed = False
        self._beat_thread: threading.Thread | None = None

    def __call__(self, line: str) -> None:
        self.sink(line)

    @contextmanager
    def stage(self, name: str, doing: str | None = None) -> Iterator[Outcome]:
        """``with progress.stage("parse", "reading 8 files") as done: ...; done("8 lines")``. A stage that
        fails says nothing more: the error says it."""
        interrupt.check("it stopped before " + name)
        started = time.monotonic()
        if doing:
            self.sink(f"{name}: {doing}")
        outcome = Outcome()
        self._switch((name, started))
        if self.tasks is not None and self._beat_thread is None:
            self._beat_thread = threading.Thread(target=self._beat, daemon=True, name="segment-lake-progress")
            self._beat_thread.start()
        try:
            yield outcome
        finally:
            self._switch(None)
        self.sink(f"{name}: {outcome.text} ({time.monotonic() - started:.1f}s)")

    def close(self) -> None:
        """Ends the background thread."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _switch(self, stage: tuple[str, float] | None) -> None:
        with self._changed:
            self._stage = stage
            self._changed.notify_all()

    def _beat(self) -> None:
        while True:
            with self._changed:
                current = self._stage
                if self._changed.wait_for(lambda current=current: self._closed or self._stage is not current,
                                          timeout=None if current is None else self.heartbeat_seconds):
                    if self._closed:
                        return
                    continue  # a stage began or ended: time the next line from now
            try:
                tasks = self.tasks()
            except Exception:  # the session is going down: the stage itself reports that
                return
            with self._changed:  # no line once the stage has ended
                if tasks and self._stage is current:
                    self.sink(f"{current[0]}: {tasks[0]} of {count(tasks[1], 'task')} done")
