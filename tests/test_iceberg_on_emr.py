"""An Iceberg source on EMR (`SegmentSource(table_format="iceberg")`): its syncs and replays ask for Iceberg, every
cluster of the lake (always-on, transient, replay) runs EMR's Iceberg, the workload opens Spark's session catalog over
Iceberg's GlueCatalog, and the node role may make every call Iceberg and the commands make there: the S3 and Glue
requests of the nodes' commands on an Iceberg source, run against the local endpoint with Iceberg's own Glue catalog
(tests/test_iceberg_in_glue.py), judged against the synthesized policies. That run is Iceberg 1.9.0 over Hadoop's
s3a, where EMR runs its 1.10 over EMRFS (docs/lake-format.md says what that leaves unproven)."""
import json
import os
from pathlib import Path

import pytest
from aws_calls import ACCOUNT, REGION
from conftest import ICEBERG_IN_GLUE_MODULE, REPO
from iam_evaluator import Request, allowed
from iceberg_readers import TESTS_TABLE_FORMAT
from nested_pytest import run_modules
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


# Iceberg's Glue catalog with the AWS SDK v2, as make test's set-up writes it (the Makefile's ICEBERG_GLUE)
GLUE_JAR = os.environ.get("SEGMENT_LAKE_ICEBERG_GLUE_JAR") or str(REPO / ".cache/jars/iceberg-glue-runtime-1.9.0.jar")


@pytest.mark.spark
@pytest.mark.aws
def test_the_node_role_may_make_every_call_of_an_iceberg_sources_commands(iceberg_lake, tmp_path):
    assert Path(GLUE_JAR).is_file(), f"{GLUE_JAR} is missing: run `make setup`"
    run_modules([Path(__file__).with_name(ICEBERG_IN_GLUE_MODULE)], tmp_path,
                {TESTS_TABLE_FORMAT: "iceberg-glue", "SEGMENT_LAKE_ICEBERG_JARS": GLUE_JAR})
    commands = json.loads((tmp_path / "calls.json").read_text())
    documents = permissions(iceberg_lake, NODE_ROLE)
    for command in commands:
        assert command["calls"], f"{command['name']} made no call"
        refused = sorted({(action, resource, json.dumps(context)) for action, resource, context in command["calls"]
                          if not allowed(documents, Request(action, resource, context))})
        assert not refused, f"{command['name']}: the node role lacks {refused[:5]}"
    used = {action for command in commands for action, _, _ in command["calls"]}
    # Iceberg's own catalog calls (GlueTableOperations: load, create, commit with the version id it read), and the
    # files a deletion and a compaction rewrite and expire
    assert {"glue:GetTable", "glue:CreateTable", "glue:UpdateTable", "s3:PutObject", "s3:DeleteObject"} <= used, used
    # partitions only for the records beside the tables and the runs' reports, which stay Parquet: an events table's
    # partitions are Iceberg's metadata
    partitioned = {resource.rsplit("/", 1)[1] for command in commands for action, resource, _ in command["calls"]
                   if "Partition" in action and ":table/" in resource}
    assert partitioned <= {"segment_discards", "segment_duplicates", "sync_reports"}, partitioned
    # on EMR, EMRFS encrypts and decrypts each file with the cluster's key (the local endpoint has no KMS)
    [key] = [name for name in resources(iceberg_lake, "aws_kms_key") if "ClusterKey" in name]
    for action in ("kms:GenerateDataKey", "kms:Decrypt"):
        assert allowed(documents, Request(action, f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{key}")), action
    # and no more than the lake: another source's tables, another database
    assert not allowed(documents, Request("glue:UpdateTable", f"arn:aws:glue:{REGION}:{ACCOUNT}:table/finance/pay"))
    assert not allowed(documents, Request("s3:PutObject", "arn:aws:s3:::acme-lake/segment-logs/src0001/1/a.json"))
