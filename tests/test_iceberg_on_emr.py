"""An Iceberg source on EMR (`SegmentSource(table_format="iceberg")`): its syncs and replays ask for Iceberg, every
cluster of the lake (always-on, transient, replay) runs EMR's Iceberg, the workload opens Spark's session catalog over
Iceberg's GlueCatalog, and the node role may make the calls Iceberg makes there.

Iceberg's Glue path cannot run here (no PyPI package pairs Iceberg 1.10 with the AWS SDK v2 its GlueCatalog needs), so
its calls are listed from Iceberg 1.10.2's classes (`GlueTableOperations`: GetTable to load, CreateTable for a new table,
UpdateTable with the version id it read for each commit; no DeleteTable without a lock manager) and from Hadoop's file
system under `HadoopFileIO` (EMRFS: metadata files put, manifests and footers read, a listing to find a file's status),
then judged against the synthesized policies. What runs on EMR is unproven here: docs/lake-format.md says so."""
import json

import pytest
from aws_calls import ACCOUNT, REGION
from iam_evaluator import Request, allowed
from role_policies import permissions
from stack_helpers import resources, small_lake_props, synth_small_lake

pytestmark = pytest.mark.constructs

NODE_ROLE = "SegmentEMRInstanceProfileRole"


def iceberg_source(**options):
    from segment_data_lake import SegmentSource

    return SegmentSource(source_id="src0001", slug="web", table_format="iceberg", **options)


@pytest.fixture(scope="module")
def iceberg_lake() -> dict:
    return synth_small_lake("iceberg", sources=[iceberg_source()])


def classifications(configurations: list[dict]) -> dict[str, dict]:
    return {conf["Classification"]: conf.get("Properties", {}) for conf in configurations}


def test_an_iceberg_sources_syncs_replays_and_compactions_ask_for_iceberg():
    from segment_data_lake import SegmentSource
    from segment_data_lake.steps import step_command
    from segment_lake.cli import parser

    window = {"replay": ["--from", "2024-01-01", "--to", "2024-01-02"], "sync": [], "compact": []}
    for command in ("sync", "replay", "compact"):
        for source, expected in ((iceberg_source(), "iceberg"), (SegmentSource("src0001", "web"), "parquet")):
            argv = step_command(command, source, "b", "us-east-1") + window[command]
            assert parser().parse_args(argv).table_format == expected
    # hidden hours: the commands that write new tables say how to partition them
    hidden = iceberg_source(iceberg_partitioning="hours")
    for command in ("sync", "replay", "compact"):
        argv = step_command(command, hidden, "b", "us-east-1") + window[command]
        assert getattr(parser().parse_args(argv), "iceberg_partitioning", None) == (
            None if command == "compact" else "hours"), command


def test_every_cluster_of_an_iceberg_lake_runs_emrs_iceberg(iceberg_lake):
    [cluster] = resources(iceberg_lake, "aws_emr_cluster").values()
    assert classifications(json.loads(cluster["configurations_json"]))["iceberg-defaults"] == {"iceberg.enabled": "true"}
    transient = synth_small_lake("iceberg-transient", sources=[iceberg_source()], cluster_mode="transient")
    requests = [json.loads(schedule["target"]["input"]) for schedule in
                resources(transient, "aws_scheduler_schedule").values()]
    assert requests and all("iceberg-defaults" in classifications(r["Configurations"]) for r in requests)
    parquet = synth_small_lake("parquet")
    [plain] = resources(parquet, "aws_emr_cluster").values()
    assert "iceberg-defaults" not in classifications(json.loads(plain["configurations_json"]))


@pytest.mark.parametrize("options,props,message", [
    ({"partition_projection": True}, {}, "partition_projection is for the Parquet layout's Glue partitions"),
    ({}, {"sync_runner": "segment"}, "sync_runner is 'segment', whose syncs write Segment's Parquet layout only"),
    ({"iceberg_partitioning": "minutes"}, {}, "unknown Iceberg partitioning 'minutes': use one of keys, hours"),
    ({"iceberg_partitioning": "hours", "date_partition": "day"}, {},
     "date_partition='day' writes a file a day: use 'day_hour' or 'year_month_day_hour'"),
])
def test_what_an_iceberg_source_cannot_have_is_refused_at_construction(options, props, message):
    from segment_data_lake.validation import DataLakeConfigError

    with pytest.raises(DataLakeConfigError, match=message):
        small_lake_props(sources=[iceberg_source(**options)], **props)


