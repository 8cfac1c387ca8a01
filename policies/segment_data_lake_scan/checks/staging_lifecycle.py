"""The lake bucket's lifecycle expires the sync's staging objects under segment-stage/."""
from _policy import as_list, value
from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck

from segment_lake_contract import STAGE_PREFIX


def _prefix(rule) -> str | None:
    rule_filter = value(rule, "filter")
    if isinstance(rule_filter, dict) and value(rule_filter, "prefix") is not None:
        return value(rule_filter, "prefix")
    return value(rule, "prefix")


def expires_stage(rule) -> bool:
    expiration = value(rule, "expiration")
    days = value(expiration, "days") if isinstance(expiration, dict) else None
    return (value(rule, "status") == "Enabled" and _prefix(rule) == STAGE_PREFIX
            and isinstance(days, (int, float)) and days >= 1)


class StagingLifecycleRule(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="Lifecycle configuration expires objects under segment-stage/", id="CKV_SDL_4",
                         categories=[CheckCategories.GENERAL_SECURITY],
                         supported_resources=["aws_s3_bucket_lifecycle_configuration"])

    def scan_resource_conf(self, conf):
        rules = [r for r in as_list(conf.get("rule")) if isinstance(r, dict)]
        return CheckResult.PASSED if any(expires_stage(rule) for rule in rules) else CheckResult.FAILED


check = StagingLifecycleRule()
