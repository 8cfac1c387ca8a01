"""Delivery of the sync app to the cluster and the schedules that run it."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO
from stack_helpers import named, only, policy, resolve, resources, synth_small_lake

pytestmark = pytest.mark.constructs

BUILD = REPO / "workload" / "emr" / "build_bundle.py"


def test_bundle_is_uploaded_content_addressed_and_the_cluster_installs_nothing(synthesized, lake):
    from segment_data_lake.workload import packaged_bundle, release_id

    bundle = named(lake, "aws_s3_object", "BundleObject")
    script = named(lake, "aws_s3_object", "StepScriptObject")
    assert bundle["bucket"] == script["bucket"] == "my-company-segment-data-lake"
    asset = synthesized.stack_dir("segment-data-lake") / bundle["source"]
    digest = release_id(asset)
    assert bundle["key"] == f"segment-lake-app/{digest}/segment-lake-app.zip"
    assert script["key"] == f"segment-lake-app/{digest}/run-sync.sh"
    assert asset.read_bytes() == packaged_bundle().read_bytes()
    with zipfile.ZipFile(asset) as archive:
        names = set(archive.namelist())
        assert script["content"] == archive.read("run-sync.sh").decode()
    # The app and everything it needs beyond EMR travel with it: a private subnet still runs the sync.
    assert {"step_entry.py", "site/segment_lake/cli.py", "site/segment_lake/jvm/ParseLines.java",
            "site/boto3/__init__.py", "site/botocore/data/glue/2017-03-31/service-2.json.gz"} <= names
    assert "bootstrap_action" not in only(lake, "aws_emr_cluster")


def test_the_bundle_build_is_reproducible_and_checks_the_pinned_hashes(tmp_path):
    from segment_data_lake.workload import release_id

    wheels = REPO / ".cache" / "emr-wheels"
    first, second = tmp_path / "a" / "app.zip", tmp_path / "b" / "app.zip"
    for output in (first, second):
        build = subprocess.run([sys.executable, str(BUILD), "--wheels", str(wheels), "--output", str(output)],
                               capture_output=True, text=True, env={**os.environ, "SOURCE_DATE_EPOCH": "1700000000"})
        assert build.returncode == 0, build.stderr
    assert first.read_bytes() == second.read_bytes()
    assert build.stdout.strip().endswith(hashlib.sha256(second.read_bytes()).hexdigest())
    # other timestamps and another compression level change the zip's bytes, never the release id (the S3 key)
    with zipfile.ZipFile(first) as source, zipfile.ZipFile(tmp_path / "recompressed.zip", "w") as copy:
        for info in source.infolist():
            info.date_time = (2001, 2, 3, 4, 5, 6)
            copy.writestr(info, source.read(info), compresslevel=1)
    assert (tmp_path / "recompressed.zip").read_bytes() != first.read_bytes()
    assert release_id(tmp_path / "recompressed.zip") == release_id(first)
    # a wheel that is not the one pinned is refused, by name
    tampered = tmp_path / "wheels"
    shutil.copytree(wheels, tampered)
    [six] = tampered.glob("six-*.whl")
    six.write_bytes(six.read_bytes() + b"x")
    build = subprocess.run([sys.executable, str(BUILD), "--wheels", str(tampered), "--output", str(tmp_path / "c.zip")],
                           capture_output=True, text=True)
    assert build.returncode == 1 and f"{six} does not match the hash pinned in" in build.stderr
    assert not (tmp_path / "c.zip").exists()


def _fake_tools(bin_dir: Path, bucket_dir: Path, record: Path) -> None:
    """``aws s3 cp`` from a folder standing in for the bucket, and a spark-submit that records what it was
    given, then imports the sync from the installed release with no site-packages (only the bundle's)."""
    bin_dir.mkdir()
    (bin_dir / "aws").write_text(f"""#!/bin/bash
[ "$1 $2" = "s3 cp" ] || exit 2
[ "$3" = "--only-show-errors" ] && shift
src="$3"; cp "{bucket_dir}/${{src#s3://*/}}" "$4"
""")
    (bin_dir / "spark-submit").write_text(f"""#!/bin/bash
echo "$PYTHONPATH" > "{record}"
echo "$@" >> "{record}"
{sys.executable} -S -c "import sys; sys.path[:0] = '$PYTHONPATH'.split(':'); import boto3, segment_lake.cli as cli; \
print(boto3.__file__); print(cli.parser().parse_args(sys.argv[1:]).source_id)" "${{@:6}}" >> "{record}"
""")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)


