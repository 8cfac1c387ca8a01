"""Deploy rehearsal: the project's stack and examples/complete, as synthesized, applied with terraform against
moto's server, planned again (which must find nothing to change), and destroyed, leaving nothing of the lake behind.

The stacks are not changed for the emulator: each runs from a copy of its synthesized folder with an
override.tf.json added, which points the AWS provider at moto (endpoints, test credentials, path-style S3, few
SDK retries so that a failing call fails at once), keeps the state in the copy, and, for the project's stack,
gives the cluster the subnet created in moto in place of main.py's placeholder (what SEGMENT_LAKE_SUBNET_ID does;
moto picks its own ids). What the stack expects to exist already (the bucket, the subnet) is created first.

Each stack gets a moto server of its own, in its own process (moto_gaps.py, which lists the patches for what
moto lacks): not the session's aws_endpoint, whose moto shares its state with every test in this process (a
cluster left there would show up in test_replay_cluster's cluster count), and whose moto could not be patched
without changing it for them too. The two stacks are rehearsed at the same time: most of a rehearsal is the
provider waiting on EMR and KMS, so together they take about as long as one.

examples/complete protects its cluster from termination; EMR (and moto) refuse to terminate it, so
terraform destroy fails on it. As an operator must, the rehearsal turns the protection off before destroying.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import pytest
from moto_gaps import moto_server, provider_override
from stack_helpers import resolve, resources
from terraform_cli import PLUGIN_DIR, run_terraform

pytestmark = [pytest.mark.constructs, pytest.mark.aws]

STACKS = ("segment-data-lake", "complete", "transient")
# what each kind of resource is named by, to find it in moto: resource type -> (kind, attribute)
NAMED = {"aws_iam_role": ("roles", "name"), "aws_iam_policy": ("policies", "name"),
         "aws_iam_instance_profile": ("instance profiles", "name"), "aws_scheduler_schedule": ("schedules", "name"),
         "aws_emr_cluster": ("clusters", "name"), "aws_security_group": ("security groups", "name"),
         "aws_s3_bucket": ("buckets", "bucket"), "aws_glue_catalog_database": ("glue databases", "name"),
         "aws_sns_topic": ("topics", "name"), "aws_cloudwatch_event_rule": ("rules", "name"),
         "aws_cloudwatch_metric_alarm": ("alarms", "alarm_name")}
ACTIVE_CLUSTER = ["STARTING", "BOOTSTRAPPING", "RUNNING", "WAITING", "TERMINATING"]


@dataclass(repr=False)
class Rehearsal:
    stack: dict
    moto_log: Path
    steps: dict[str, subprocess.CompletedProcess] = field(default_factory=dict)
    state: dict = field(default_factory=dict)  # after apply
    after_apply: dict[str, set[str]] = field(default_factory=dict)
    after_destroy: dict[str, set[str]] = field(default_factory=dict)
    protected_clusters: list[str] = field(default_factory=list)

    def succeeded(self, step: str) -> bool:
        return step in self.steps and self.steps[step].returncode == 0


def region_of(stack: dict) -> str:
    return stack["provider"]["aws"][0]["region"]


def clients(endpoint: str, region: str):
    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region)
    return lambda service: session.client(service, endpoint_url=endpoint)


def provide_what_the_stack_expects(stack: dict, client) -> dict:
    """Creates what the stack expects to exist (the lake's bucket unless it creates it, the subnet of each
    subnet id it is given) and returns override blocks giving it moto's subnet ids."""
    region = region_of(stack)
    if not resources(stack, "aws_s3_bucket"):
        where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        client("s3").create_bucket(Bucket=stack["output"]["s3_bucket"]["value"], **where)
    given = {lookup["id"] for lookup in stack.get("data", {}).get("aws_subnet", {}).values() if "${" not in lookup["id"]}
    override: dict = {}
    for subnet_id in given:
        vpc = client("ec2").create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        # tagged as AmazonEMRServicePolicy_v2 needs, which the stack's plan checks (the README's quick start says so)
        subnet = client("ec2").create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", TagSpecifications=[{
            "ResourceType": "subnet", "Tags": [{"Key": "for-use-with-amazon-emr-managed-policies", "Value": "true"}]}],
        )["Subnet"]["SubnetId"]
        for block in ("data", "resource"):
            for rtype, named in stack.get(block, {}).items():
                for name, config in named.items():
                    for key, value in config.items():
                        text = json.dumps(value)
                        if subnet_id in text:
                            override.setdefault(block, {}).setdefault(rtype, {}).setdefault(name, {})[key] = (
                                json.loads(text.replace(subnet_id, subnet)))
    return override


