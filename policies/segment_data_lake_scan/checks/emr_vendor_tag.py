"""The EMR cluster carries vendor=segment: the vendor role may only touch clusters with that tag."""
from _policy import value
from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck


class EmrClusterVendorTag(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="EMR cluster of the data lake is tagged vendor=segment", id="CKV_SDL_1",
                         categories=[CheckCategories.GENERAL_SECURITY], supported_resources=["aws_emr_cluster"])

    def scan_resource_conf(self, conf):
        tags = value(conf, "tags")
        return CheckResult.PASSED if isinstance(tags, dict) and tags.get("vendor") == "segment" else CheckResult.FAILED


check = EmrClusterVendorTag()