def test_hidden_hours_are_for_iceberg_sources():
    from segment_data_lake import SegmentSource
    from segment_data_lake.validation import DataLakeConfigError

    with pytest.raises(DataLakeConfigError, match="iceberg_partitioning='hours' partitions Iceberg tables"):
        SegmentSource("src0001", "web", iceberg_partitioning="hours")


def test_the_workload_opens_icebergs_glue_catalog_through_emrfs():
    from segment_lake.iceberg_tables import session_settings

    glue, local = session_settings(embedded=False), session_settings(embedded=True)
    assert glue["spark.sql.catalog.spark_catalog"] == local["spark.sql.catalog.spark_catalog"] == (
        "org.apache.iceberg.spark.SparkSessionCatalog")
    assert glue["spark.sql.catalog.spark_catalog.catalog-impl"] == "org.apache.iceberg.aws.glue.GlueCatalog"
    assert local["spark.sql.catalog.spark_catalog.type"] == "hive"
    assert "spark.sql.catalog.spark_catalog.type" not in glue  # a catalog type and catalog-impl exclude each other
    # the security configuration's encryption applies to the metadata files too
    assert glue["spark.sql.catalog.spark_catalog.io-impl"] == "org.apache.iceberg.hadoop.HadoopFileIO"
    assert not any("metastore" in key or "datanucleus" in key for key in glue)  # the embedded metastore's only


def test_the_node_role_may_make_icebergs_glue_and_s3_calls(iceberg_lake):
    bucket = "arn:aws:s3:::acme-lake"
    table = "segment-data/data/src0001/segment_type=identify"
    glue = [f"arn:aws:glue:{REGION}:{ACCOUNT}:{part}" for part in ("catalog", "database/web", "table/web/identify")]
    [key] = [name for name in resources(iceberg_lake, "aws_kms_key") if "ClusterKey" in name]
    calls = [Request(action, resource) for action in ("glue:GetTable", "glue:CreateTable", "glue:UpdateTable")
             for resource in glue]
    calls += [Request("s3:PutObject", f"{bucket}/{table}/metadata/{name}") for name in (
        "00001-0b6f.metadata.json", "snap-1-0b6f.avro", "0b6f-m0.avro")]
    calls += [Request("s3:GetObject", f"{bucket}/{table}/{name}") for name in (
        "metadata/00001-0b6f.metadata.json", "metadata/0b6f-m0.avro", "day=2024-01-02/hr=03/part-r.parquet")]
    # a deletion's and a compaction's: files written, expired and orphaned files removed (a listing of the table's
    # folder finds the orphans), the record of the source's Iceberg tables read
    calls += [Request("s3:PutObject", f"{bucket}/{table}/day=2024-01-02/hr=03/00000-1-0b6f.parquet")]
    calls += [Request("s3:DeleteObject", f"{bucket}/{table}/{name}") for name in (
        "day=2024-01-02/hr=03/part-r.parquet", "metadata/snap-1-0b6f.avro", "metadata/00001-0b6f.metadata.json")]
    calls += [Request("s3:GetObject", f"{bucket}/segment-data/state/src0001/iceberg-tables.json"),
              Request("s3:ListBucket", bucket, {"s3:prefix": f"{table}/"})]
    calls += [Request("s3:ListBucket", bucket, {"s3:prefix": f"{table}/metadata/"}),
              Request("kms:GenerateDataKey", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{key}"),
              Request("kms:Decrypt", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{key}")]
    documents = permissions(iceberg_lake, NODE_ROLE)
    refused = [(c.action, c.resource) for c in calls if not allowed(documents, c)]
    assert not refused, refused
    # and no more than the lake: another source's tables, another database
    assert not allowed(documents, Request("glue:UpdateTable", f"arn:aws:glue:{REGION}:{ACCOUNT}:table/finance/pay"))
    assert not allowed(documents, Request("s3:PutObject", f"{bucket}/segment-logs/src0001/1/a.json"))
