"""How a command ends: its exit code, with one last line for a failure (naming what failed; the report has the
rest) or an interrupt (saying what the next run does). Light on purpose: the command line imports it before it knows
whether the command starts Spark."""
from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable

from . import interrupt
from .errors import SparkDied, classify


def outcome(command: Callable[[], int]) -> int:
    """Runs a command to its exit code: a failure ends in one line naming what failed (the report has the rest), an
    interrupt in the line that says what the next run does; the Spark session the command started stops first."""
    interrupt.ENABLED = True  # a signal stops the command before its next change to the lake
    session = sys.modules.get("segment_lake.session")  # imported by a command only when it starts Spark
    started = session.started_sessions() if session else 0
    line, jvm_alive = None, True
    try:
        code = command()
    except Exception as error:
        if interrupt.received():
            stopped = error if isinstance(error, interrupt.Interrupted) else interrupt.Interrupted(
                interrupt.received(), "what it began, the next run of the command (or a sync) finishes or undoes")
            code, line = stopped.exit_code, f"segment-lake: {stopped}"
        else:
            kind, message = classify(error)
            code, line = 1, f"segment-lake: error ({kind}): {message}"
        jvm_alive = not isinstance(error, SparkDied)
    except KeyboardInterrupt:  # before Spark started (and the handlers with it)
        code, line = 130, "segment-lake: interrupted by SIGINT: nothing was begun"
    session = sys.modules.get("segment_lake.session")
    if jvm_alive and session:  # a JVM that died has nothing left to stop
        session.stop_started_sessions(since=started)
    interrupt.reset()
    _quiet_after_the_end()
    if line:
        print(line, file=sys.stderr)
    return code


def _quiet_after_the_end() -> None:
    """The command's last line is its verdict: what py4j's threads and objects say about a JVM that is gone, as the
    interpreter ends, is not printed after it."""
    quiet = logging.getLogger("py4j")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    sys.unraisablehook = threading.excepthook = lambda *_: None
