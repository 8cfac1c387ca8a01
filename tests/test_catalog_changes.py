"""The catalog stage: only missing partitions added, in batches; no write when nothing changed; a denied call named
as a permission error."""
import pytest

pytestmark = [pytest.mark.fast, pytest.mark.spark, pytest.mark.aws]


def test_glue_adds_only_missing_partitions_in_batches(glue_client):
    from segment_lake.catalog import TableChange
    from segment_lake.catalog.glue import GlueCatalog

    catalog = GlueCatalog(glue_client)
    assert catalog.ensure_database("batches") is True
    assert catalog.ensure_database("batches") is False
    partitions = [(f"2024-01-{d:02d}", f"{h:02d}") for d in range(1, 12) for h in range(24)]  # 264
    change = TableChange("t", (("a", "bigint"),), ("day", "hr"), tuple(partitions),
                         "s3a://b/segment-data/data/s/segment_type=t")
    catalog.create_table("batches", change)
    calls = []
    original = glue_client.batch_create_partition
    glue_client.batch_create_partition = lambda **kw: calls.append(len(kw["PartitionInputList"])) or original(**kw)
    try:
        assert catalog.add_partitions("batches", change, change.columns) == 264
        assert calls == [100, 100, 64]
        # created first: the 264 Glue has come back as errors and are read back (one call), not created twice
        more = TableChange("t", change.columns, change.keys, (*partitions, ("2024-02-01", "00")), change.location)
        assert catalog.add_partitions("batches", more, change.columns) == 1
        assert calls == [100, 100, 64, 100, 100, 65]
        added = glue_client.get_partition(DatabaseName="batches", TableName="t", PartitionValues=["2024-02-01", "00"])
        assert added["Partition"]["StorageDescriptor"]["Location"] == (
            "s3://b/segment-data/data/s/segment_type=t/day=2024-02-01/hr=00")
    finally:
        glue_client.batch_create_partition = original
    table = glue_client.get_table(DatabaseName="batches", Name="t")["Table"]
    assert table["StorageDescriptor"]["Location"] == "s3://b/segment-data/data/s/segment_type=t"
    # a run that adds a column to a partition that exists gives that partition the table's column list (Hive reads
    # a partition through its own); partitions it did not write keep theirs, their files lack the column
    catalog.register("batches", [TableChange("t", (("a", "bigint"), ("b", "string")), change.keys,
                                             (("2024-01-01", "00"),), change.location)])
    assert catalog.tables_columns("batches", ["t", "u"]) == {"t": [("a", "bigint"), ("b", "string")], "u": None}

    def columns(*values):
        partition = glue_client.get_partition(DatabaseName="batches", TableName="t", PartitionValues=list(values))
        return [(c["Name"], c["Type"]) for c in partition["Partition"]["StorageDescriptor"]["Columns"]]

    assert columns("2024-01-01", "00") == [("a", "bigint"), ("b", "string")]
    assert columns("2024-01-01", "01") == [("a", "bigint")]
    # a compaction's switch of location gives the partition the table's columns too
    catalog.set_partition_locations("batches", "t", change.keys, {("2024-01-01", "01"): "s3a://b/merged/x"})
    assert columns("2024-01-01", "01") == [("a", "bigint"), ("b", "string")]
    assert glue_client.get_partition(DatabaseName="batches", TableName="t", PartitionValues=["2024-01-01", "01"])[
        "Partition"]["StorageDescriptor"]["Location"] == "s3://b/merged/x"