def test_a_sync_step_installs_its_release_once_and_runs_it(synthesized, lake, tmp_path):
    """The schedule's step, run as command-runner.jar would run it, against stand-ins for the aws CLI and spark-submit."""
    bucket_dir = tmp_path / "bucket"
    for name in ("BundleObject", "StepScriptObject"):
        obj = named(lake, "aws_s3_object", name)
        target = bucket_dir / obj["key"]
        target.parent.mkdir(parents=True, exist_ok=True)
        if "source" in obj:
            shutil.copy(synthesized.stack_dir("segment-data-lake") / obj["source"], target)
        else:
            target.write_text(obj["content"])
    step = json.loads(_sync_schedule(lake)["target"]["input"])["Steps"][0]["HadoopJarStep"]
    args = [resolve(lake, arg) for arg in step["Args"]]
    record, root = tmp_path / "record.txt", tmp_path / "apps"
    _fake_tools(tmp_path / "bin", bucket_dir, record)
    (tmp_path / "tmp").mkdir()
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "SEGMENT_LAKE_APP_ROOT": str(root), "HOME": str(tmp_path),
           "TMPDIR": str(tmp_path / "tmp")}
    for _ in range(2):
        run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        pythonpath, submitted, boto3_file, source_id = record.read_text().splitlines()
        [release] = [p for p in root.iterdir() if not p.name.startswith(".")]
        assert pythonpath == f"{release}/site"
        assert submitted.startswith(f"--master yarn --deploy-mode client {release}/step_entry.py sync --source-id 9aQ1bC2dE3")
        assert boto3_file.startswith(f"{release}/site/boto3/") and source_id == "9aQ1bC2dE3"
    assert release.name == named(lake, "aws_s3_object", "BundleObject")["key"].split("/")[1]
    # the launcher removed the script it fetched; one release installed, no install folder left behind
    assert not list((tmp_path / "tmp").iterdir()) and [p.name for p in root.iterdir()] == [release.name]


def _sync_schedule(stack: dict) -> dict:
    return named(stack, "aws_scheduler_schedule", "Schedules/Sync-")


def _sync_steps(stack: dict) -> list[dict]:
    return [step for schedule in resources(stack, "aws_scheduler_schedule").values()
            for step in json.loads(schedule["target"]["input"])["Steps"] if step["Name"].startswith("segment-lake sync ")]


def test_one_schedule_per_source_every_two_hours(lake):
    from segment_data_lake.workload import STEP_LAUNCHER

    schedule = _sync_schedule(lake)
    assert schedule["schedule_expression"] == "rate(2 hours)"
    assert schedule["flexible_time_window"] == {"mode": "OFF"}
    target = schedule["target"]
    assert target["arn"].endswith(":scheduler:::aws-sdk:emr:addJobFlowSteps")
    request = json.loads(target["input"])
    assert request["JobFlowId"].startswith("${aws_emr_cluster.")
    [step] = request["Steps"]
    assert step["ActionOnFailure"] == "CONTINUE"
    assert step["HadoopJarStep"]["Jar"] == "command-runner.jar"
    args = step["HadoopJarStep"]["Args"]
    assert args[:3] == ["bash", "-c", STEP_LAUNCHER]
    assert "${aws_s3_object." in args[3] and "StepScriptObject" in args[3]
    assert "${aws_s3_object." in args[4] and "BundleObject" in args[4]
    settings = dict(zip(args[6::2], args[7::2], strict=True))
    assert args[5] == "sync"
    assert settings == {"--source-id": "9aQ1bC2dE3", "--source-slug": "web_app",
                        "--input": "s3://my-company-segment-data-lake/segment-logs/9aQ1bC2dE3/",
                        "--lake": "s3://my-company-segment-data-lake/", "--glue-database": "web_app",
                        "--date-partition": "day_hour", "--catalog": "glue",
                        "--aws-region": "${{data.aws_region.{}.name}}".format(next(iter(lake["data"]["aws_region"]))),
                        "--workspace-id": "my-workspace-id", "--if-busy": "skip"}
    # the sync's own command line takes them as they are
    from segment_lake.cli import parser
    assert parser().parse_args(args[5:]).workspace_id == "my-workspace-id"


def test_every_step_names_the_workspace_for_its_reports(synthesized):
    for name, stack in synthesized.stacks.items():
        for step in _sync_steps(stack):
            args = step["HadoopJarStep"]["Args"]
            settings = dict(zip(args[6::2], args[7::2], strict=True))
            expected = {"segment-data-lake": "my-workspace-id", "lake-formation": "my-workspace-id",
                        "complete": "acmeworkspace123",
                        "existing-bucket": "acmeworkspace123", "shared-database": "acmeworkspace123",
                        "bring-your-own": "acmeworkspace123", "transient": "my-workspace-id"}.get(
                name, "acmeprodworkspace" if "Prod" in step["Name"] or "prod" in step["Name"] else "acmestagingworkspace")
            assert settings.get("--workspace-id") == expected, (name, step["Name"])