def lake_names(stack: dict) -> dict[str, set[str]]:
    """The names of the stack's resources of each kind in NAMED, and its objects as bucket/key."""
    names: dict[str, set[str]] = {}
    for rtype, (kind, attribute) in NAMED.items():
        names[kind] = {resolve(stack, config[attribute]) for config in resources(stack, rtype).values()}
    objects = resources(stack, "aws_s3_object").values()
    names["objects"] = {resolve(stack, f"{config['bucket']}/{config['key']}") for config in objects}
    unresolved = {name for kind in names.values() for name in kind if "${" in name}
    assert not unresolved, f"named by computed values, to look up another way: {unresolved}"
    return names


def inventory(client) -> dict[str, set[str]]:
    """What moto holds of every kind in NAMED, by name, and every object as bucket/key."""
    iam, s3 = client("iam"), client("s3")
    buckets = {bucket["Name"] for bucket in s3.list_buckets()["Buckets"]}
    return {
        "roles": {role["RoleName"] for role in iam.list_roles()["Roles"]},
        "policies": {policy["PolicyName"] for policy in iam.list_policies(Scope="Local")["Policies"]},
        "instance profiles": {profile["InstanceProfileName"] for profile in iam.list_instance_profiles()["InstanceProfiles"]},
        "schedules": {schedule["Name"] for schedule in client("scheduler").list_schedules()["Schedules"]},
        "clusters": {cluster["Name"] for cluster in client("emr").list_clusters(ClusterStates=ACTIVE_CLUSTER)["Clusters"]},
        "security groups": {group["GroupName"] for group in client("ec2").describe_security_groups()["SecurityGroups"]},
        "buckets": buckets,
        "glue databases": {database["Name"] for database in client("glue").get_databases()["DatabaseList"]},
        "topics": {topic["TopicArn"].rsplit(":", 1)[1] for topic in client("sns").list_topics()["Topics"]},
        "rules": {rule["Name"] for rule in client("events").list_rules()["Rules"]},
        "alarms": {alarm["AlarmName"] for alarm in client("cloudwatch").describe_alarms()["MetricAlarms"]},
        "objects": {f"{bucket}/{item['Key']}" for bucket in buckets
                    for item in s3.list_objects_v2(Bucket=bucket).get("Contents", [])},
    }


def in_state(state: dict, rtype: str) -> list[dict]:
    """Every instance of ``rtype`` in a state file: its address, attributes and dependencies."""
    return [{"address": f"{r['type']}.{r['name']}", **instance} for r in state["resources"]
            if r["mode"] == "managed" and r["type"] == rtype for instance in r["instances"]]


def rehearse(name: str, stack_dir: Path, work: Path) -> Rehearsal:
    stack = json.loads((stack_dir / "cdk.tf.json").read_text())
    rehearsal = Rehearsal(stack, work / "moto.log")
    with moto_server(rehearsal.moto_log) as endpoint:
        client = clients(endpoint, region_of(stack))
        copy = work / name
        shutil.copytree(stack_dir, copy)
        override = {**provide_what_the_stack_expects(stack, client),
                    **provider_override(endpoint, work / "terraform.tfstate")}
        (copy / "override.tf.json").write_text(json.dumps(override, indent=1))

        def run(step: str, *args: str, timeout: int = 600) -> bool:
            rehearsal.steps[step] = run_terraform([step, *args, "-input=false", "-no-color"], copy, timeout=timeout)
            return rehearsal.succeeded(step) or step == "plan" and rehearsal.steps[step].returncode == 2

        if run("init", f"-plugin-dir={PLUGIN_DIR}", timeout=120) and run("apply", "-auto-approve", "-parallelism=20"):
            rehearsal.state = json.loads((work / "terraform.tfstate").read_text())
            rehearsal.after_apply = inventory(client)
            run("plan", "-detailed-exitcode", "-parallelism=20", timeout=300)
            for cluster in in_state(rehearsal.state, "aws_emr_cluster"):
                if cluster["attributes"]["termination_protection"]:
                    rehearsal.protected_clusters.append(cluster["attributes"]["name"])
                    client("emr").set_termination_protection(JobFlowIds=[cluster["attributes"]["id"]],
                                                             TerminationProtected=False)
            if run("destroy", "-auto-approve", "-parallelism=20"):
                rehearsal.after_destroy = inventory(client)
    return rehearsal


