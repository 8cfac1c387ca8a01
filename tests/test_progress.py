"""Progress lines: a long stage says what it does, how far Spark has got while it runs, and how it ended."""
import re
import threading
import time

import pytest

from segment_lake.progress import Progress

pytestmark = pytest.mark.fast


def test_a_stage_says_what_it_does_how_far_it_got_and_its_time():
    lines = []
    progress = Progress(lines.append, tasks=lambda: (3, 8), heartbeat_seconds=0.05)
    with progress.stage("parse", "reading 2 files") as done:
        time.sleep(0.3)
        done("19 lines, 7 rejected")
    assert lines[0] == "parse: reading 2 files"
    assert set(lines[1:-1]) == {"parse: 3 of 8 tasks done"} and len(lines) >= 3
    seconds = float(re.fullmatch(r"parse: 19 lines, 7 rejected \((\d+\.\d)s\)", lines[-1]).group(1))
    assert seconds >= 0.3
    # one thread reports for every stage, and ends with the run
    with progress.stage("write") as done:
        time.sleep(0.2)
        done("3 tables")
    assert "write: 3 of 8 tasks done" in lines
    reporting = [t for t in threading.enumerate() if t.name == "segment-lake-progress"]
    assert len(reporting) == 1
    progress.close()
    reporting[0].join(timeout=5)
    assert not reporting[0].is_alive()


def test_an_idle_spark_and_a_quick_stage_add_no_lines():
    lines = []
    with Progress(lines.append, tasks=lambda: None, heartbeat_seconds=0.01).stage("dedup") as done:
        time.sleep(0.1)
        done("5 events to land, 0 duplicates")
    assert len(lines) == 1 and lines[0].startswith("dedup: 5 events to land, 0 duplicates (")


def test_a_failed_stage_leaves_the_telling_to_its_error():
    lines = []
    with pytest.raises(OSError):
        with Progress(lines.append).stage("write", "writing 3 tables"):
            raise OSError("disk full")
    assert lines == ["write: writing 3 tables"]
