"""SIGINT (Ctrl-C) and SIGTERM during a command. The signal cancels Spark's jobs and sets a flag; the command then
unwinds through its usual failure path (the failed report, the lock released), and ends with one line and the
shell's exit code (128 + the signal). The handler itself never raises: raised inside a call to Spark's JVM, an
exception breaks the connection that the unwinding still needs. A second signal ends the process at once."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

SIGNALS = (signal.SIGINT, signal.SIGTERM)
CANCEL_EVERY_SECONDS = 0.2
ENABLED = False  # set by the command line: a session started elsewhere (a notebook, the tests) keeps its handlers
_received: list[int] = []
_previous: dict[int, object] = {}  # the handlers install() replaced


class Interrupted(Exception):
    """The command was stopped by a signal; ``detail`` says what is left unfinished and what finishes it."""

    code = "interrupted"

    def __init__(self, signum: int, detail: str = "nothing was left half done") -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}: {detail}")
        self.signum, self.detail = signum, detail

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def install(spark) -> None:
    """Handles SIGINT and SIGTERM from now on (pyspark's own SIGINT handler calls the JVM from inside a call to it),
    cancelling ``spark``'s jobs. Only the main thread may install handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handle(signum, _frame):
        if _received:  # asked twice: stop now
            print(f"segment-lake: {signal.Signals(signum).name} again: stopping at once", file=sys.stderr, flush=True)
            os._exit(128 + signum)
        _received.append(signum)
        # from a thread of its own: this thread may be waiting inside a call to the JVM
        threading.Thread(target=_cancel, args=(spark,), daemon=True, name="segment-lake-interrupt").start()

    for signum in SIGNALS:
        _previous.setdefault(signum, signal.signal(signum, handle))


def reset() -> None:
    """The command is over: the handlers it replaced are back, and no signal is remembered (a notebook or a test
    may call the command line again in the same process)."""
    global ENABLED
    for signum, handler in _previous.items():
        signal.signal(signum, handler)
    _previous.clear()
    _received.clear()
    ENABLED = False


def _cancel(spark) -> None:
    """Cancels Spark's jobs, and goes on cancelling those started after the signal (a job the command submits just
    after it would otherwise run to its end) until the command is over (``reset``) or its Spark is stopped."""
    while _received and spark.sparkContext._jsc is not None:
        try:
            spark.sparkContext.cancelAllJobs()
        except Exception:  # noqa: BLE001 - a JVM already going down has no jobs left to cancel
            return
        time.sleep(CANCEL_EVERY_SECONDS)


def received() -> int | None:
    """The signal received, if any."""
    return _received[0] if _received else None


def check(detail: str = "nothing was left half done") -> None:
    """Raises Interrupted once a signal has been received: called where a command may stop cleanly."""
    if _received:
        raise Interrupted(_received[0], detail)