@pytest.fixture(scope="module")
def rehearsals(synthesized, tmp_path_factory) -> dict[str, Rehearsal]:
    with ThreadPoolExecutor(len(STACKS)) as pool:
        futures = {name: pool.submit(rehearse, name, synthesized.stack_dir(name), tmp_path_factory.mktemp(name))
                   for name in STACKS}
        return {name: future.result() for name, future in futures.items()}


def report(rehearsal: Rehearsal, step: str) -> str:
    """The end of terraform's output, without the one-line cdk.tf.json it quotes under every diagnostic."""
    if step not in rehearsal.steps:
        return "(not run)"
    result = rehearsal.steps[step]
    lines = [line for line in (result.stdout + result.stderr).splitlines() if len(line) < 500]
    return "\n".join(lines)[-6000:] + f"\n(moto's log: {rehearsal.moto_log})"


@pytest.mark.parametrize("name", STACKS)
def test_the_stack_applies_and_a_second_plan_changes_nothing(rehearsals, name):
    rehearsal = rehearsals[name]
    for step in ("init", "apply"):
        assert rehearsal.succeeded(step), f"terraform {step} failed:\n{report(rehearsal, step)}"
    assert rehearsal.succeeded("plan"), f"the plan after apply is not empty:\n{report(rehearsal, 'plan')}"
    expected = lake_names(rehearsal.stack)
    for kind, names in expected.items():
        assert names <= rehearsal.after_apply[kind], f"{kind} missing after apply: {names - rehearsal.after_apply[kind]}"


@pytest.mark.parametrize("name", STACKS)
def test_destroy_leaves_nothing_of_the_lake(rehearsals, name):
    rehearsal = rehearsals[name]
    assert rehearsal.succeeded("apply"), "nothing to destroy: the apply failed"
    assert rehearsal.succeeded("destroy"), f"terraform destroy failed:\n{report(rehearsal, 'destroy')}"
    for kind, names in lake_names(rehearsal.stack).items():
        assert not names & rehearsal.after_destroy[kind], f"{kind} left after destroy: {names & rehearsal.after_destroy[kind]}"
    if not resources(rehearsal.stack, "aws_s3_bucket"):  # an existing bucket stays, without the lake's objects
        assert rehearsal.stack["output"]["s3_bucket"]["value"] in rehearsal.after_destroy["buckets"]


def test_only_the_complete_example_protects_its_cluster(rehearsals):
    """Its destroy needs the protection off first: EMR refuses to terminate a protected cluster."""
    assert rehearsals["complete"].protected_clusters == ["segment-data-lake-complete"]
    assert rehearsals["segment-data-lake"].protected_clusters == rehearsals["transient"].protected_clusters == []


# moto checks neither order below, so these read the order Terraform applied from the state (the dependencies it
# recorded): an order that holds only by chance of timing would pass on moto and fail on AWS.


@pytest.mark.parametrize("name", STACKS)
def test_schedules_start_after_their_role_may_add_steps(rehearsals, name):
    """EventBridge Scheduler uses the role as soon as a schedule exists; its policy must be attached first."""
    state = rehearsals[name].state
    assert state, "the apply failed"
    attachments = in_state(state, "aws_iam_role_policy_attachment")
    for schedule in in_state(state, "aws_scheduler_schedule"):
        role = schedule["attributes"]["target"][0]["role_arn"].rsplit("/", 1)[1]
        needed = {a["address"] for a in attachments if a["attributes"]["role"] == role}
        assert needed, f"no policy is attached to {role}, the role of {schedule['address']}"
        missing = needed - set(schedule["dependencies"])
        assert not missing, f"{schedule['address']} does not wait for {missing}"


def test_the_flow_log_starts_after_the_bucket_policy_lets_it_deliver(rehearsals):
    """AWS checks the destination bucket's policy when a flow log to S3 is created (and adds its own statements
    to it if they are missing, which the lake's bucket policy would then replace, or be replaced by)."""
    state = rehearsals["complete"].state
    assert state, "the apply failed"
    (flow_log,) = in_state(state, "aws_flow_log")
    bucket = flow_log["attributes"]["log_destination"].split(":::", 1)[1].split("/", 1)[0]
    policies = {p["address"] for p in in_state(state, "aws_s3_bucket_policy") if p["attributes"]["bucket"] == bucket}
    assert policies, f"no bucket policy on {bucket}, the flow log's destination"
    missing = policies - set(flow_log["dependencies"])
    assert not missing, f"the flow log does not wait for {missing}"
