"""Iceberg tables in Glue (`--catalog glue --table-format iceberg`), run here against the local endpoint: the commands
the EMR nodes run for an Iceberg source (two syncs: new tables, then new columns, duplicates and a late file; a
replay, a user deletion, a compaction), in a Spark whose Iceberg keeps its tables with Iceberg's own `GlueCatalog` and the AWS
SDK v2 (Iceberg 1.9.0, `.cache/jars/iceberg-glue-runtime-1.9.0.jar`, which make test builds; EMR runs its own 1.10),
every S3 and Glue request through the counting proxy (tests/fault_proxy.py).

Collected only in the pytest that test_iceberg_on_emr.py starts with SEGMENT_LAKE_TEST_TABLE_FORMAT=iceberg-glue (a
JVM's Iceberg is fixed when it starts). The calls each command made are written to ``calls.json`` in the base
temporary folder, where that test judges them against the node role's synthesized policies."""
import contextlib
import io
import json
import os

import pytest
from aws_calls import REGION, request_calls
from fault_proxy import FaultProxy
from lake_events import RUN1_COUNTS, RUN2_COUNTS, write_run1, write_run2

from segment_lake import cli

pytestmark = [pytest.mark.spark, pytest.mark.aws]

BUCKET, SOURCE, DATABASE = "acme-lake", "src0001", "web"  # stack_helpers.small_lake_props's lake and source
LAKE = ["--lake", f"s3a://{BUCKET}", "--source-id", SOURCE]
CATALOG = ["--source-slug", DATABASE, "--catalog", "glue", "--aws-region", REGION]
SYNC = ["--input", f"s3a://{BUCKET}/segment-logs/{SOURCE}", *LAKE, *CATALOG, "--table-format", "iceberg"]
DELETED_USER = "u2"  # not in the late file's partition, which the compaction merges
# a second file in the hour of run 1's m1 (2024-01-02 03:00) and its table: the compaction's to merge
LATE = {"type": "track", "event": "Order Completed", "messageId": "late1", "userId": "u3",
        "receivedAt": "2024-01-02T03:30:00.000Z"}
# delivered into the first day's folder after the syncs: the replay of that day lands it, and every other event again
# is a duplicate
REPLAYED = {"type": "page", "messageId": "late2", "anonymousId": "anon-9", "name": "Late",
            "receivedAt": "2024-01-02T23:00:00.000Z"}
COMMANDS = [
    ("sync", ["sync", *SYNC]),
    ("sync", ["sync", *SYNC]),  # run 2's files (new columns and duplicates) and the late file
    ("replay", ["replay", *SYNC, "--from", "2024-01-02", "--to", "2024-01-02"]),
    ("delete-users", ["delete-users", *LAKE, "--user-id", DELETED_USER]),
    ("compact", ["compact", *LAKE, *CATALOG, "--older-than", "0"]),
]


@pytest.fixture(scope="session")
def glue_proxy(aws_endpoint):
    """The counting proxy in front of the local endpoint, named as the Glue endpoint before Spark starts (Iceberg's
    Glue client takes it from the session's settings)."""
    proxy = FaultProxy(aws_endpoint)
    endpoint = proxy.start()
    os.environ["SEGMENT_LAKE_GLUE_ENDPOINT"] = endpoint
    yield proxy, endpoint
    proxy.stop()


@pytest.fixture(scope="session")
def commands(glue_proxy, spark, s3a, glue_client, tmp_path_factory):
    """Runs COMMANDS in this process; returns each one's name, output (both streams), calls and, from the replay
    on, the tables' rows after it."""
    proxy, endpoint = glue_proxy
    s3 = s3a(BUCKET)
    spark.sparkContext._jsc.hadoopConfiguration().set(f"fs.s3a.bucket.{BUCKET}.endpoint", endpoint)
    os.environ["AWS_ENDPOINT_URL_S3"] = endpoint  # the commands' own S3 client (the lock, the reports)
    staging = tmp_path_factory.mktemp("iceberg-in-glue")
    for write in (write_run1, write_run2):
        write(staging / write.__name__, SOURCE)
    upload = {1: write_run2}

    def put(write):
        for path in (staging / write.__name__).rglob("*"):
            if path.is_file():
                s3.upload_file(str(path), BUCKET, str(path.relative_to(staging / write.__name__)))

    put(write_run1)
    recorded = []
    for index, (name, argv) in enumerate(COMMANDS):
        if index in upload:
            put(upload[index])
        for late, event in ((1, LATE), (2, REPLAYED)):
            if index == late:
                s3.put_object(Bucket=BUCKET, Key=f"segment-logs/{SOURCE}/1704153600000/{event['messageId']}.json",
                              Body=json.dumps(event).encode())
        proxy.requests.clear()
        proxy.operations.clear()
        output = io.StringIO()
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            code = cli.main(argv)
        assert code == 0, f"{name} failed: {output.getvalue()[-2000:]}"
        recorded.append({"name": name, "output": output.getvalue(), "operations": dict(proxy.operations),
                         "calls": [call for request in proxy.requests for call in request_calls(request)],
                         "rows": table_rows(spark, glue_client) if index >= 2 else None})
    (tmp_path_factory.getbasetemp() / "calls.json").write_text(json.dumps(
        [{key: command[key] for key in ("name", "calls", "operations")} for command in recorded]))
    return recorded


