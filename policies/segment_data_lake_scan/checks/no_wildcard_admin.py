"""No IAM statement allows every action, or every action of a service, on every resource."""
from _policy import as_list, document, statements
from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck


def _wildcard_action(action) -> bool:
    return action == "*" or (isinstance(action, str) and action.endswith(":*"))


def allows_wildcard_on_everything(policy) -> bool:
    for statement in statements(policy):
        if statement.get("Effect") != "Allow":
            continue
        everything = "*" in as_list(statement.get("Resource")) or "NotResource" in statement
        broad = any(_wildcard_action(a) for a in as_list(statement.get("Action"))) or "NotAction" in statement
        if everything and broad:
            return True
    return False


class NoWildcardActionsOnAllResources(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="No IAM statement allows '*' or 'service:*' actions on '*'", id="CKV_SDL_3",
                         categories=[CheckCategories.IAM],
                         supported_resources=["aws_iam_policy", "aws_iam_role_policy", "aws_iam_user_policy",
                                              "aws_iam_group_policy"])

    def scan_resource_conf(self, conf):
        policy = document(conf, "policy")
        if policy is None:
            return CheckResult.UNKNOWN
        return CheckResult.FAILED if allows_wildcard_on_everything(policy) else CheckResult.PASSED


check = NoWildcardActionsOnAllResources()
