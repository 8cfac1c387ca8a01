"""Delivery of the sync app to the cluster and the schedules that run it."""
import json
import sys
import zipfile
from pathlib import Path

import pytest
from stack_helpers import named, only, policy, resources


def test_bundle_is_uploaded_content_addressed_and_bootstrapped(synthesized, lake):
    bundle = named(lake, "aws_s3_object", "BundleObject")
    bootstrap = named(lake, "aws_s3_object", "BootstrapObject")
    assert bundle["bucket"] == "my-company-segment-data-lake"
    asset_dir = synthesized.stack_dir("segment-data-lake") / bundle["source"]
    asset_hash = bundle["key"].split("/")[1]
    assert bundle["key"] == f"segment-lake-app/{asset_hash}/bundle.zip"
    assert bootstrap["key"] == f"segment-lake-app/{asset_hash}/bootstrap.sh"
    assert len(asset_hash) == 32 and asset_hash in bundle["source"]
    assert bootstrap["content"].startswith("#!/bin/bash")
    assert "pip install --no-index --find-links" in bootstrap["content"]

    action = only(lake, "aws_emr_cluster")["bootstrap_action"][0]
    assert action["name"] == "install-segment-lake-sync"
    assert action["path"].startswith("s3://my-company-segment-data-lake/${aws_s3_object.") and "BootstrapObject" in action["path"]
    assert action["args"][0].startswith("s3://my-company-segment-data-lake/${aws_s3_object.")

    names = zipfile.ZipFile(asset_dir).namelist()
    wheels = {Path(n).name.split("-")[0] for n in names if n.endswith(".whl")}
    # The app and everything it needs beyond EMR travel with it: a private subnet still bootstraps.
    assert {"segment_lake", "boto3", "botocore", "s3transfer", "jmespath"} <= wheels
    assert "bootstrap.sh" in names and "step_entry.py" in names


def test_bundle_hash_is_stable_across_builds(tmp_path):
    from segment_data_lake.workload_bundle import build_bundle

    first = build_bundle.__wrapped__(out_dir=tmp_path / "a")
    second = build_bundle.__wrapped__(out_dir=tmp_path / "b")
    assert sorted(p.name for p in (first / "wheels").iterdir()) == sorted(p.name for p in (second / "wheels").iterdir())
    for wheel in (first / "wheels").iterdir():
        assert wheel.read_bytes() == (second / "wheels" / wheel.name).read_bytes(), wheel.name


def test_one_schedule_per_source_every_two_hours(lake):
    schedule = only(lake, "aws_scheduler_schedule")
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
    assert args[:6] == ["spark-submit", "--master", "yarn", "--deploy-mode", "client", "/opt/segment-lake/step_entry.py"]
    settings = dict(zip(args[7::2], args[8::2], strict=True))
    assert args[6] == "sync"
    assert settings == {"--source-id": "9aQ1bC2dE3", "--source-slug": "web_app",
                        "--input": "s3://my-company-segment-data-lake/segment-logs/9aQ1bC2dE3/",
                        "--lake": "s3://my-company-segment-data-lake/", "--glue-database": "web_app",
                        "--date-partition": "day_hour", "--catalog": "glue",
                        "--aws-region": "${{data.aws_region.{}.name}}".format(next(iter(lake["data"]["aws_region"]))),
                        "--workspace-id": "my-workspace-id"}
    # the sync's own command line takes them as they are
    from segment_lake.cli import parser
    assert parser().parse_args(args[6:]).workspace_id == "my-workspace-id"


def test_every_step_names_the_workspace_for_its_reports(synthesized):
    for name, stack in synthesized.stacks.items():
        for schedule in resources(stack, "aws_scheduler_schedule").values():
            args = json.loads(schedule["target"]["input"])["Steps"][0]["HadoopJarStep"]["Args"]
            settings = dict(zip(args[7::2], args[8::2], strict=True))
            expected = {"complete": "acmeworkspace123"}.get(name, settings.get("--workspace-id"))
            assert settings.get("--workspace-id") == expected and expected, name


def test_shared_database_schedules_carry_prefixes_and_partitions(synthesized):
    stack = synthesized.stacks["shared-database"]
    by_source = {}
    for schedule in resources(stack, "aws_scheduler_schedule").values():
        args = json.loads(schedule["target"]["input"])["Steps"][0]["HadoopJarStep"]["Args"]
        settings = dict(zip(args[7::2], args[8::2], strict=True))
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
    assert only(lake, "aws_scheduler_schedule")["target"]["role_arn"] == "${%s.arn}" % (
        "aws_iam_role." + [n for n in resources(lake, "aws_iam_role") if "Schedules_Role" in n][0])


def test_complete_schedules_use_the_configured_rate(synthesized):
    schedules = resources(synthesized.stacks["complete"], "aws_scheduler_schedule").values()
    assert {s["schedule_expression"] for s in schedules} == {"rate(1 hour)"}
    assert {s["name"] for s in schedules} == {"segment-lake-acme_web-complete", "segment-lake-acme_backend-complete"}


def test_a_failed_bundle_build_names_its_cause(tmp_path):
    from segment_data_lake.workload_bundle import BundleBuildError, _run

    output = "  Building wheel\nerror: invalid command 'bdist_wheel'\nERROR: Failed to build. See above for details"
    script = f"import sys; print({output!r}, file=sys.stderr); sys.exit(1)"
    with pytest.raises(BundleBuildError, match="building the app failed: error: invalid command 'bdist_wheel'"):
        _run([sys.executable, "-c", script], "building the app")
