"""The network a cluster of the lake starts in, proven from the synthesized stacks (network_reach.py): moto enforces
no security group, so the deploy rehearsal cannot see a node that cannot reach S3. Every cluster of every example
stack (the always-on cluster, each schedule's transient cluster, the replay template's) must reach S3, Glue, STS,
KMS, CloudWatch and EMR on HTTPS, its other nodes on every port, and EMR's service access on its ports."""
import pytest
from network_reach import clusters, unreachable
from stack_helpers import resources, synth_small_lake

pytestmark = pytest.mark.constructs


def test_every_cluster_of_every_stack_reaches_what_it_calls(synthesized):
    judged, brought = [], []
    for name, stack in synthesized.stacks.items():
        for cluster in clusters(stack):
            if cluster.brought:  # their rules are not in the stack: docs/constructs.md says what they need
                brought.append(name)
                continue
            judged.append(cluster.where)
            assert unreachable(stack, cluster) == [], name
    assert set(brought) == {"bring-your-own"}
    # the always-on cluster, the transient clusters' schedules (sync, compaction) and a replay template
    assert {where.split(".")[0] for where in judged} == {"aws_emr_cluster", "aws_scheduler_schedule", "aws_s3_object"}


def test_the_private_subnet_of_the_complete_example_reaches_aws_only_through_its_endpoints(synthesized):
    """examples/complete has no NAT: S3 through the gateway endpoint, everything else through interface endpoints
    whose group lets the VPC in on 443; taking that ingress away is noticed."""
    stack = synthesized.stacks["complete"]
    [cluster] = [c for c in clusters(stack) if c.where.startswith("aws_emr_cluster")]
    assert unreachable(stack, cluster) == []
    [endpoints] = [group for group in resources(stack, "aws_security_group").values()
                   if group["name"] == "segment-data-lake-endpoints"]
    ingress = endpoints.pop("ingress")
    try:
        problems = unreachable(stack, cluster)
    finally:
        endpoints["ingress"] = ingress
    assert len(problems) == 2 * 5 and not any("reach s3" in p for p in problems), problems


def test_a_public_subnet_has_no_service_access_group_and_still_reaches_everything():
    from segment_data_lake import EmrClusterProps, EmrSecurityProps

    stack = synth_small_lake("public-subnet", cluster_mode="transient", cluster=EmrClusterProps(
        security=EmrSecurityProps(subnet_id="subnet-0123456789abcdef0", private_subnet=False)))
    names = {group["name"] for group in resources(stack, "aws_security_group").values()}
    assert names == {"segment-data-lake-master", "segment-data-lake-core-task"}
    for cluster in clusters(stack):
        assert cluster.service_access is None and unreachable(stack, cluster) == []
