"""The checkov wrapper: custom checks fail on bad stacks, documented skips only, no silent passes."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import APPS, REPO
from stack_helpers import named, only, resources

pytestmark = pytest.mark.constructs

SKIPS = REPO / "policies" / "segment_data_lake_scan" / "accepted-skips.json"


def scan(*paths, extra=()):
    return subprocess.run([sys.executable, "-m", "segment_data_lake_scan", *map(str, paths), *extra],
                          capture_output=True, text=True, timeout=600)


def write_stack(folder: Path, stack: dict) -> Path:
    folder.mkdir(parents=True)
    path = folder / "cdk.tf.json"
    path.write_text(json.dumps(stack, indent=2))
    return path


def break_vendor_tag(stack):
    cluster = only(stack, "aws_emr_cluster")
    cluster["tags"] = {k: v for k, v in cluster["tags"].items() if k != "vendor"}


def break_external_id(stack):
    role = named(stack, "aws_iam_role", "S3Destination/Role")
    trust = json.loads(role["assume_role_policy"])
    del trust["Statement"][0]["Condition"]
    role["assume_role_policy"] = json.dumps(trust)


def break_wildcards(stack):
    vendor = named(stack, "aws_iam_policy", "EmrInstancePolicy")
    document = json.loads(vendor["policy"])
    document["Statement"].append({"Effect": "Allow", "Action": "s3:*", "Resource": "*"})
    vendor["policy"] = json.dumps(document)


def break_lifecycle(stack):
    lifecycle = only(stack, "aws_s3_bucket_lifecycle_configuration")
    lifecycle["rule"] = [r for r in lifecycle["rule"] if r["id"] != "segment-stage-expiration"]


def break_imds(stack):
    security = only(stack, "aws_emr_security_configuration")
    document = json.loads(security["configuration"])
    document["InstanceMetadataServiceConfiguration"]["MinimumInstanceMetadataServiceVersion"] = 1
    security["configuration"] = json.dumps(document)


BREAKERS = {"CKV_SDL_1": break_vendor_tag, "CKV_SDL_2": break_external_id, "CKV_SDL_3": break_wildcards,
            "CKV_SDL_4": break_lifecycle, "CKV_SDL_5": break_imds}


def test_every_synthesized_stack_passes_the_scan(synthesized):
    result = scan(synthesized.outdir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.count("checkov passed") == len(APPS)
    for line in result.stderr.splitlines()[:-1]:
        passed = int(line.split("checkov passed ")[1].split(",")[0])
        assert passed > 50, line
        # every identity policy of the stack is linted, none with a finding
        stack = synthesized.stacks[line.split("/stacks/")[1].split("/")[0]]
        linted = int(line.split("parliament linted ")[1].split(" ")[0])
        assert linted == len(resources(stack, "aws_iam_policy")) >= 5 and line.endswith(" 0 findings"), line


def test_each_custom_check_fails_on_a_stack_that_breaks_it(lake, tmp_path):
    files = {}
    for check, breaker in BREAKERS.items():
        stack = copy.deepcopy(lake)
        breaker(stack)
        files[check] = write_stack(tmp_path / check, stack)
    result = scan(tmp_path)
    assert result.returncode == 1
    for check, path in files.items():
        failures = [line for line in result.stdout.splitlines() if line.startswith(f"{path}: CKV_SDL_")]
        assert [line.split(": ")[1].split()[0] for line in failures] == [check], (check, result.stdout)


def test_accepted_skips_cover_only_the_resources_the_constructs_made(synthesized, tmp_path):
    stack = copy.deepcopy(synthesized.stacks["complete"])
    # the user's own bucket, in the same stack as the lake's: same type, none of the lake's excuses
    stack["resource"]["aws_s3_bucket"]["users_own_bucket"] = {"bucket": "acme-unrelated-bucket"}
    path = write_stack(tmp_path / "with-own-bucket", stack)
    result = scan(path)
    assert result.returncode == 1
    failures = {line.split(": ")[1].split()[0] for line in result.stdout.splitlines()
                if line.endswith("failed for aws_s3_bucket.users_own_bucket")}
    assert {"CKV_AWS_18", "CKV_AWS_145", "CKV2_AWS_62", "CKV_AWS_144"} <= failures, result.stdout
    assert "aws_s3_bucket.Lake" not in result.stdout  # the lake's bucket keeps its documented skips
    # the user accepts findings on their own bucket by address, in a file that adds to the module's skips
    mine = tmp_path / "my-skips.json"
    mine.write_text(json.dumps([{"check": check, "resources": ["aws_s3_bucket.users_own_*"],
                                 "reason": "a scratch bucket of ours, emptied every night"} for check in failures]))
    result = scan(path, extra=["--skips", str(mine)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_unparseable_stack_fails_instead_of_passing(tmp_path):
    path = tmp_path / "broken" / "cdk.tf.json"
    path.parent.mkdir()
    path.write_text('{"resource": {"aws_s3_bucket": {"b": {"bucket": ')
    result = scan(path)
    assert result.returncode == 2
    assert "scan failed:" in result.stderr and str(path) in result.stderr


def test_a_stack_without_resources_fails(tmp_path):
    path = write_stack(tmp_path / "empty", {"terraform": {}, "provider": {"aws": [{"region": "us-east-1"}]}})
    result = scan(path)
    assert result.returncode == 2
    assert f"checkov ran no checks on {path}" in result.stderr


def test_a_missing_path_fails(tmp_path):
    result = scan(tmp_path / "nowhere")
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_failures_are_accepted_only_by_documented_skips(lake, tmp_path):
    unmarked = copy.deepcopy(lake)
    del unmarked["//"]["segment_data_lake_scan"]  # the constructs' marks gone: none of the module's skips applies
    result = scan(write_stack(tmp_path / "unmarked", unmarked))
    assert result.returncode == 1
    assert "CKV_AWS_297" in result.stdout  # the schedule's AWS-owned key, accepted for the marked schedules only
    undocumented = tmp_path / "undocumented.json"
    undocumented.write_text(json.dumps([{"check": "CKV_AWS_297", "applies_to": "sync_schedule"}]))
    result = scan(write_stack(tmp_path / "lake", copy.deepcopy(lake)), extra=["--skips", str(undocumented)])
    assert result.returncode == 2 and "needs a 'check', a 'reason', and an 'applies_to'" in result.stderr


def test_parliament_findings_fail_the_scan(lake, tmp_path):
    stack = copy.deepcopy(lake)
    vendor = named(stack, "aws_iam_policy", "EmrInstancePolicy")
    document = json.loads(vendor["policy"])
    document["Statement"].append({"Effect": "Allow", "Action": "s3:GetObjekt", "Resource": "arn:aws:s3:::b/*"})
    vendor["policy"] = json.dumps(document)
    result = scan(write_stack(tmp_path / "lake", stack))
    assert result.returncode == 1
    assert "parliament UNKNOWN_ACTION" in result.stdout and "EmrInstancePolicy" in result.stdout


def test_accepted_skips_are_documented():
    skips = json.loads(SKIPS.read_text())
    roles = ("lake_bucket", "sync_schedule", "cluster_with_brought_security_groups",  # what the constructs mark
             "transient_cluster_security_group")
    assert skips and all(s["check"] and s["applies_to"] in roles and len(s["reason"]) > 40 for s in skips)
    page = (REPO / "docs" / "constructs.md").read_text()
    for skip in skips:
        assert skip["check"] in page, f"{skip['check']} is not listed in docs/constructs.md"
