"""The ``segment-lake`` command: help, one-line errors, and the embedded default end to end."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lake_events import write_run1

pytestmark = [pytest.mark.spark, pytest.mark.aws]

CLI = str(Path(sys.executable).with_name("segment-lake"))


def run(*args, cwd=None):
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.mark.parametrize("command", [[], ["sync"], ["generate"], ["sql"], ["state"], ["history"], ["delete-users"],
                                     ["replay"], ["replay-on-emr"], ["move-reports"]])
def test_every_subcommand_has_help(command):
    result = run(*command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: segment-lake")
    if command == ["sync"]:
        for option in ("--source-id", "--input", "--lake", "--source-slug", "--glue-database", "--table-prefix",
                       "--date-partition", "--catalog"):
            assert option in result.stdout


@pytest.mark.parametrize("args,message", [
    (["--source-id", "bad-id", "--input", "in", "--lake", "lake"],
     "segment-lake: error (invalid_settings): invalid source id 'bad-id': use the Segment source id, letters and digits only"),
    (["--source-id", "s1", "--input", "ftp://x/in", "--lake", "lake"],
     "segment-lake: error (invalid_settings): unsupported --input 'ftp://x/in': "
     "use a local path or a file://, s3:// or s3a:// URI"),
    (["--source-id", "s1", "--input", "in", "--lake", "s3a://bucket", "--catalog", "local"],
     "segment-lake: error (invalid_settings): --catalog local keeps its metastore in the lake folder"),
    (["--source-id", "s1", "--input", "in", "--lake", "lake", "--table-prefix", "Bad Prefix"],
     "segment-lake: error (invalid_settings): invalid table prefix 'Bad Prefix'"),
    (["--source-id", "s1", "--input", "does-not-exist", "--lake", "lake"],
     "segment-lake: error (invalid_settings): input file://"),
    (["--source-id", "s1", "--input", "does-not-exist", "--lake", "lake", "--verbose"],
     "segment-lake: error (invalid_settings): input file://"),
    (["--source-id", "s1", "--input", "in", "--lake", "lake", "--driver-memory", "lots"],
     "segment-lake: error (invalid_settings): invalid driver memory 'lots': use a size such as 4g or 3072m"),
    (["--source-id", "s1", "--input", "in", "--lake", "lake", "--cores", "0"],
     "segment-lake: error (invalid_settings): invalid number of cores 0: use a whole number of at least 1"),
    (["--source-id", "s1", "--input", "in", "--lake", "lake", "--wait-for-lock", "-5"],
     "segment-lake: error (invalid_settings): --wait-for-lock -5 must be 0 or more minutes"),
    (["--source-id", "s1", "--input", "in", "--lake", "s3a://b/", "--catalog", "glue", "--table-format", "iceberg"],
     "segment-lake: error (invalid_settings): Iceberg tables in Glue need Iceberg's Glue catalog with the AWS SDK v2: "
     "run this on EMR"),
    (["--source-id", "s1", "--input", "in", "--lake", "lake", "--iceberg-partitioning", "hours"],
     "segment-lake: error (invalid_settings): --iceberg-partitioning hours is how Iceberg tables are partitioned"),
    (["--source-id", "s1", "--input", "in", "--lake", "lake", "--table-format", "iceberg", "--iceberg-partitioning",
      "hours", "--date-partition", "year_month_day"],
     "segment-lake: error (invalid_settings): --iceberg-partitioning hours puts each file in the hour of its rows, and "
     "--date-partition year_month_day writes a file a day"),
])
def test_bad_settings_fail_with_one_line(tmp_path, args, message):
    (tmp_path / "in").mkdir()
    result = run("sync", *args, cwd=tmp_path)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(message), last
    assert not (tmp_path / "lake").exists()  # refused before Spark started or the lake was touched
    assert "Spark" not in result.stderr  # even with --verbose: Spark never started


def test_a_replay_needs_days_in_order(tmp_path):
    (tmp_path / "in").mkdir()
    bad_day = run("replay", "--source-id", "s1", "--input", "in", "--lake", "lake", "--from", "2024-13-01", "--to",
                  "2024-01-02", cwd=tmp_path)
    assert bad_day.returncode == 2 and "invalid day '2024-13-01': use YYYY-MM-DD" in bad_day.stderr
    backwards = run("replay", "--source-id", "s1", "--input", "in", "--lake", "lake", "--from", "2024-01-03", "--to",
                    "2024-01-02", cwd=tmp_path)
    assert backwards.returncode == 1
    assert backwards.stderr.strip() == ("segment-lake: error (invalid_settings): --from 2024-01-03 is after --to "
                                        "2024-01-02: swap them")
    assert not (tmp_path / "lake").exists()


def test_unknown_date_partition_is_refused_by_the_parser(tmp_path):
    result = run("sync", "--source-id", "s1", "--input", "in", "--lake", "lake", "--date-partition", "hourly")
    assert result.returncode == 2
    assert "invalid choice: 'hourly'" in result.stderr


@pytest.mark.fast  # the fast lane's end-to-end sync
def test_local_default_end_to_end(tmp_path):
    write_run1(tmp_path / "input", "src1")
    args = ["sync", "--source-id", "src1", "--source-slug", "Web App", "--input", "input/segment-logs/src1",
            "--lake", "lake"]
    first = run(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "synced src1: read 19, landed 11, duplicates 1, rejected 7" in first.stdout
    # where to look next, named by the summary
    run_id = re.search(r"run_id=(\S+)/report.json", first.stdout).group(1)
    assert first.stdout.splitlines()[1:] == [
        f"  report: {tmp_path}/lake/segment-data/reports/source_id=src1/day={run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}/"
        f"run_id={run_id}/report.json",
        f"  rejected lines: {tmp_path}/lake/segment-data/rejected/src1/run_id={run_id}/",
        f"  duplicates: web_app.segment_duplicates where run_id = '{run_id}'",
        f"  discarded values: web_app.segment_discards where run_id = '{run_id}'"]
    # every stage ends with its outcome and time; the long ones say what they do when they start;
    # Spark's start-up warnings are not shown
    lines = first.stderr.splitlines()
    assert all(line.startswith("segment-lake: [") for line in lines), lines
    ended = re.findall(r"^segment-lake: \[ *\d+\.\ds\] (\w+): .* \(\d+\.\ds\)$", first.stderr, re.M)
    assert ended == ["discover", "parse", "dedup", "infer", "write", "publish", "catalog", "state"]
    # (a loaded machine may take more than 30 s to parse: the heartbeat then says how far Spark has got meanwhile)
    assert re.search(r"parse: reading 2 files\n(?:.*parse: \d+ of \d+ tasks? done\n)*.*parse: 19 lines, 7 rejected \(",
                     first.stderr)
    assert re.search(r"write: casting and writing 7 tables as Parquet\n", first.stderr)
    assert "discover: 2 new files (" in first.stderr
    second = run(*args, cwd=tmp_path)
    assert second.returncode == 0 and "read 0, landed 0, duplicates 0" in second.stdout
    assert len(re.findall(r"discover: ", second.stderr)) == 1
    assert re.search(r"discover: no new files; nothing to do \(\d+\.\ds\)", second.stderr)

    # the metastore lives in the lake, with Hive's session folder (not one more in the temporary folder each command);
    # nothing lands in the working directory
    assert (tmp_path / "lake" / "segment-data" / "metastore" / "metastore_db").is_dir()
    assert (tmp_path / "lake" / "segment-data" / "metastore" / "resources").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input", "lake"]
    reports = sorted((tmp_path / "lake" / "segment-data" / "reports").rglob("report.json"))
    assert len(reports) == 2
    assert {json.loads(r.read_text().splitlines()[0])["database"] for r in reports} == {"web_app"}

    history = run("history", "--lake", "lake", "--plot", "syncs.png", cwd=tmp_path)
    assert history.returncode == 0, history.stderr[-2000:]
    lines = history.stdout.splitlines()
    assert lines[0].split() == ["source", "start", "(UTC)", "status", "rows", "duplicates", "rejected", "discarded",
                                "values", "new", "columns", "duration"]
    # the first sync: 11 rows, 1 duplicate, 7 rejected, 4 discarded values and every column new; the second: nothing
    assert [line.split()[3:8] for line in lines[1:3]] == [["finished", "11", "1", "7", "4"],
                                                          ["finished", "0", "0", "0", "0"]]
    new_columns = sum(len(json.loads(line)["new_columns"]) for line in reports[0].read_text().splitlines())
    assert (int(lines[1].split()[8]), lines[2].split()[8]) == (new_columns, "0") and new_columns > 40
    assert lines[3:] == ["finished over the last 30 days: 2 of 2 syncs (100%)", "plot: syncs.png"]
    assert (tmp_path / "syncs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # a bad query is the query's fault, not an internal error
    missing = run("sql", "--lake", "lake", "select * from web_app.no_such_table", cwd=tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.startswith("segment-lake: error (invalid_query): [TABLE_OR_VIEW_NOT_FOUND] The table or view "
                                     "`web_app`.`no_such_table` cannot be found."), missing.stderr
    assert missing.stderr.strip().endswith("fix the query (`show tables in <database>` lists the tables)")
    assert len(missing.stderr.strip().splitlines()) == 1
    # --verbose shows what Spark says, before the same one-line error
    garbled = run("sql", "--verbose", "--lake", "lake", "selec 1", cwd=tmp_path)
    assert garbled.returncode == 1
    assert garbled.stderr.strip().splitlines()[-1].startswith("segment-lake: error (invalid_query): [PARSE_SYNTAX_ERROR]")
    assert 'Setting default log level to "WARN"' in garbled.stderr
    # several statements in one Spark start, a blank line between two results: arguments, then a file's
    (tmp_path / "queries.sql").write_text("-- two; statements\nselect 'a;b' as s;\nselect 2 as two;\n")
    several = run("sql", "--lake", "lake",
                  "select message_id, properties_revenue from web_app.track_order_completed order by message_id",
                  "select message_id, table_name, original_received_at from web_app.segment_duplicates",
                  "select run_id, status, row_count from __segment_datalake.sync_reports where type = 'source' "
                  "order by run_id", "select 1 as one", "-f", "queries.sql", cwd=tmp_path)
    assert several.returncode == 0 and several.stderr == "", several.stderr[-2000:]  # quiet: Spark says nothing
    orders, dropped, reports_table, *rest = several.stdout.split("\n\n")
    assert orders.splitlines() == ["message_id\tproperties_revenue", "m1\t19.990000", "m10\t", "m2\t5.000000"]
    assert dropped.splitlines() == ["message_id\ttable_name\toriginal_received_at", "m3\tidentify\t2024-01-02 05:00:00"]
    assert reports_table.splitlines() == ["run_id\tstatus\trow_count", f"{run_id}\tfinished\t11",
                                          f"{reports[1].parent.name[len('run_id='):]}\tfinished\t0"]
    assert "\n\n".join(rest).splitlines() == ["one", "1", "", "s", "a;b", "", "two", "2"]
    # the queries too left nothing in the working directory but what the test put there and the plot it asked for
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input", "lake", "queries.sql", "syncs.png"]


def test_database_defaults_to_the_slug_of_the_source_id(spark, tmp_path):
    write_run1(tmp_path / "input", "Src9")
    # a folder name with a space and a comma: the metastore's path goes into the JVM's options
    result = run("sync", "--source-id", "Src9", "--input", "input", "--lake", "my lake, 1", "--table-prefix", "web_",
                 "--date-partition", "year_month_day", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    tables = run("sql", "--lake", "my lake, 1", "show tables in src9", cwd=tmp_path).stdout
    assert "src9\tweb_track_order_completed\tfalse" in tables and "src9\tweb_segment_discards\tfalse" in tables
    assert (tmp_path / "my lake, 1/segment-data/data/Src9/segment_type=identify/year=2024/month=01/day=02").is_dir()
    # a deletion in a folder whose name Spark's file names percent-encode
    deleted = run("delete-users", "--source-id", "Src9", "--lake", "my lake, 1", "--user-id", "u1", cwd=tmp_path)
    assert deleted.returncode == 0, deleted.stderr[-2000:]
    assert deleted.stdout.startswith("deleted 3 rows of 1 id from 3 tables ("), deleted.stdout
    assert deleted.stdout.splitlines()[1].startswith("  searched: ") and " files of 7 tables" in deleted.stdout
    assert deleted.stdout.splitlines()[2].startswith(f"  report: {tmp_path}/my lake, 1/segment-data/deletions/Src9/")
    # a source the lake does not have: refused, nothing suppressed
    mistyped = run("delete-users", "--source-id", "Scr9", "--lake", "my lake, 1", "--user-id", "u1", cwd=tmp_path)
    assert mistyped.returncode == 1 and mistyped.stderr.strip() == (
        "segment-lake: error (invalid_settings): the lake has no source 'Scr9' (it has Src9): pass the --source-id its "
        "syncs use"), mistyped.stderr
    assert not (tmp_path / "my lake, 1/segment-data/state/Scr9").exists()
    identify = spark.read.parquet(f"{tmp_path}/my lake, 1/segment-data/data/Src9/segment_type=identify")
    assert identify.count() > 0 and identify.where("user_id = 'u1'").count() == 0
    # compacting with the syncs' naming options: one file per partition is left alone; the state is merged
    compacted = run("compact", "--source-id", "Src9", "--lake", "my lake, 1", "--table-prefix", "web_",
                    "--date-partition", "year_month_day", "--older-than", "0", cwd=tmp_path)
    assert compacted.returncode == 0, compacted.stderr[-2000:]
    assert compacted.stdout.splitlines()[0].startswith("compacted Src9: 0 partitions, 0 files merged into 0; "), \
        compacted.stdout
    assert compacted.stdout.splitlines()[1].startswith("  state: landed index: 1 runs merged, "), \
        compacted.stdout


def test_glue_catalog_from_the_command_line(tmp_path, aws_endpoint, glue_client):
    import os

    write_run1(tmp_path / "input", "src1")
    env = dict(os.environ, SEGMENT_LAKE_GLUE_ENDPOINT=aws_endpoint, AWS_ENDPOINT_URL_CLOUDWATCH=aws_endpoint,
               AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    env.pop("AWS_DEFAULT_REGION", None)
    result = subprocess.run([CLI, "sync", "--source-id", "src1", "--input", "input", "--lake", "lake", "--catalog",
                             "glue", "--glue-database", "cli_glue", "--aws-region", "us-east-1",
                             "--metrics-namespace", "SegmentDataLake"],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "metrics: 8 written to CloudWatch namespace SegmentDataLake" in result.stderr  # as on EMR, by default
    tables = {t["Name"] for t in glue_client.get_tables(DatabaseName="cli_glue")["TableList"]}
    assert {"identify", "track_order_completed", "segment_discards"} <= tables
    assert not (tmp_path / "lake" / "segment-data" / "metastore").exists()


def test_a_jvm_out_of_memory_is_named_and_the_failed_report_written(tmp_path):
    import gzip

    # two events of 900,000 properties each (15 MB lines, under the line limit) cannot be parsed side by side in
    # a 512 MB heap: the JVM dies while parsing (the default heap, 2 GB here, lands them)
    day = tmp_path / "input" / "1704153600000"
    day.mkdir(parents=True)
    for n in range(2):
        with gzip.open(day / f"wide{n}.gz", "wb", compresslevel=1) as out:
            out.write(b'{"type":"identify","messageId":"m%d","receivedAt":"2024-01-02T00:00:00Z","traits":{' % n)
            out.write(b",".join(b'"k%d":%d' % (i, i) for i in range(900_000)))
            out.write(b"}}\n")
    result = run("sync", "--source-id", "big", "--input", "input", "--lake", "lake", "--driver-memory", "512m",
                 cwd=tmp_path)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("segment-lake: error (internal): Spark's JVM ran out of memory "
                           "(java.lang.OutOfMemoryError) with a 512m heap: run again with a larger --driver-memory"), last
    [report] = (tmp_path / "lake" / "segment-data" / "reports").rglob("report.json")
    source = json.loads(report.read_text().splitlines()[0])
    assert source["status"] == "failed" and source["error_code"] == "internal"
    assert source["error"].startswith("Spark's JVM ran out of memory")
    pending = json.loads((tmp_path / "lake" / "segment-data" / "state" / "big" / "pending.json").read_text())
    assert [Path(f).name for f in pending["files"]] == ["wide0.gz", "wide1.gz"]  # the next sync redoes the run


def test_progress_counts_have_the_right_plural():
    from segment_lake.progress import count

    assert [count(1, "new file"), count(0, "table"), count(2, "discarded value")] == [
        "1 new file", "0 tables", "2 discarded values"]


def test_sql_on_a_folder_that_is_no_lake_is_refused_and_creates_nothing(tmp_path):
    result = run("sql", "--lake", "no-such-lake", "show databases", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == ("segment-lake: error (invalid_settings): no lake at 'no-such-lake' "
                                     "(no no-such-lake/segment-data/metastore): pass the --lake a local sync wrote to")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.timing
def test_a_second_sync_of_a_source_refuses_at_once_while_the_first_runs(tmp_path):
    import time

    write_run1(tmp_path / "input", "src1")
    args = ["sync", "--source-id", "src1", "--input", "input/segment-logs/src1", "--lake", "lake"]
    first = subprocess.Popen([CLI, *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = tmp_path / "lake" / "segment-data" / "state" / "src1" / "lock.json"
    deadline = time.monotonic() + 120
    while not lock.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock.exists(), "the first sync never took the lock"
    started = time.monotonic()
    second = run(*args, cwd=tmp_path)
    waited = time.monotonic() - started  # Spark's start-up, not the first sync's run
    _, first_err = first.communicate(timeout=600)
    assert first.returncode == 0, first_err
    assert second.returncode == 1
    assert re.fullmatch(rf"segment-lake: error \(source_busy\): source src1 is being synced by process {first.pid} on host \S+ "
                        r"\(run \d{8}T\d{6}Z-\w{8}, since .*\): wait for it to end; .*", second.stderr.strip()), second.stderr
    assert waited < 60  # at once: it never waited for the first (whose lock lasts 10 minutes)
    assert not lock.exists()  # released by the first at its end


def test_permission_errors_are_insufficient_permissions():
    from segment_lake.errors import classify

    assert classify(PermissionError(13, "Permission denied", "/data/lake/segment-data")) == (
        "insufficient_permissions", "permission denied: /data/lake/segment-data: let the user running the sync read "
                                    "the input and write the lake")
    hadoop = RuntimeError("java.io.FileNotFoundException: /data/lake/segment-data/state/x (Permission denied)")
    assert classify(hadoop)[0] == "insufficient_permissions"
    assert classify(RuntimeError("java.nio.file.AccessDeniedException: /data/lake"))[0] == "insufficient_permissions"


def test_sql_statements_end_at_semicolons_outside_quotes_and_comments():
    from segment_lake.sql_statements import sql_statements

    assert sql_statements("select 1; select ';' -- a comment; not a statement\n; ;select `a;b` from t") == [
        "select 1", "select ';'", "select `a;b` from t"]
    assert sql_statements("select 'it\\'s;' as x") == ["select 'it\\'s;' as x"]
    assert sql_statements("  ;\n-- nothing\n") == []
    assert sql_statements("/* a; b */ select 1 /* c;\n d */; select 2") == ["select 1", "select 2"]


def test_a_cluster_shuffles_into_a_few_tasks_per_core_not_sparks_200():
    from segment_lake.session import cluster_shuffle_partitions

    assert cluster_shuffle_partitions({}, 2) == 8  # nothing registered yet: at least 8
    assert cluster_shuffle_partitions({"spark.executor.cores": "4", "spark.executor.instances": "5"}, 2) == 80
    dynamic = {"spark.executor.cores": "4", "spark.dynamicAllocation.enabled": "true"}
    assert cluster_shuffle_partitions({**dynamic, "spark.dynamicAllocation.maxExecutors": "6"}, 8) == 96
    # EMR's default: dynamic allocation without a bound; the cores registered when the session starts
    assert cluster_shuffle_partitions({**dynamic, "spark.dynamicAllocation.maxExecutors": "2147483647"}, 16) == 64
    assert cluster_shuffle_partitions(dynamic, 16) == 64
    assert cluster_shuffle_partitions(dynamic, 2, cluster_cores=48) == 192  # YARN's running nodes, before executors


def test_the_added_jars_are_local_files_or_a_one_line_error(tmp_path, monkeypatch):
    from segment_lake.errors import InvalidSettings
    from segment_lake.session import _local_jars

    jar = tmp_path / "a.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("SEGMENT_LAKE_SPARK_JARS", f" {jar} ,{jar},")
    assert _local_jars() == [str(jar), str(jar)]  # spaces around the commas, as spark.jars took them
    for given in (f"file://{jar}", str(tmp_path / "missing.jar"), f"{jar}{os.pathsep}{jar}"):
        monkeypatch.setenv("SEGMENT_LAKE_SPARK_JARS", given)
        with pytest.raises(InvalidSettings, match=f"^SEGMENT_LAKE_SPARK_JARS names {re.escape(repr(given))}, which "
                                                  "is not a jar file: give local paths, comma-separated"):
            _local_jars()


def test_a_command_stops_the_spark_it_started(tmp_path):
    """In a process of its own, as a step runs it: the session ends with the command, not at the interpreter's exit."""
    script = ("import sys\nfrom segment_lake import cli, session\ncode = cli.main(sys.argv[1:])\n"
              "from pyspark import SparkContext\nprint(code, SparkContext._active_spark_context is None, session._STARTED)\n")
    (tmp_path / "input").mkdir()  # nothing to sync: the command starts its Spark all the same
    finished = subprocess.run([sys.executable, "-c", script, "sync", "--source-id", "src1", "--input", "input",
                               "--lake", "lake"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert finished.stdout.splitlines()[-1] == "0 True []", finished.stderr[-2000:]
    assert (tmp_path / "lake" / "segment-data" / "metastore" / "metastore_db").is_dir()  # its session had started


def test_a_scheduled_sync_that_finds_its_source_busy_skips_and_succeeds(tmp_path):
    """The schedules' steps pass --if-busy skip: a sync whose source another run holds (a transient cluster's previous
    tick, say) says so and exits 0, leaving the lock and the lake to that run; the default refuses (exit 1)."""
    from segment_lake.lock import SourceLock, lock_store

    write_run1(tmp_path / "input", "src1")
    lock = tmp_path / "lake" / "segment-data" / "state" / "src1" / "lock.json"
    lock.parent.mkdir(parents=True)
    args = ["sync", "--source-id", "src1", "--input", "input/segment-logs/src1", "--lake", "lake", "--if-busy", "skip"]
    with SourceLock(lock_store(f"file://{lock}"), "src1", "the previous tick", seconds=600, run_id="run-a").held():
        skipped = run(*args, cwd=tmp_path)
        assert lock.exists()  # still the holder's
    assert skipped.returncode == 0, skipped.stderr[-2000:]
    assert skipped.stdout.startswith("skipped src1: source src1 is being synced by the previous tick (run run-a"), \
        skipped.stdout
    assert not (tmp_path / "lake" / "segment-data" / "reports").exists()  # no run, so no report
