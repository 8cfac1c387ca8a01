"""Glue databases, Lake Formation grants and the outputs a user copies into Segment."""
from stack_helpers import resources

# segment_vendor_role_arn only where Segment runs the syncs
SETTINGS_OUTPUTS = {"aws_region", "emr_cluster_id", "glue_catalog_id", "s3_bucket", "glue_database_names",
                    "emr_instance_profile_name", "emr_instance_profile_role_arn", "emr_service_role_name", "sync_runner",
                    "s3_destination_role_arn"}


def test_databases_are_optional(lake, synthesized):
    assert resources(lake, "aws_glue_catalog_database") == {}
    shared = resources(synthesized.stacks["shared-database"], "aws_glue_catalog_database")
    assert [d["name"] for d in shared.values()] == ["acme"]
    complete = resources(synthesized.stacks["complete"], "aws_glue_catalog_database")
    assert sorted(d["name"] for d in complete.values()) == ["acme_backend", "acme_web"]


def test_lake_formation_grants_go_to_role_arns(synthesized):
    grants = list(resources(synthesized.stacks["complete"], "aws_lakeformation_permissions").values())
    principals = {g["principal"] for g in grants}
    assert all(p.startswith("${aws_iam_role.") and p.endswith(".arn}") for p in principals)
    assert len(principals) == 1  # the EMR instance role (Segment runs nothing here, so no vendor role)
    on_catalog = [g for g in grants if g.get("catalog_resource")]
    assert {tuple(g["permissions"]) for g in on_catalog} == {("CREATE_DATABASE",)}
    on_databases = {(g["principal"], g["database"]["name"]) for g in grants if "database" in g}
    assert on_databases == {(p, db) for p in principals for db in ("acme_web", "acme_backend")}
    on_tables = [g for g in grants if "table" in g]
    assert all(g["table"]["wildcard"] is True and g["permissions"] == ["ALL"] for g in on_tables)
    assert len(on_tables) == 2
    assert resources(synthesized.stacks["segment-data-lake"], "aws_lakeformation_permissions") == {}


def test_several_lakes_in_a_stack_keep_all_their_outputs(synthesized):
    outputs = synthesized.stacks["staging-and-prod"]["output"]
    assert set(outputs) == {f"{lake}_{name}" for lake in ("prod", "staging") for name in SETTINGS_OUTPUTS}
    assert outputs["prod_s3_bucket"]["value"].startswith("${aws_s3_bucket.Prod_Bucket_")
    assert outputs["staging_s3_bucket"]["value"].startswith("${aws_s3_bucket.Staging_Bucket_")
    assert outputs["prod_emr_cluster_id"]["value"] != outputs["staging_emr_cluster_id"]["value"]


def test_outputs_have_static_names(synthesized):
    for name, stack in synthesized.stacks.items():
        if name != "staging-and-prod":  # one lake per stack
            replay = {"replay_cluster_template_uri", "replay_launcher_policy_arn"} if name == "complete" else set()
            vendor = {"segment_vendor_role_arn"} if name == "segment-runs" else set()
            assert set(stack["output"]) == SETTINGS_OUTPUTS | replay | vendor, name
    outputs = synthesized.stacks["segment-runs"]["output"]
    assert outputs["s3_bucket"]["value"] == "my-company-segment-data-lake"
    assert outputs["emr_cluster_id"]["value"].startswith("${aws_emr_cluster.")
    assert outputs["segment_vendor_role_arn"]["value"].startswith("${aws_iam_role.") and "VendorRole" in outputs[
        "segment_vendor_role_arn"]["value"]
    assert outputs["glue_catalog_id"]["value"].startswith("${data.aws_caller_identity.")
    assert synthesized.stacks["shared-database"]["output"]["glue_database_names"]["value"] == ["acme"]


def test_constructs_do_not_create_a_provider(synthesized):
    for stack in synthesized.stacks.values():
        assert list(stack["provider"]["aws"]) and len(stack["provider"]["aws"]) == 1