def table_rows(spark, glue_client) -> dict[str, list]:
    """Each table's rows as [message id, user id], read by Spark through Iceberg's Glue catalog. (Here Spark's own
    catalog, which lists the session catalog's namespaces, is in memory; on EMR it is Glue's.)"""
    rows = {}
    for table in iceberg_tables(glue_client):
        frame = spark.table(f"{DATABASE}.{table['Name']}")
        user = "user_id" if "user_id" in frame.columns else "null"
        rows[table["Name"]] = sorted([list(row) for row in frame.selectExpr("message_id", user).collect()])
    return rows


def iceberg_tables(glue_client) -> list[dict]:
    return [table for table in glue_client.get_tables(DatabaseName=DATABASE)["TableList"]
            if table.get("Parameters", {}).get("table_type", "").upper() == "ICEBERG"]


def test_each_events_table_is_an_iceberg_table_in_glue_with_its_metadata_in_the_lake(commands, glue_client, s3a):
    tables = iceberg_tables(glue_client)
    others = {t["Name"] for t in glue_client.get_tables(DatabaseName=DATABASE)["TableList"]} - {t["Name"] for t in tables}
    assert others == {"segment_discards", "segment_duplicates"}, others  # the records beside the tables, as Parquet
    assert len(tables) == len(commands[-1]["rows"]) >= 7
    s3 = s3a(BUCKET)
    for table in tables:
        name, parameters = table["Name"], table["Parameters"]
        assert table["TableType"] == "EXTERNAL_TABLE", name
        folder = f"segment-data/data/{SOURCE}/segment_type={name}"
        assert parameters["metadata_location"].startswith(f"s3a://{BUCKET}/{folder}/metadata/"), parameters
        s3.head_object(Bucket=BUCKET, Key=parameters["metadata_location"].split(f"{BUCKET}/", 1)[1])
        # partitions live in the table's metadata, not in Glue
        assert glue_client.get_partitions(DatabaseName=DATABASE, TableName=name)["Partitions"] == [], name


def test_the_syncs_land_each_event_once_and_a_replay_only_what_they_had_not(commands):
    run1, run2 = RUN1_COUNTS, {**RUN2_COUNTS, "read_count": RUN2_COUNTS["read_count"] + 1,
                               "row_count": RUN2_COUNTS["row_count"] + 1}  # and the late file's event
    for command, counts in zip(commands[:2], (run1, run2), strict=True):
        assert (f"read {counts['read_count']}, landed {counts['row_count']}, duplicates {counts['duplicate_count']}"
                in command["output"]), command["output"]
    assert "landed 1, duplicates 13" in commands[2]["output"], commands[2]["output"]  # the day's 13 kept events
    assert sum(map(len, commands[2]["rows"].values())) == run1["row_count"] + run2["row_count"] + 1


def test_each_run_commits_once_to_each_table_it_wrote(commands, spark):
    for name in commands[2]["rows"]:
        runs = [row.run for row in spark.sql(
            f"select summary['segment-run-id'] as run from {DATABASE}.{name}.snapshots").collect()]
        assert len(runs) == len(set(runs)), (name, runs)


def test_a_deletion_removes_the_users_rows_and_the_compaction_keeps_the_rest(commands):
    before, deleted, compacted = (commands[i]["rows"] for i in (2, 3, 4))
    held = {name for name, rows in before.items() if any(user == DELETED_USER for _, user in rows)}
    count = sum(user == DELETED_USER for rows in before.values() for _, user in rows)
    assert held and f"deleted {plural(count, 'row')} of 1 id from {plural(len(held), 'table')}" in \
        commands[3]["output"], commands[3]["output"]
    assert deleted == {name: [r for r in rows if r[1] != DELETED_USER] for name, rows in before.items()}
    assert compacted == deleted
    assert "2 files merged into 1" in commands[4]["output"], commands[4]["output"]


def plural(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"


def test_after_the_compaction_each_table_keeps_one_snapshot(commands, spark):
    for name in commands[4]["rows"]:
        assert spark.sql(f"select count(*) from {DATABASE}.{name}.snapshots").first()[0] == 1, name
