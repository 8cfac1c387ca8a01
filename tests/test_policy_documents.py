"""The readable templates in policies/segment_data_lake_policies render into the documents the constructs attach."""
import json

import pytest

import segment_data_lake_policies as policy_documents

pytestmark = pytest.mark.fast


def test_whole_placeholders_take_lists_and_inline_ones_are_spliced():
    document = policy_documents.render("vendor-trust", vendor_principals=["arn:aws:iam::1:role/a"],
                                       external_ids=["ws1", "ws2"])
    [statement] = document["Statement"]
    assert statement["Principal"] == {"AWS": ["arn:aws:iam::1:role/a"]}
    assert statement["Condition"]["StringEquals"]["sts:ExternalId"] == ["ws1", "ws2"]
    scheduler = policy_documents.render("emr-service-trust", account_id="123", partition="aws", region="eu-west-1")
    assert scheduler["Statement"][0]["Condition"]["ArnLike"]["aws:SourceArn"] == "arn:aws:elasticmapreduce:eu-west-1:123:*"


def test_every_template_is_valid_json_with_a_version():
    templates = [path for path in policy_documents.TEMPLATES.iterdir() if path.name.endswith(".json")]
    assert len(templates) >= 14
    for path in templates:
        assert json.loads(path.read_text())["Version"] == "2012-10-17", path.name


def test_a_missing_value_names_the_placeholder():
    with pytest.raises(KeyError, match=r"policy template scheduler-permissions needs a value for \{\{cluster_arn\}\}"):
        policy_documents.render("scheduler-permissions")