def test_shared_database_schedules_carry_prefixes_and_partitions(synthesized):
    stack = synthesized.stacks["shared-database"]
    by_source = {}
    for step in _sync_steps(stack):
        args = step["HadoopJarStep"]["Args"]
        settings = dict(zip(args[6::2], args[7::2], strict=True))
        by_source[settings["--source-id"]] = settings
    assert by_source["Web1234567"]["--table-prefix"] == "web_"
    assert by_source["Ios1234567"]["--table-prefix"] == "ios_"
    assert by_source["Ios1234567"]["--date-partition"] == "year_month_day_hour"
    assert {s["--glue-database"] for s in by_source.values()} == {"acme"}


def test_schedule_role_may_only_add_steps_to_this_cluster(lake):
    role = named(lake, "aws_iam_role", "Schedules/Role")
    trust = policy(role, "assume_role_policy")["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert "aws:SourceAccount" in trust["Condition"]["StringEquals"]
    [grant] = policy(named(lake, "aws_iam_policy", "Schedules/Policy"))["Statement"]
    assert grant["Action"] == "elasticmapreduce:AddJobFlowSteps"
    assert grant["Resource"] == "${{aws_emr_cluster.{}.arn}}".format(next(iter(resources(lake, "aws_emr_cluster"))))
    assert {s["target"]["role_arn"] for s in resources(lake, "aws_scheduler_schedule").values()} == {"${%s.arn}" % (
        "aws_iam_role." + [n for n in resources(lake, "aws_iam_role") if "Schedules_Role" in n][0])}


def test_complete_schedules_use_the_configured_rate(synthesized):
    schedules = resources(synthesized.stacks["complete"], "aws_scheduler_schedule").values()
    assert {s["name"]: s["schedule_expression"] for s in schedules} == {
        "segment-lake-acme_web-complete": "rate(1 hour)", "segment-lake-acme_backend-complete": "rate(1 hour)",
        "segment-lake.compact-complete": "cron(15 3 * * ? *)"}


def test_every_source_is_compacted_daily_on_the_cluster_with_its_syncs_naming(synthesized):
    """One compaction schedule adds every source's compact step to the always-on cluster (each waits for a sync
    that holds the source's lock), with the options the source's syncs use, which the CLI takes as they are."""
    from segment_lake.cli import parser

    stack = synthesized.stacks["shared-database"]
    schedule = named(stack, "aws_scheduler_schedule", "Schedules/Compact")
    assert schedule["schedule_expression"] == "cron(15 3 * * ? *)"
    assert schedule["target"]["arn"].endswith(":scheduler:::aws-sdk:emr:addJobFlowSteps")
    request = json.loads(schedule["target"]["input"])
    assert request["JobFlowId"].startswith("${aws_emr_cluster.")
    syncs = {step["Name"].rsplit(" ", 1)[1]: step["HadoopJarStep"]["Args"] for step in _sync_steps(stack)}
    assert len(request["Steps"]) == len(syncs) == 2
    for step in request["Steps"]:
        assert step["ActionOnFailure"] == "CONTINUE" and step["Name"].startswith("segment-lake compact ")
        args, sync = step["HadoopJarStep"]["Args"], syncs[step["Name"].rsplit(" ", 1)[1]]
        assert args[:5] == sync[:5]  # the same release
        compact, synced = parser().parse_args(args[5:]), parser().parse_args(sync[5:])
        assert compact.command == "compact" and compact.wait_for_lock == 120
        for option in ("source_id", "source_slug", "lake", "glue_database", "table_prefix", "date_partition",
                       "catalog", "aws_region"):
            assert getattr(compact, option) == getattr(synced, option), option


def test_no_compaction_schedule_when_none_is_asked_for():
    schedules = resources(synth_small_lake("no-compaction", compaction_schedule_expression=None),
                          "aws_scheduler_schedule").values()
    assert [s["name"] for s in schedules] == ["segment-lake-web"]


def test_a_projected_source_asks_its_syncs_and_replays_for_projection():
    from segment_data_lake.sources import SegmentSource
    from segment_data_lake.steps import step_command
    from segment_lake.cli import parser

    plain, projected = (SegmentSource("9aQ1bC2dE3", "web", partition_projection=flag) for flag in (False, True))
    for command in ("sync", "replay"):
        window = ["--from", "2024-01-01", "--to", "2024-01-02"] if command == "replay" else []
        assert parser().parse_args(step_command(command, projected, "b", "us-east-1") + window).partition_projection
        assert not parser().parse_args(step_command(command, plain, "b", "us-east-1") + window).partition_projection
    assert "--partition-projection" not in step_command("compact", projected, "b", "us-east-1")  # it has no such option
