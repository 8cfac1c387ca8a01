"""The four roles: trust, permissions, names, tags."""
from stack_helpers import as_list, named, policy, resources, statement

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
    assert {"SegmentDataLakeRole-prod", "SegmentEMRServiceRole-prod", "SegmentEMRInstanceProfileRole-prod",
            "SegmentEMRAutoscalingRole-prod", "SegmentDataLakeSchedulerRole-prod", "SegmentS3DestinationRole-prod"} == names
    for r in resources(stack, "aws_iam_role").values():
        assert r["tags"] == {"team": "data", "vendor": "segment"}
    profile = named(stack, "aws_iam_instance_profile", "EmrInstanceProfile")
    assert profile["name"] == "SegmentEMRInstanceProfile-prod"
    assert "EmrInstanceRole" in profile["role"]


def test_vendor_trust_requires_external_id_and_segment_role(lake):
    trust = policy(role(lake, "VendorRole"), "assume_role_policy")
    [only_statement] = trust["Statement"]
    assert only_statement["Principal"] == {"AWS": [SEGMENT_ROLE]}
    assert only_statement["Action"] == "sts:AssumeRole"
    assert only_statement["Condition"] == {"StringEquals": {"sts:ExternalId": ["my-workspace-id"]}}


def test_vendor_trust_lists_every_external_id(synthesized):
    trust = policy(role(synthesized.stacks["complete"], "VendorRole"), "assume_role_policy")
    assert trust["Statement"][0]["Condition"]["StringEquals"]["sts:ExternalId"] == ["acmeworkspace123", "acmestaging456"]


