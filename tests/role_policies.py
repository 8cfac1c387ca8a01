"""The synthesized policies of a role, as AWS would hold them after an apply: every Terraform reference the
documents make resolved to the value the resource would have in account ACCOUNT and region REGION (a role's ARN
from its name, the cluster's ARN, a schedule group's ARN from its name), so that a policy evaluator can judge
real requests against them. A reference this module cannot resolve fails the test that meets it."""
from __future__ import annotations

import json
import re

from aws_calls import ACCOUNT, REGION
from stack_helpers import resources

CLUSTER_ID = "j-LAKECLUSTER01"
_REFERENCE = re.compile(r"\$\{(?:data\.)?([a-z0-9_]+)\.([A-Za-z0-9_-]+)\.([a-z0-9_]+)\}")
_DATA = {"aws_partition.partition": "aws", "aws_region.name": REGION, "aws_caller_identity.account_id": ACCOUNT}


def resolve(stack: dict, text: str) -> str:
    def value(match: re.Match) -> str:
        rtype, name, attribute = match.groups()
        if f"{rtype}.{attribute}" in _DATA:
            return _DATA[f"{rtype}.{attribute}"]
        resource = resources(stack, rtype).get(name, {})
        arn = {"aws_iam_role": lambda: f"arn:aws:iam::{ACCOUNT}:role/{resource['name']}",
               "aws_emr_cluster": lambda: f"arn:aws:elasticmapreduce:{REGION}:{ACCOUNT}:cluster/{CLUSTER_ID}",
               "aws_scheduler_schedule_group":
                   lambda: f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule-group/{resource['name']}",
               "aws_kms_key": lambda: f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{name}",
               "aws_s3_bucket": lambda: f"arn:aws:s3:::{resource['bucket']}",
               "aws_sns_topic": lambda: f"arn:aws:sns:{REGION}:{ACCOUNT}:{resource['name']}",
               "aws_cloudwatch_event_rule": lambda: f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{resource['name']}"}
        if attribute == "arn" and rtype in arn and (resource or rtype == "aws_kms_key"):
            return arn[rtype]()
        if attribute in ("name", "id") and resource.get("name") and rtype != "aws_emr_cluster":
            return resource["name"]
        if rtype == "aws_emr_cluster" and attribute == "id":
            return CLUSTER_ID
        raise AssertionError(f"cannot resolve {match.group(0)} for a policy evaluation")

    return _REFERENCE.sub(value, text)


def role_id(stack: dict, role_name: str) -> str:
    """The Terraform name of the role called ``role_name`` (without a suffix, the stacks' own)."""
    found = [key for key, role in resources(stack, "aws_iam_role").items() if role["name"] == role_name]
    assert found, f"no role {role_name} in the stack"
    return found[0]


def permissions(stack: dict, role_name: str) -> list[dict]:
    """Every policy document attached to the role, resolved."""
    rid = role_id(stack, role_name)
    documents = []
    for attachment in resources(stack, "aws_iam_role_policy_attachment").values():
        if f"aws_iam_role.{rid}." not in attachment["role"]:
            continue
        policy = re.search(r"aws_iam_policy\.([^.]+)\.arn", attachment["policy_arn"])
        if policy:  # AWS managed policies (the EMR service role's) are not the stack's to judge
            documents.append(json.loads(resolve(stack, resources(stack, "aws_iam_policy")[policy[1]]["policy"])))
    return documents


def trust(stack: dict, role_name: str) -> dict:
    return json.loads(resolve(stack, resources(stack, "aws_iam_role")[role_id(stack, role_name)]["assume_role_policy"]))


def policy_document(stack: dict, policy_name: str) -> dict:
    """A policy that is attached to no role of the stack (the replay launcher's), resolved."""
    [policy] = [p for p in resources(stack, "aws_iam_policy").values() if p["name"] == policy_name]
    return json.loads(resolve(stack, policy["policy"]))
