"""The publish stage: a run's files take the run's names; a redo replaces what a crashed attempt left."""
from datetime import datetime

import pytest
from stage_rows import write_rows

from segment_lake.publish import move_files
from segment_lake.storage import LakeStorage, join
from segment_lake.write import DATA

pytestmark = [pytest.mark.fast, pytest.mark.spark]


def test_publish_renames_per_run_and_a_redo_replaces_a_crashed_attempt(spark, tmp_path):
    storage = LakeStorage(spark)
    rows = [("t", "2024-01-02", f"m{i}", datetime(2024, 1, 2), {"n": f"i{i}"}, []) for i in range(10)]
    target = f"file://{tmp_path}/table"
    for attempt in range(2):
        written, _ = write_rows(spark, tmp_path / f"attempt{attempt}", rows, {"t": [("n", "bigint")]}, max_records_per_file=3)
        written = [f for f in written if f.kind == DATA]
        if attempt == 1:
            written = written[:2]  # the redo writes fewer files than the crashed attempt left
        move_files(storage, written, lambda f: join(target, f.partition), "run-1", redo=attempt == 1)
    names = sorted(f.uri.rsplit("/", 1)[-1] for f in storage.list_files(target))
    assert names == [f"part-run-1-{i:05d}.snappy.parquet" for i in range(2)]
    assert spark.read.parquet(target).count() == sum(f.rows for f in written)

