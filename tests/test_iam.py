"""The roles: trust, permissions, names, tags; what each may do judged by an IAM policy evaluator."""
import json

import pytest
from aws_calls import ACCOUNT, REGION
from iam_evaluator import Request, allowed
from role_policies import permissions, resolve, trust
from stack_helpers import as_list, named, policy, resources, statement, synth_small_lake

pytestmark = pytest.mark.constructs

SEGMENT_ROLE = "arn:aws:iam::595280932656:role/segment-datalakes-production-access"


def role(stack, part):
    return named(stack, "aws_iam_role", part)


def attached_policy(stack, role_part, policy_part):
    r = role(stack, role_part)
    document = policy(named(stack, "aws_iam_policy", policy_part))
    # references name resources by their unique id: the construct path with "_" for "/"
    policy_id, role_id = policy_part.replace("/", "_"), role_part.replace("/", "_")
    attachments = [a for a in resources(stack, "aws_iam_role_policy_attachment").values()
                   if policy_id in a["policy_arn"] or policy_part in a["//"]["metadata"]["path"]]
    assert any(a["role"].endswith(".name}") and role_id in a["role"] for a in attachments), attachments
    return r, document


def test_role_names_carry_the_suffix_and_tags(synthesized):
    stack = synthesized.stacks["existing-bucket"]
    names = {r["name"] for r in resources(stack, "aws_iam_role").values()}
    # no vendor role where this module runs the syncs, and no autoscaling role under managed scaling
    assert {"SegmentEMRServiceRole-prod", "SegmentEMRInstanceProfileRole-prod", "SegmentDataLakeSchedulerRole-prod",
            "SegmentS3DestinationRole-prod"} == names
    for r in resources(stack, "aws_iam_role").values():
        assert r["tags"] == {"team": "data", "vendor": "segment"}
    profile = named(stack, "aws_iam_instance_profile", "EmrInstanceProfile")
    assert profile["name"] == "SegmentEMRInstanceProfile-prod"
    assert "EmrInstanceRole" in profile["role"]


def test_vendor_trust_requires_external_id_and_segment_role(synthesized):
    """A US workspace (the default, as in Segment's setup guide) is served by three roles of account 294048959147."""
    trust = policy(role(synthesized.stacks["segment-runs"], "VendorRole"), "assume_role_policy")
    [only_statement] = trust["Statement"]
    assert only_statement["Principal"] == {"AWS": [f"arn:aws:iam::294048959147:role/{name}" for name in (
        "customer-datalakes-prod-admin", "datalakes-aws-worker", "datalakes-customer-service")]}
    assert only_statement["Action"] == "sts:AssumeRole"
    assert only_statement["Condition"] == {"StringEquals": {"sts:ExternalId": ["my-workspace-id"]}}


def test_an_eu_workspace_is_served_by_segments_eu_role():
    from segment_data_lake import DataLakeConfigError, DataLakeRolesProps

    stack = synth_small_lake("eu-workspace", sync_runner="segment", alerts=None, compaction_schedule_expression=None,
                             access=DataLakeRolesProps(external_ids=["ws1"], segment_region="eu"))
    [vendor] = [r for r in resources(stack, "aws_iam_role").values() if r["name"] == "SegmentDataLakeRole"]
    assert policy(vendor, "assume_role_policy")["Statement"][0]["Principal"] == {"AWS": [SEGMENT_ROLE]}
    with pytest.raises(DataLakeConfigError, match="unknown segment_region 'apac': use one of us, eu"):
        DataLakeRolesProps(external_ids=["ws1"], segment_region="apac")


