"""Glue databases, Lake Formation grants and the outputs a user copies into Segment."""
import json

import pytest
from stack_helpers import resources

pytestmark = pytest.mark.constructs

# segment_vendor_role_arn only where Segment runs the syncs
SETTINGS_OUTPUTS = {"aws_region", "emr_cluster_id", "glue_catalog_id", "s3_bucket", "glue_database_names",
                    "emr_instance_profile_name", "emr_instance_profile_role_arn", "emr_service_role_name", "sync_runner",
                    "s3_destination_role_arn"}
ALERTS = {"alerts_topic_arn"}


def test_databases_are_optional(lake, synthesized):
    assert resources(lake, "aws_glue_catalog_database") == {}
    shared = resources(synthesized.stacks["shared-database"], "aws_glue_catalog_database")
    assert [d["name"] for d in shared.values()] == ["acme"]
    complete = resources(synthesized.stacks["complete"], "aws_glue_catalog_database")
    # with Lake Formation, the reports' database too: its grants need it
    assert sorted(d["name"] for d in complete.values()) == ["__segment_datalake", "acme_backend", "acme_web"]


def test_lake_formation_grants_only_what_each_role_uses(synthesized):
    """complete: the EMR instance role runs the sync; no vendor role (Segment runs nothing), no readers."""
    stack = synthesized.stacks["complete"]
    grants = list(resources(stack, "aws_lakeformation_permissions").values())
    principals = {g["principal"] for g in grants}
    assert len(principals) == 1 and all(p.startswith("${aws_iam_role.") and p.endswith(".arn}") for p in principals)
    assert not any(g.get("catalog_resource") or "ALL" in g["permissions"] for g in grants)
    databases = ("acme_web", "acme_backend", "__segment_datalake")
    on_databases = {g["database"]["name"]: g["permissions"] for g in grants if "database" in g}
    assert on_databases == dict.fromkeys(databases, ["CREATE_TABLE", "DESCRIBE"])
    on_tables = {g["table"]["database_name"]: g["permissions"] for g in grants if "table" in g}
    assert on_tables == dict.fromkeys(databases, ["ALTER", "DESCRIBE"])
    assert all(g["table"]["wildcard"] is True for g in grants if "table" in g)
    # tables point into the registered bucket: creating one needs DATA_LOCATION_ACCESS, granted after the registration
    [location] = [g for g in grants if "data_location" in g]
    [registered] = resources(stack, "aws_lakeformation_resource").values()
    assert location["permissions"] == ["DATA_LOCATION_ACCESS"] and location["data_location"]["arn"] == registered["arn"]
    assert registered["arn"].startswith("${aws_s3_bucket.") and registered["hybrid_access_enabled"] is True
    assert any(d.startswith("aws_lakeformation_resource.") for d in location["depends_on"])
    # each grant on a database waits for the database
    names = {key: database["name"] for key, database in resources(stack, "aws_glue_catalog_database").items()}
    assert sorted(names.values()) == sorted(databases)
    for grant in grants:
        name = grant.get("database", {}).get("name") or grant.get("table", {}).get("database_name")
        if name:
            assert [f"aws_glue_catalog_database.{key}" for key, value in names.items() if value == name] == grant["depends_on"]
    assert resources(synthesized.stacks["segment-data-lake"], "aws_lakeformation_permissions") == {}


def test_lake_formation_readers_may_describe_and_select(synthesized):
    from segment_data_lake import DataLakeBucket, DataLakeRoles, GlueCatalog, GlueCatalogProps, SegmentSource
    from segment_data_lake.aws import App, TerraformStack, Testing

    stack = TerraformStack(App(), "readers")
    role = DataLakeRoles.from_role_name(stack, "Analyst", "analyst")
    catalog = GlueCatalog(stack, "Glue", bucket=DataLakeBucket.from_bucket_name(stack, "Lake", "lake"),
                          props=GlueCatalogProps(
        sources=[SegmentSource(source_id="a1", slug="web")], create_glue_databases=True, lake_formation=True,
        lake_formation_readers=[role], register_bucket=False, create_reports_database=False))
    synthesized_readers = json.loads(Testing.synth(stack))
    grants = list(resources(synthesized_readers, "aws_lakeformation_permissions").values())
    analyst = grants[0]["principal"]
    assert analyst.endswith(":role/analyst")
    assert {(g["principal"], tuple(g["permissions"]), "table" in g) for g in grants} == {
        (analyst, ("DESCRIBE",), False), (analyst, ("DESCRIBE", "SELECT"), True)}
    assert {g["database"]["name"] if "database" in g else g["table"]["database_name"] for g in grants} == {
        "web", "__segment_datalake"}
    assert resources(synthesized_readers, "aws_lakeformation_resource") == {}
    assert catalog.location is None and set(catalog.databases) == {"web"}


def test_several_lakes_in_a_stack_keep_all_their_outputs(synthesized):
    outputs = synthesized.stacks["staging-and-prod"]["output"]
    assert set(outputs) == {f"{lake}_{name}" for lake in ("prod", "staging") for name in SETTINGS_OUTPUTS | ALERTS}
    assert outputs["prod_s3_bucket"]["value"].startswith("${aws_s3_bucket.Prod_Bucket_")
    assert outputs["staging_s3_bucket"]["value"].startswith("${aws_s3_bucket.Staging_Bucket_")
    assert outputs["prod_emr_cluster_id"]["value"] != outputs["staging_emr_cluster_id"]["value"]


def test_outputs_have_static_names(synthesized):
    for name, stack in synthesized.stacks.items():
        if name != "staging-and-prod":  # one lake per stack
            replay = {"replay_cluster_template_uri", "replay_launcher_policy_arn"} if name == "complete" else set()
            vendor = {"segment_vendor_role_arn"} if name == "segment-runs" else set()
            # where this module runs the syncs, it alerts (bring-your-own brings its topic: the output names it)
            alerts = set() if name == "segment-runs" else ALERTS
            cluster = {"emr_cluster_id"} if name != "transient" else set()  # a transient cluster has no id to enter
            assert set(stack["output"]) == (SETTINGS_OUTPUTS - {"emr_cluster_id"}) | cluster | replay | vendor | alerts, name
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
