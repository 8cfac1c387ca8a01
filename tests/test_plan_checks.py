"""Set-up mistakes that `terraform plan` catches, each with one line naming the fix, instead of the first cluster
failing to start: a subnet or a brought security group without the tag AmazonEMRServicePolicy_v2 needs, a brought
node group that lets no HTTPS out, and a subnet whose routes (its own table's, or the VPC's main table's) say
otherwise than ``private_subnet``. Planned against
moto's server (moto_gaps.py), with the subnets and groups made there as a user's."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from moto_gaps import moto_server, provider_override
from terraform_cli import PLUGIN_DIR, run_terraform

pytestmark = [pytest.mark.constructs, pytest.mark.aws]

REGION = "us-east-1"
EMR_TAG = {"Key": "for-use-with-amazon-emr-managed-policies", "Value": "true"}


def subnet(ec2, *, tagged: bool, to_internet: str | None) -> tuple[str, str]:
    """A subnet of a VPC of its own, and the VPC; ``to_internet``: which route table routes to an internet gateway,
    ``"own"`` (a table of the subnet's) or ``"main"`` (the VPC's main table, which the subnet then uses)."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    tags = [{"ResourceType": "subnet", "Tags": [EMR_TAG]}] if tagged else []
    subnet_id = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", TagSpecifications=tags)["Subnet"]["SubnetId"]
    if to_internet:
        gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
        if to_internet == "own":
            table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
            ec2.associate_route_table(RouteTableId=table, SubnetId=subnet_id)
        else:
            [main] = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]},
                                                        {"Name": "association.main", "Values": ["true"]}])["RouteTables"]
            table = main["RouteTableId"]
        ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)
    return subnet_id, vpc


def synth_security(folder: Path, cases: dict[str, tuple[str, bool, dict[str, str] | None]]) -> Path:
    """The cluster's security pieces alone (EmrSecurity), one per case: its name, ``(subnet_id, private_subnet,
    brought groups: their ids by role)``, synthesized in one stack to plan together."""
    from cdktf import App, TerraformStack

    from segment_data_lake import EmrSecurity, EmrSecurityProps
    from segment_data_lake.aws import AwsProvider

    app = App(outdir=str(folder))
    stack = TerraformStack(app, "security")
    AwsProvider(stack, "aws", region=REGION)
    for name, (subnet_id, private, groups) in cases.items():
        brought = EmrSecurity.from_security_group_ids(stack, f"Brought-{name}", **groups) if groups else None
        EmrSecurity(stack, f"Security-{name}", props=EmrSecurityProps(subnet_id=subnet_id, private_subnet=private,
                                                                      managed_security_groups=brought))
    app.synth()
    return folder / "stacks" / "security"


def plan(stack_dir: Path, endpoint: str) -> list[dict]:
    """The plan's error diagnostics (terraform plan -json), each with the address it is about."""
    (stack_dir / "override.tf.json").write_text(json.dumps(provider_override(endpoint, stack_dir / "state")))
    init = run_terraform(["init", "-input=false", f"-plugin-dir={PLUGIN_DIR}"], stack_dir, timeout=120)
    assert init.returncode == 0, init.stderr
    planned = run_terraform(["plan", "-input=false", "-json"], stack_dir)
    messages = [json.loads(line) for line in planned.stdout.splitlines() if line.startswith("{")]
    errors = [m["diagnostic"] for m in messages if m.get("type") == "diagnostic" and m["diagnostic"]["severity"] == "error"]
    assert (planned.returncode != 0) == bool(errors), planned.stdout[-3000:] + planned.stderr[-3000:]
    return errors


PUBLIC_SAID_PRIVATE = "routes to an internet gateway, so it is public: set private_subnet=False"
CASES = {  # name: (subnet tagged, which table routes to the internet, private_subnet, groups brought (tagged or not),
    # what the plan says or None: it passes)
    "untagged": (False, None, True, None, "The cluster's subnet lacks the tag for-use-with-amazon-emr-managed-policies"),
    "public-said-private": (True, "own", True, None, PUBLIC_SAID_PRIVATE),
    "main-table-public-said-private": (True, "main", True, None, PUBLIC_SAID_PRIVATE),
    "private-said-public": (True, None, False, None, "has no route to an internet gateway, so it is private: set "
                                                     "private_subnet=True"),
    "public": (True, "own", False, None, None),
    "private": (True, None, True, None, None),
    "brought-groups-untagged": (True, None, True, False, "The brought core_task security group lacks the tag "
                                                         "for-use-with-amazon-emr-managed-policies=true"),
    "brought-groups": (True, None, True, True, None),
    "brought-groups-no-https": (True, None, True, "no-https", "The brought master security group has no outbound "
                                                              "rule for HTTPS (TCP 443)"),
    "brought-groups-https-only": (True, None, True, "https-only", None),
}


def groups(ec2, vpc: str, tagged: bool | str) -> dict[str, str]:
    """Three groups of the VPC, to bring as the cluster's, with AWS's allow-all outbound rule; the core/task one
    untagged unless ``tagged``; with ``tagged="no-https"``, the master's outbound rules are only SSH and all UDP (and an
    inbound 443 rule, which does not count), with ``"https-only"`` only TCP 443."""
    made = {}
    for role in ("master", "core_task", "service_access"):
        tags = [{"ResourceType": "security-group", "Tags": [EMR_TAG]}] if tagged or role != "core_task" else []
        made[role] = ec2.create_security_group(GroupName=f"emr-{role}", Description=role, VpcId=vpc,
                                               TagSpecifications=tags)["GroupId"]
    everywhere = [{"CidrIp": "0.0.0.0/0"}]
    if tagged in ("no-https", "https-only"):
        ec2.revoke_security_group_egress(GroupId=made["master"], IpPermissions=[
            {"IpProtocol": "-1", "IpRanges": everywhere}])
    if tagged == "no-https":
        ec2.authorize_security_group_egress(GroupId=made["master"], IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": everywhere},
            {"IpProtocol": "udp", "FromPort": 0, "ToPort": 65535, "IpRanges": everywhere}])
        ec2.authorize_security_group_ingress(GroupId=made["master"], IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": everywhere}])
    if tagged == "https-only":
        ec2.authorize_security_group_egress(GroupId=made["master"], IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": everywhere}])
    return made


def test_the_plan_refuses_a_subnet_emr_cannot_use(tmp_path):
    import boto3

    # every case in one stack and one plan: terraform reports each failing check, and plans the rest
    with moto_server(tmp_path / "moto.log") as endpoint:
        ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=endpoint, aws_access_key_id="testing",
                           aws_secret_access_key="testing")
        cases = {}
        for name, (tagged, internet, private, tagged_groups, _) in CASES.items():
            subnet_id, vpc = subnet(ec2, tagged=tagged, to_internet=internet)
            cases[name] = (subnet_id, private, None if tagged_groups is None else groups(ec2, vpc, tagged_groups))
        errors = plan(synth_security(tmp_path / "stack", cases), endpoint)
    said: dict[str, list[str]] = {name: [] for name in CASES}
    for error in errors:
        address = error.get("address") or error.get("snippet", {}).get("context") or ""
        owners = [name for name in CASES if f"Security-{name}_" in address or f"Brought-{name}_" in address]
        assert len(owners) == 1, f"an error of no single case ({address}): {error['summary']}: {error.get('detail')}"
        said[owners[0]].append(" ".join(error.get("detail", "").split()))
    for name, (*_, message) in CASES.items():
        if message is None:
            assert not said[name], (name, said[name])
        else:
            assert said[name] and all(message in detail for detail in said[name]), (name, said[name])