def test_vendor_permissions_are_scoped(lake):
    _, document = attached_policy(lake, "VendorRole", "VendorPolicy")
    emr = statement(document, "ManageOnlyClustersTaggedVendorSegment")
    assert set(emr["Action"]) == {"elasticmapreduce:AddJobFlowSteps", "elasticmapreduce:AddTags",
                                  "elasticmapreduce:CancelSteps", "elasticmapreduce:DescribeCluster",
                                  "elasticmapreduce:DescribeStep", "elasticmapreduce:TerminateJobFlows"}
    assert emr["Condition"] == {"StringEquals": {"aws:ResourceTag/vendor": "segment"}}
    assert ":elasticmapreduce:" in emr["Resource"] and emr["Resource"].endswith(":cluster/*")
    launch = statement(document, "LaunchOnlyClustersTaggedVendorSegment")
    assert launch["Action"] == "elasticmapreduce:RunJobFlow"
    assert launch["Condition"] == {"StringEquals": {"aws:RequestTag/vendor": "segment"}}

    glue = statement(document, "GlueCatalogOfThisAccountAndRegion")
    for arn in glue["Resource"]:
        assert "${data.aws_region." in arn and "${data.aws_caller_identity." in arn, arn
    assert {"glue:CreateTable", "glue:BatchCreatePartition", "glue:GetPartitions",
            "glue:BatchDeleteTableVersion"} <= set(glue["Action"])

    [partition] = lake["data"]["aws_partition"]
    bucket_arn = f"arn:${{data.aws_partition.{partition}.partition}}:s3:::my-company-segment-data-lake"
    s3_allows = [s for s in document["Statement"] if s["Effect"] == "Allow" and
                 any(a.startswith("s3:") for a in as_list(s["Action"]))]
    for s in s3_allows:
        assert all(a != "s3:*" and "*" not in a for a in as_list(s["Action"]))
        assert all(r in (bucket_arn, bucket_arn + "/*") for r in as_list(s["Resource"]))
    deny = statement(document, "NeverAdministerTheBucket")
    assert deny["Effect"] == "Deny"
    assert {"s3:PutBucketPolicy", "s3:DeleteBucketPolicy", "s3:PutBucketAcl", "s3:PutEncryptionConfiguration",
            "s3:PutBucketVersioning", "s3:PutReplicationConfiguration", "s3:DeleteBucket"} <= set(deny["Action"])
    assert deny["Resource"] == [bucket_arn, bucket_arn + "/*"]

    pass_role = statement(document, "PassOnlyTheDataLakeEmrRoles")
    assert pass_role["Action"] == "iam:PassRole"
    assert sorted(pass_role["Resource"]) == sorted(
        f"${{aws_iam_role.{name}.arn}}" for name in resources(lake, "aws_iam_role")
        if any(part in name for part in ("EmrServiceRole", "EmrInstanceRole", "EmrAutoscalingRole")))
    assert not any("athena" in a for s in document["Statement"] for a in as_list(s["Action"]))


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
    trust = policy(role(lake, "EmrInstanceRole"), "assume_role_policy")["Statement"][0]
    assert trust["Principal"] == {"Service": "ec2.amazonaws.com"}
    _, document = attached_policy(lake, "EmrInstanceRole", "EmrInstancePolicy")
    objects = statement(document, "ReadAndWriteLakeObjects")
    assert objects["Resource"].endswith(":s3:::my-company-segment-data-lake/*")
    glue = statement(document, "SyncTheGlueCatalog")
    assert {"glue:CreateTable", "glue:UpdateTable", "glue:BatchCreatePartition", "glue:GetTable"} <= set(glue["Action"])
    metrics = statement(document, "PublishClusterMetrics")
    assert metrics["Action"] == "cloudwatch:PutMetricData" and "cloudwatch:namespace" in metrics["Condition"]["StringLike"]
    assert not [s for s in document["Statement"] if any(a.startswith("kms:") for a in as_list(s["Action"]))]
    # the cluster's key, granted by the cluster to the nodes and the vendor (grant_key_use)
    _, key = attached_policy(lake, "EmrInstanceRole", "Roles/ClusterKeyPolicy")
    attached_policy(lake, "VendorRole", "Roles/ClusterKeyPolicy")
    [use] = key["Statement"]
    assert set(use["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"} and use["Resource"].startswith("${aws_kms_key.")


BUCKET_KEY = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def test_a_bucket_key_is_granted_to_the_nodes_the_vendor_and_segments_s3_destination(synthesized):
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
        attached_policy(stack, f"{lake}/Roles/VendorRole", f"{lake}/Roles/ClusterKeyPolicy")
    attached_policy(stack, "Prod/Roles/EmrInstanceRole", "Prod/Roles/BucketKeyPolicy")
    attached_policy(stack, "Prod/Roles/VendorRole", "Prod/Roles/BucketKeyPolicy")
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


def test_the_vendor_role_may_delete_tables_in_batches(lake):
    _, document = attached_policy(lake, "VendorRole", "VendorPolicy")
    assert "glue:BatchDeleteTable" in statement(document, "GlueCatalogOfThisAccountAndRegion")["Action"]


def test_autoscaling_role(lake):
    trust = policy(role(lake, "EmrAutoscalingRole"), "assume_role_policy")["Statement"][0]
    assert set(trust["Principal"]["Service"]) == {"application-autoscaling.amazonaws.com",
                                                  "elasticmapreduce.amazonaws.com"}
    _, document = attached_policy(lake, "EmrAutoscalingRole", "EmrAutoscalingPolicy")
    resize = statement(document, "ResizeOnlyClustersTaggedVendorSegment")
    assert set(resize["Action"]) == {"elasticmapreduce:ListInstanceGroups", "elasticmapreduce:ModifyInstanceGroups"}


def test_no_allow_statement_uses_wildcard_actions_on_every_resource(synthesized):
    for name, stack in synthesized.stacks.items():
        for resource in resources(stack, "aws_iam_policy").values():
            for s in policy(resource)["Statement"]:
                if s["Effect"] == "Allow" and "*" in as_list(s["Resource"]):
                    assert all(a != "*" and not a.endswith(":*") for a in as_list(s["Action"])), (name, s)
