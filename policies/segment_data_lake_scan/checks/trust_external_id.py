"""A role that another AWS account may assume requires sts:ExternalId (confused-deputy protection)."""
from _policy import as_list, document, statements
from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck


def _cross_account(statement) -> bool:
    principal = statement.get("Principal")
    if principal == "*":
        return True
    return isinstance(principal, dict) and bool(as_list(principal.get("AWS")))


def _requires_external_id(statement) -> bool:
    condition = statement.get("Condition") or {}
    required = condition.get("StringEquals") or {}
    return bool(as_list(required.get("sts:ExternalId")))


class TrustRequiresExternalId(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="Role assumable by an AWS principal requires sts:ExternalId", id="CKV_SDL_2",
                         categories=[CheckCategories.IAM], supported_resources=["aws_iam_role"])

    def scan_resource_conf(self, conf):
        policy = document(conf, "assume_role_policy")
        if policy is None:
            return CheckResult.UNKNOWN
        for statement in statements(policy):
            if statement.get("Effect") == "Allow" and _cross_account(statement) and not _requires_external_id(statement):
                return CheckResult.FAILED
        return CheckResult.PASSED


check = TrustRequiresExternalId()