def test_a_denied_catalog_call_is_reported_as_insufficient_permissions(spark, tmp_path):
    import json

    import boto3
    from botocore.stub import Stubber
    from lake_events import write_run1

    from segment_lake.catalog.glue import GlueCatalog
    from segment_lake.settings import SyncSettings
    from segment_lake.sync import Sync

    client = boto3.client("glue", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(client)
    for _ in range(3):  # the run's report (sync_reports), the source's database, the failed run's report again
        stubber.add_client_error("get_database", service_error_code="AccessDeniedException",
                                 service_message="User is not authorized to perform: glue:GetDatabase",
                                 http_status_code=403)
    write_run1(tmp_path / "input", "src1")
    settings = SyncSettings(source_id="src1", input_uri=f"{tmp_path}/input", lake_uri=f"{tmp_path}/lake",
                            glue_database="denied", catalog="glue")
    with stubber, pytest.raises(Exception, match="AccessDeniedException"):
        Sync(spark, settings, GlueCatalog(client), progress=lambda line: None).run()
    [report] = (tmp_path / "lake" / "segment-data" / "reports").rglob("report.json")
    source = json.loads(report.read_text().splitlines()[0])
    assert source["status"] == "failed" and source["error_code"] == "insufficient_permissions"
    assert source["error"] == ("access denied to GetDatabase: User is not authorized to perform: glue:GetDatabase; "
                               "give the EMR instance role this action on this resource")
    assert source["read_count"] == 19  # what the run had counted before it failed



def test_no_catalog_write_when_nothing_changed(spark, glue_client, tmp_path):
    import json

    from segment_lake.catalog.glue import GlueCatalog
    from segment_lake.settings import SyncSettings
    from segment_lake.sync import Sync

    day = tmp_path / "input" / "1704153600000"
    day.mkdir(parents=True)
    line = {"type": "identify", "messageId": "a", "receivedAt": "2024-01-02T05:00:00Z", "traits": {"age": 1}}
    (day / "1.json").write_text(json.dumps(line) + "\n")
    settings = SyncSettings(source_id="quiet", input_uri=str(tmp_path / "input"), lake_uri=str(tmp_path / "lake"),
                            glue_database="quiet", catalog="glue")
    Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()

    writes = []
    watched = ("create_database", "create_table", "update_table", "batch_create_partition", "create_partition")
    originals = {name: getattr(glue_client, name) for name in watched}
    for name in watched:
        setattr(glue_client, name, lambda *a, _name=name, **k: writes.append((_name, k.get("TableName")))
                or originals[_name](*a, **k))
    try:
        (day / "2.json").write_text(json.dumps(dict(line, messageId="b", traits={"age": 2})) + "\n")
        result = Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()
    finally:
        for name, original in originals.items():
            setattr(glue_client, name, original)
    assert result.row_count == 1
    # same columns, same partition: Glue is only read, but for the new run's report
    assert writes == [("batch_create_partition", "sync_reports")]



def test_glue_tells_an_iceberg_table_by_its_type_and_gives_its_data_columns(glue_client):
    """As Iceberg's GlueCatalog leaves a table: table_type ICEBERG, the partition keys among its columns."""
    from segment_lake.catalog.glue import GlueCatalog

    catalog = GlueCatalog(glue_client, date_layout=(("day", "yyyy-MM-dd"), ("hr", "HH")))
    catalog.ensure_database("formats")
    glue_client.create_table(DatabaseName="formats", TableInput={
        "Name": "iceberg_t", "TableType": "EXTERNAL_TABLE", "Parameters": {
            "table_type": "ICEBERG", "metadata_location": "s3://b/t/metadata/00001-a.metadata.json"},
        "StorageDescriptor": {"Location": "s3://b/t", "Columns": [
            {"Name": "a", "Type": "bigint"}, {"Name": "day", "Type": "string"}, {"Name": "hr", "Type": "string"}]}})
    glue_client.create_table(DatabaseName="formats", TableInput={
        "Name": "hive_t", "TableType": "EXTERNAL_TABLE", "PartitionKeys": [{"Name": "day", "Type": "string"}],
        "StorageDescriptor": {"Location": "s3://b/h", "Columns": [{"Name": "a", "Type": "bigint"}]}})
    found = catalog.describe_tables("formats", ["iceberg_t", "hive_t"])
    assert (found["iceberg_t"].table_format, found["iceberg_t"].columns) == ("iceberg", [("a", "bigint")])
    assert (found["hive_t"].table_format, found["hive_t"].columns) == ("parquet", [("a", "bigint")])