def test_vendor_permissions_are_scoped(synthesized):
    stack = synthesized.stacks["segment-runs"]
    _, document = attached_policy(stack, "VendorRole", "VendorPolicy")
    emr = statement(document, "ManageOnlyClustersTaggedVendorSegment")
    assert set(emr["Action"]) == {"elasticmapreduce:AddJobFlowSteps", "elasticmapreduce:AddTags",
                                  "elasticmapreduce:CancelSteps", "elasticmapreduce:DescribeCluster",
                                  "elasticmapreduce:DescribeStep", "elasticmapreduce:TerminateJobFlows"}
    assert emr["Condition"] == {"StringEquals": {"aws:ResourceTag/vendor": "segment"}}
    deny = statement(document, "NeverAdministerTheBucket")
    assert deny["Effect"] == "Deny" and {"s3:PutBucketPolicy", "s3:DeleteBucket"} <= set(deny["Action"])
    assert not any("athena" in a for s in document["Statement"] for a in as_list(s["Action"]))


BUCKET = "arn:aws:s3:::my-company-segment-data-lake"
GLUE = f"arn:aws:glue:{REGION}:{ACCOUNT}"
CLUSTER = f"arn:aws:elasticmapreduce:{REGION}:{ACCOUNT}:cluster/j-LAKECLUSTER01"


def test_what_segment_does_is_allowed_to_the_vendor_role(synthesized):
    """Segment's documented needs: steps on the tagged cluster, tables and partitions of the lake's databases, the
    bucket read, the stage written, and a cluster started (its roles passed) for a replay."""
    documents = permissions(synthesized.stacks["segment-runs"], "SegmentDataLakeRole")
    tagged = {"aws:ResourceTag/vendor": "segment"}
    for request in [
        Request("elasticmapreduce:AddJobFlowSteps", CLUSTER, tagged),
        Request("elasticmapreduce:RunJobFlow", "*", {"aws:RequestTag/vendor": "segment"}),
        Request("glue:CreateDatabase", f"{GLUE}:database/web_app"),
        Request("glue:CreateTable", f"{GLUE}:table/web_app/pages"),
        Request("glue:BatchCreatePartition", f"{GLUE}:table/web_app/pages"),
        Request("glue:DeleteTable", f"{GLUE}:table/web_app/pages"),
        Request("s3:ListBucket", BUCKET),
        Request("s3:GetObject", f"{BUCKET}/segment-data/data/src/x.parquet"),
        Request("s3:PutObject", f"{BUCKET}/segment-stage/src/run/x.gz"),
        Request("iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/SegmentEMRServiceRole",
                {"iam:PassedToService": "elasticmapreduce.amazonaws.com"}),
        Request("iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/SegmentEMRInstanceProfileRole",
                {"iam:PassedToService": "ec2.amazonaws.com"}),
    ]:
        assert allowed(documents, request), request


# Calls that must be refused, each judged against the synthesized policies of the role that would make it.
MUST_BE_DENIED = [
    (stack, role, Request(action, f"{BUCKET}/{key}"))
    for stack, role in (("segment-data-lake", "SegmentEMRInstanceProfileRole"), ("segment-runs", "SegmentDataLakeRole"))
    for action in ("s3:PutObject", "s3:DeleteObject")
    for key in ("segment-lake-app/abc/run-sync.sh", "segment-lake-replay/lake.json", "segment-logs/src/1/a.gz")
] + [
    (stack, role, Request(action, f"{GLUE}:database/{database}"))
    for stack, role in (("segment-data-lake", "SegmentEMRInstanceProfileRole"), ("segment-runs", "SegmentDataLakeRole"))
    for action in ("glue:CreateDatabase", "glue:DeleteDatabase", "glue:UpdateDatabase")
    for database in ("finance", "default")
] + [
    ("segment-runs", "SegmentDataLakeRole", Request("glue:DeleteTable", f"{GLUE}:table/finance/ledger")),
    ("segment-runs", "SegmentDataLakeRole", Request("iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/SegmentEMRServiceRole",
                                                    {"iam:PassedToService": "ec2.amazonaws.com"})),
    ("segment-runs", "SegmentDataLakeRole", Request("s3:PutBucketPolicy", BUCKET)),
    ("segment-data-lake", "SegmentDataLakeSchedulerRole",
     Request("elasticmapreduce:AddJobFlowSteps", f"arn:aws:elasticmapreduce:{REGION}:{ACCOUNT}:cluster/j-OTHER")),
]


