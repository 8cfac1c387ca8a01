"""Set-up mistakes that `terraform plan` catches, each with one line naming the fix, instead of the first cluster
failing to start: a subnet without the tag AmazonEMRServicePolicy_v2 needs, and a subnet whose routes say otherwise
than ``private_subnet``. Planned against moto's server (moto_gaps.py), with the subnets made there as a user's."""
from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from moto_gaps import moto_server, provider_override, terraform_env
from test_terraform import PLUGIN_DIR, terraform

pytestmark = [pytest.mark.constructs, pytest.mark.aws]

REGION = "us-east-1"
EMR_TAG = {"Key": "for-use-with-amazon-emr-managed-policies", "Value": "true"}


def subnet(ec2, *, tagged: bool, to_internet: bool) -> str:
    """A subnet of a VPC of its own; ``to_internet``: its route table routes to an internet gateway."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    tags = [{"ResourceType": "subnet", "Tags": [EMR_TAG]}] if tagged else []
    subnet_id = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", TagSpecifications=tags)["Subnet"]["SubnetId"]
    if to_internet:
        gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
        table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
        ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)
        ec2.associate_route_table(RouteTableId=table, SubnetId=subnet_id)
    return subnet_id


def synth_security(folder: Path, subnet_id: str, private: bool) -> Path:
    """The cluster's security pieces alone (EmrSecurity), synthesized for ``subnet_id``."""
    from cdktf import App, TerraformStack

    from segment_data_lake import EmrSecurity, EmrSecurityProps
    from segment_data_lake.aws import AwsProvider

    app = App(outdir=str(folder))
    stack = TerraformStack(app, "security")
    AwsProvider(stack, "aws", region=REGION)
    EmrSecurity(stack, "Security", props=EmrSecurityProps(subnet_id=subnet_id, private_subnet=private))
    app.synth()
    return folder / "stacks" / "security"


def plan(stack_dir: Path, endpoint: str) -> subprocess.CompletedProcess:
    (stack_dir / "override.tf.json").write_text(json.dumps(provider_override(endpoint, stack_dir / "state")))
    binary, env = terraform(), terraform_env()
    init = subprocess.run([binary, "init", "-input=false", f"-plugin-dir={PLUGIN_DIR}"], cwd=stack_dir, env=env,
                          capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr
    return subprocess.run([binary, "plan", "-input=false", "-no-color"], cwd=stack_dir, env=env, capture_output=True,
                          text=True, timeout=300)


CASES = {  # name: (subnet tagged, routes to the internet, private_subnet, what the plan says or None: it passes)
    "untagged": (False, False, True, "The cluster's subnet lacks the tag for-use-with-amazon-emr-managed-policies=true"),
    "public-said-private": (True, True, True, "routes to an internet gateway, so it is public: set private_subnet=False"),
    "private-said-public": (True, False, False, "has no route to an internet gateway, so it is private: set "
                                                "private_subnet=True"),
    "public": (True, True, False, None),
    "private": (True, False, True, None),
}


def test_the_plan_refuses_a_subnet_emr_cannot_use(tmp_path):
    import boto3

    with moto_server(tmp_path / "moto.log") as endpoint:
        ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=endpoint, aws_access_key_id="testing",
                           aws_secret_access_key="testing")
        folders = {name: synth_security(tmp_path / name, subnet(ec2, tagged=tagged, to_internet=internet), private)
                   for name, (tagged, internet, private, _) in CASES.items()}
        with ThreadPoolExecutor(len(CASES)) as pool:
            results = dict(zip(folders, pool.map(lambda folder: plan(folder, endpoint), folders.values()), strict=True))
    for name, (_, _, _, message) in CASES.items():
        result = results[name]
        said = " ".join((result.stdout + result.stderr).split())
        if message is None:
            assert result.returncode == 0, (name, said[-3000:])
        else:
            assert result.returncode != 0 and message in said, (name, said[-3000:])
