"""The publish stage: a run's files take the run's names; a redo replaces what a crashed attempt left; on S3 a file
costs one request."""
from datetime import datetime

import pytest
from stage_rows import write_rows

from segment_lake.layout import data_file_name
from segment_lake.parquet_tables import DATA, WrittenFile
from segment_lake.publish import move_files
from segment_lake.storage import HadoopStorage
from segment_lake.uris import join

pytestmark = [pytest.mark.fast, pytest.mark.spark]
KEY = "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"  # the cluster's, on EMR


def test_publish_renames_per_run_and_a_redo_replaces_a_crashed_attempt(spark, tmp_path):
    storage = HadoopStorage(spark)
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



@pytest.mark.aws
def test_publishing_on_s3_costs_one_request_a_file(spark, s3a, aws_endpoint):
    """A server-side copy each (no existence or folder probe: S3 has no folders), encrypted as the staged files are
    (on EMR under the cluster's key), then the stage removed with a listing and bulk deletes: at most 2 requests a
    published file, counted at the endpoint."""
    from fault_proxy import FaultProxy

    s3, bucket = s3a("publish-requests"), "publish-requests"
    stage, lake = f"s3a://{bucket}/segment-data/stage/src/run-1", f"s3a://{bucket}/segment-data/data/src"
    written = []
    for index in range(200):  # 200 files over 20 tables and 2 hours
        partition = f"day=2024-01-02/hr=0{index % 2}"
        key = f"segment-data/stage/src/run-1/t{index % 20}/{partition}/part-{index}.parquet"
        s3.put_object(Bucket=bucket, Key=key, Body=b"PAR1", ServerSideEncryption="aws:kms", SSEKMSKeyId=KEY)
        written.append(WrittenFile(DATA, f"t{index % 20}", partition, f"s3a://{bucket}/{key}", 1))
    proxy = FaultProxy(aws_endpoint)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.s3a.bucket.{bucket}.endpoint", proxy.start())
    try:
        storage = HadoopStorage(spark)
        move_files(storage, written, lambda f: join(lake, f.table, f.partition), "run-1", redo=False)
        storage.delete(stage, recursive=True)
    finally:
        conf.unset(f"fs.s3a.bucket.{bucket}.endpoint")
        proxy.stop()
    assert proxy.operations["s3:CopyObject"] == len(written)
    assert sum(proxy.operations.values()) <= 2 * len(written), proxy.operations
    listed = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    keys = sorted(item["Key"] for page in listed for item in page.get("Contents", []))
    files = [key for key in keys if not key.endswith("/")]  # s3a leaves a marker for the emptied stage's parent
    assert len(files) == len(written) and all(key.startswith("segment-data/data/src/") for key in files)
    assert f"segment-data/data/src/t0/day=2024-01-02/hr=00/{data_file_name('run-1', 0)}" in files
    heads = [s3.head_object(Bucket=bucket, Key=key) for key in files[:5]]
    assert {(h["ServerSideEncryption"], h["SSEKMSKeyId"]) for h in heads} == {("aws:kms", KEY)}
