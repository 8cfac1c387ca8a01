"""One run per source: the lock is taken atomically, refused while held, renewed, and taken over once expired,
on a local lake (flock) and on S3 (conditional writes, against the local endpoint)."""
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from lake_events import RUN1_COUNTS, write_run1
from sync_harness import Lake, make_catalog
from test_sync_crash import Crash, crash_after_data_written

from segment_lake.lock import LockLost, SourceBusy, SourceLock, lock_store, source_lock
from segment_lake.state import SourceState
from segment_lake.sync import Sync

pytestmark = [pytest.mark.spark, pytest.mark.aws]

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["local", "s3"])
def lock_uri(request, tmp_path):
    if request.param == "local":
        return f"file://{tmp_path}/state/lock.json", None
    endpoint = request.getfixturevalue("aws_endpoint")
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="lock-bucket")
    return "s3a://lock-bucket/segment-data/state/src1/lock.json", endpoint


def test_one_holder_at_a_time_renewed_and_taken_over_once_expired(lock_uri):
    uri, endpoint = lock_uri
    first = SourceLock(lock_store(uri, endpoint), "src1", "host-a pid 1", seconds=600, run_id="run-a")
    second = SourceLock(lock_store(uri, endpoint), "src1", "host-b pid 2", seconds=600, run_id="run-b")
    assert first.acquire(T0) is None
    with pytest.raises(SourceBusy) as refused:
        second.acquire(T0 + timedelta(seconds=599))
    assert str(refused.value).startswith("source src1 is being synced by host-a pid 1 (run run-a, since 2024-05-01T12:00:00")
    assert "its lock expires at 2024-05-01T12:10:00+00:00" in str(refused.value)
    assert first.renew(T0 + timedelta(seconds=500))  # now held until 12:18:20
    with pytest.raises(SourceBusy):
        second.acquire(T0 + timedelta(seconds=700))
    # the first run is killed (no renewal, no release): once expired, the next run takes over
    assert second.acquire(T0 + timedelta(seconds=1101)) == "host-a pid 1 (run run-a, expired 2024-05-01T12:18:20+00:00)"
    assert not first.renew(T0 + timedelta(seconds=1102)) and first.lost
    with pytest.raises(LockLost, match="this run lost the lock of source src1"):
        first.check()
    first.release()  # a lost lock is not the first's to remove
    assert json.loads(second.store.read()[0])["holder"] == "host-b pid 2"
    second.release()
    assert second.store.read() is None
    other_source = SourceLock(lock_store(uri.replace("src1", "src2"), endpoint), "src2", "host-c", seconds=600)
    assert other_source.acquire(T0) is None  # another source's lock is another object
    other_source.release()


@pytest.mark.timing
def test_a_run_told_to_wait_takes_the_lock_when_the_holder_is_gone_and_refuses_after_its_wait(tmp_path):
    uri = f"file://{tmp_path}/state/lock.json"
    killed = SourceLock(lock_store(uri), "src1", "host-a pid 1", seconds=2, run_id="run-a")
    assert killed.acquire() is None  # and never renewed nor released: it expires in 2 s
    with pytest.raises(SourceBusy), SourceLock(lock_store(uri), "src1", "host-b", seconds=600).held():
        pass
    started = time.monotonic()
    patient = SourceLock(lock_store(uri), "src1", "host-c", seconds=600, wait_seconds=4)
    with patient.held() as taken_over:
        assert taken_over.startswith("host-a pid 1 (run run-a, expired ")
        assert 2 <= time.monotonic() - started < 10
        started = time.monotonic()
        with pytest.raises(SourceBusy, match="being synced by host-c"), SourceLock(
                lock_store(uri), "src1", "host-d", seconds=600, wait_seconds=1).held():
            pass
        assert time.monotonic() - started >= 1


def test_a_sync_refuses_while_another_holds_the_source_and_other_sources_go_on(spark, tmp_path):
    lakes = {source: Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                          f"file://{tmp_path}/input/segment-logs/{source}", source, f"lock_{source}")
             for source in ("src1", "src2")}
    for source in lakes:
        write_run1(tmp_path / "input", source)
    holder = source_lock(spark, lakes["src1"].layout)
    holder.holder, holder.run_id = "laptop pid 42", "20240501T120000Z-manual1"
    holder.acquire()
    with pytest.raises(SourceBusy, match="source src1 is being synced by laptop pid 42 .run 20240501T120000Z-manual1"):
        lakes["src1"].sync()
    assert lakes["src1"].storage.list_files(lakes["src1"].layout.reports) == []  # refused before anything
    assert SourceState(lakes["src1"].storage, lakes["src1"].layout.state).pending() is None
    side = lakes["src2"].sync()  # side by side
    assert {k: getattr(side, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    holder.release()
    last = lakes["src1"].sync()
    assert {k: getattr(last, k) for k in RUN1_COUNTS} == RUN1_COUNTS


def test_a_killed_runs_lock_expires_and_the_next_sync_redoes_its_work(spark, tmp_path):
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input/segment-logs/src1", "src1", "lock_killed")
    write_run1(tmp_path / "input", "src1")
    with pytest.raises(Crash):
        lake.sync(crash_after_data_written(lake))
    # as a SIGKILL would leave it: the pending run, and a lock nobody renews or releases
    stale = source_lock(spark, lake.layout)
    stale.holder = "emr-node pid 7"
    stale.acquire(datetime.now(UTC) - timedelta(seconds=stale.seconds + 1))
    said = []
    rerun = Sync(spark, lake.settings(), lake.catalog, progress=said.append).run()
    assert any(line.startswith("lock: took over the expired lock of emr-node pid 7") for line in said), said
    assert {k: getattr(rerun, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    ids = [r["message_id"] for r in lake.rows("track_order_completed")]
    assert len(ids) == len(set(ids))
    assert stale.store.read() is None  # released at the end of the run
