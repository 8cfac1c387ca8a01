"""The first tick of every schedule, and the first start of every cluster, come after what they use: proven on the
synthesized dependency graph (``depends_on`` and references), since moto answers at once and Terraform creates
whatever it is not told to wait for at the same time. A ``rate(...)`` schedule fires as soon as it exists; a
cluster starts bootstrapping as soon as it is created.

What each uses: the policy attachments of the roles it runs as (the scheduler's role; the EMR service role; the
nodes' role, through their instance profile), the rules of its security groups, the lake bucket's policy, Lake
Formation's registration of the bucket (and its role's policy) and its grants to those roles (the keys' policies are
part of the keys)."""
import json
import re

import pytest
from network_reach import ClusterNetwork, address, clusters
from stack_helpers import resources

pytestmark = pytest.mark.constructs

_REFERENCE = re.compile(r"\$\{(?:data\.)?([a-z0-9_]+)\.([A-Za-z0-9_-]+)\.[a-z0-9_]+")


def graph(stack: dict) -> dict[str, set[str]]:
    """Each resource's address to the addresses it depends on directly."""
    edges = {}
    for rtype, named in stack.get("resource", {}).items():
        for name, config in named.items():
            text = json.dumps({k: v for k, v in config.items() if k != "depends_on"})
            edges[f"{rtype}.{name}"] = {f"{t}.{n}" for t, n in _REFERENCE.findall(text)} | set(
                config.get("depends_on", []))
    return edges


def before(edges: dict[str, set[str]], where: str) -> set[str]:
    """Everything Terraform creates before the resource at ``where``."""
    seen, todo = set(), [where]
    while todo:
        for dependency in edges.get(todo.pop(), ()):
            if dependency not in seen:
                seen.add(dependency)
                todo.append(dependency)
    return seen


def roles_of(stack: dict, cluster: ClusterNetwork) -> set[str]:
    """The roles a cluster runs as: its service role and its nodes' (through the instance profile), as addresses
    (or the names of brought ones)."""
    roles = {cluster.service_role}
    if cluster.instance_profile.startswith("aws_iam_instance_profile."):
        profile = resources(stack, "aws_iam_instance_profile")[cluster.instance_profile.split(".", 1)[1]]
        roles.add(address(profile["role"]))
    return roles


def attachments_of(stack: dict, roles: set[str]) -> set[str]:
    return {f"aws_iam_role_policy_attachment.{name}" for name, attachment in
            resources(stack, "aws_iam_role_policy_attachment").items() if address(attachment["role"]) in roles}


def used(stack: dict, roles: set[str], groups: set[str], syncs: bool, config: str = "") -> set[str]:
    """The resources a cluster running as ``roles`` in ``groups`` uses at its start (and, when it ``syncs``,
    at its first sync, of the bucket ``config`` names)."""
    needed = attachments_of(stack, roles)
    needed |= {f"{rtype}.{name}" for rtype in ("aws_vpc_security_group_egress_rule", "aws_vpc_security_group_ingress_rule")
               for name, rule in resources(stack, rtype).items() if address(rule["security_group_id"]) in groups}
    if syncs:
        needed |= {f"aws_s3_bucket_policy.{name}" for name, policy in resources(stack, "aws_s3_bucket_policy").items()
                   if policy["bucket"] in config}
        locations = resources(stack, "aws_lakeformation_resource")
        needed |= {f"aws_lakeformation_resource.{name}" for name in locations}
        needed |= attachments_of(stack, {address(location.get("role_arn", "")) for location in locations.values()})
        needed |= {f"aws_lakeformation_permissions.{name}" for name, grant in
                   resources(stack, "aws_lakeformation_permissions").items() if address(grant["principal"]) in roles}
    return needed


def first_runs(stack: dict):
    """(address, roles, groups, whether it syncs, its request) of every cluster resource and schedule (a replay
    cluster starts when an operator asks, long after the apply)."""
    found = {cluster.where: cluster for cluster in clusters(stack)}
    for where, cluster in found.items():
        if where.startswith("aws_emr_cluster."):
            yield where, roles_of(stack, cluster), cluster.groups, False, ""
    for name, schedule in resources(stack, "aws_scheduler_schedule").items():
        where = f"aws_scheduler_schedule.{name}"
        request = schedule["target"]["input"]
        # a schedule that adds steps to the always-on cluster runs on that cluster's network and roles
        cluster = found.get(where) or found[address(json.loads(request)["JobFlowId"])]
        yield (where, roles_of(stack, cluster) | {address(schedule["target"]["role_arn"])}, cluster.groups, True,
               request)


def test_every_schedule_and_cluster_comes_after_what_its_first_run_uses(synthesized):
    checked = 0
    for name, stack in synthesized.stacks.items():
        edges = graph(stack)
        for where, roles, groups, syncs, config in first_runs(stack):
            missing = used(stack, roles, groups, syncs, config) - before(edges, where)
            assert not missing, f"{name}: {where} may start before {sorted(missing)}"
            checked += 1
    assert checked >= 15


def test_the_proof_sees_what_a_schedule_needs(synthesized):
    """The schedules of the Lake Formation stack wait for the grants of the nodes' role and for the registration;
    the transient clusters' schedules for the nodes' policies and network rules."""
    stack = synthesized.stacks["lake-formation"]
    edges = graph(stack)
    schedule = next(f"aws_scheduler_schedule.{n}" for n in resources(stack, "aws_scheduler_schedule"))
    waits = before(edges, schedule)
    assert any(a.startswith("aws_lakeformation_permissions.") and "EmrInstanceRole" in a for a in waits)
    assert any(a.startswith("aws_lakeformation_resource.") for a in waits)
    transient = synthesized.stacks["transient"]
    sync = next(f"aws_scheduler_schedule.{n}" for n, s in resources(transient, "aws_scheduler_schedule").items()
                if s["name"].startswith("segment-lake.sync"))
    waits = before(graph(transient), sync)
    assert any(a.startswith("aws_vpc_security_group_egress_rule.") for a in waits)
    assert any("EmrInstancePolicyAttachment" in a for a in waits)