def test_calls_that_must_be_refused_are(synthesized):
    for stack, role_name, request in MUST_BE_DENIED:
        assert not allowed(permissions(synthesized.stacks[stack], role_name), request), (role_name, request)


def test_the_scheduler_role_serves_only_the_lakes_schedule_group(lake):
    document = trust(lake, "SegmentDataLakeSchedulerRole")
    group = f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule-group/segment-lake"
    assume = {"aws:SourceAccount": ACCOUNT}
    assert allowed([document], Request("sts:AssumeRole", principal="scheduler.amazonaws.com",
                                       context={**assume, "aws:SourceArn": group}))
    for other in (f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule-group/default",
                  f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule-group/someone-elses"):
        assert not allowed([document], Request("sts:AssumeRole", principal="scheduler.amazonaws.com",
                                               context={**assume, "aws:SourceArn": other}))
    [group_resource] = resources(lake, "aws_scheduler_schedule_group").values()
    for schedule in resources(lake, "aws_scheduler_schedule").values():
        assert schedule["group_name"].startswith("${aws_scheduler_schedule_group.")
        assert any("PolicyAttachment" in d for d in schedule["depends_on"])
    assert group_resource["name"] == "segment-lake"
    # each schedule's call, as its target sends it: AddJobFlowSteps on the cluster its input names
    documents = permissions(lake, "SegmentDataLakeSchedulerRole")
    for schedule in resources(lake, "aws_scheduler_schedule").values():
        target = schedule["target"]
        assert resolve(lake, target["arn"]) == "arn:aws:scheduler:::aws-sdk:emr:addJobFlowSteps"
        cluster_id = resolve(lake, json.loads(target["input"])["JobFlowId"])
        call = Request("elasticmapreduce:AddJobFlowSteps", f"arn:aws:elasticmapreduce:{REGION}:{ACCOUNT}:cluster/{cluster_id}")
        assert call.resource == CLUSTER and allowed(documents, call)


def test_the_vendor_role_exists_only_where_segment_runs_the_syncs(synthesized):
    for name, stack in synthesized.stacks.items():
        has_vendor = any(r["name"].startswith("SegmentDataLakeRole") for r in resources(stack, "aws_iam_role").values())
        assert has_vendor == (name == "segment-runs"), name


def test_emr_service_role_uses_the_v2_managed_policy_with_source_conditions(lake):
    trust = policy(role(lake, "EmrServiceRole"), "assume_role_policy")["Statement"][0]
    assert trust["Principal"] == {"Service": "elasticmapreduce.amazonaws.com"}
    assert "aws:SourceAccount" in trust["Condition"]["StringEquals"]
    assert trust["Condition"]["ArnLike"]["aws:SourceArn"].startswith("arn:${data.aws_partition.")
    managed = named(lake, "aws_iam_role_policy_attachment", "EmrServiceManagedPolicy")
    assert managed["policy_arn"].endswith(":iam::aws:policy/service-role/AmazonEMRServicePolicy_v2")
    _, pass_role = attached_policy(lake, "EmrServiceRole", "EmrServicePassRolePolicy")
    [grant] = pass_role["Statement"]
    assert grant["Action"] == "iam:PassRole" and "EmrInstanceRole" in grant["Resource"]
    # The legacy inline policy with broad EC2/IAM/S3 actions is gone.
    assert not [p for p in resources(lake, "aws_iam_role_policy")]


def test_emr_instance_role_reaches_only_this_bucket_glue_and_metrics(lake):
    trust_statement = policy(role(lake, "EmrInstanceRole"), "assume_role_policy")["Statement"][0]
    assert trust_statement["Principal"] == {"Service": "ec2.amazonaws.com"}
    _, document = attached_policy(lake, "EmrInstanceRole", "EmrInstancePolicy")
    metrics = statement(document, "PublishClusterMetrics")
    assert metrics["Action"] == "cloudwatch:PutMetricData" and "cloudwatch:namespace" in metrics["Condition"]["StringLike"]
    assert not [s for s in document["Statement"] if any(a.startswith("kms:") for a in as_list(s["Action"]))]
    # the cluster's key, granted by the cluster to the nodes (grant_key_use)
    _, key = attached_policy(lake, "EmrInstanceRole", "Roles/ClusterKeyPolicy")
    [use] = key["Statement"]
    assert set(use["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"} and use["Resource"].startswith("${aws_kms_key.")


BUCKET_KEY = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def test_a_bucket_key_is_granted_to_the_nodes_and_segments_s3_destination(synthesized):
    stack = synthesized.stacks["staging-and-prod"]
    key_grants = {p["name"]: policy(p)["Statement"][0]["Resource"] for p in resources(stack, "aws_iam_policy").values()
                  if "Key" in p["name"]}
    assert key_grants == {
        "SegmentDataLakeClusterKeyPolicy-prod": key_grants["SegmentDataLakeClusterKeyPolicy-prod"],
        "SegmentDataLakeClusterKeyPolicy-staging": key_grants["SegmentDataLakeClusterKeyPolicy-staging"],
        "SegmentDataLakeBucketKeyPolicy-prod": BUCKET_KEY, "SegmentS3DestinationKeyPolicy-prod": BUCKET_KEY}
    for lake in ("Prod", "Staging"):
        assert key_grants[f"SegmentDataLakeClusterKeyPolicy-{lake.lower()}"].startswith("${aws_kms_key.")
        attached_policy(stack, f"{lake}/Roles/EmrInstanceRole", f"{lake}/Roles/ClusterKeyPolicy")
    attached_policy(stack, "Prod/Roles/EmrInstanceRole", "Prod/Roles/BucketKeyPolicy")
    attached_policy(stack, "Prod/S3Destination/Role", "Prod/S3Destination/KeyPolicy")


def test_segments_s3_destination_may_only_put_raw_events(lake):
    trust = policy(role(lake, "S3Destination/Role"), "assume_role_policy")
    assert trust["Statement"] == [{
        "Sid": "AssumedBySegmentsS3DestinationWithTheWorkspaceId", "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::595280932656:role/segment-s3-integration-production-access"},
        "Action": "sts:AssumeRole", "Condition": {"StringEquals": {"sts:ExternalId": "my-workspace-id"}}}]
    _, document = attached_policy(lake, "S3Destination/Role", "S3Destination/Policy")
    assert document["Statement"] == [{
        "Sid": "PutRawEventsUnderSegmentLogs", "Effect": "Allow", "Action": ["s3:PutObject", "s3:PutObjectAcl"],
        "Resource": "arn:${{data.aws_partition.{}.partition}}:s3:::my-company-segment-data-lake/segment-logs/*".format(
            next(iter(lake["data"]["aws_partition"])))}]
    assert lake["output"]["s3_destination_role_arn"]["value"] == "${%s.arn}" % (
        "aws_iam_role." + [n for n in resources(lake, "aws_iam_role") if "S3Destination_Role" in n][0])


def test_no_allow_statement_uses_wildcard_actions_on_every_resource(synthesized):
    for name, stack in synthesized.stacks.items():
        for resource in resources(stack, "aws_iam_policy").values():
            for s in policy(resource)["Statement"]:
                if s["Effect"] == "Allow" and "*" in as_list(s["Resource"]):
                    assert all(a != "*" and not a.endswith(":*") for a in as_list(s["Action"])), (name, s)


def test_with_a_schedule_key_the_scheduler_role_may_decrypt_with_it_alone():
    """Scheduler decrypts a schedule's target with the schedule's customer key, as the schedule's role."""
    from segment_data_lake import EmrSecurity

    key = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    synthesized = synth_small_lake("schedule-key", schedule_kms_key=lambda stack: EmrSecurity.from_key_arn(
        stack, "ScheduleKey", key))
    assert all(s["kms_key_arn"] == key for s in resources(synthesized, "aws_scheduler_schedule").values())
    documents = permissions(synthesized, "SegmentDataLakeSchedulerRole")
    assert allowed(documents, Request("kms:Decrypt", key))
    assert not allowed(documents, Request("kms:Decrypt", key.replace("1234abcd", "99999999")))
