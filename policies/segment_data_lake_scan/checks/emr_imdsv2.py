"""The EMR security configuration requires IMDSv2 on every node."""
from _policy import document
from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck


class EmrSecurityConfigurationRequiresImdsV2(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="EMR security configuration requires IMDSv2", id="CKV_SDL_5",
                         categories=[CheckCategories.GENERAL_SECURITY],
                         supported_resources=["aws_emr_security_configuration"])

    def scan_resource_conf(self, conf):
        configuration = document(conf, "configuration")
        if configuration is None:
            return CheckResult.UNKNOWN
        imds = configuration.get("InstanceMetadataServiceConfiguration") or {}
        return CheckResult.PASSED if imds.get("MinimumInstanceMetadataServiceVersion") == 2 else CheckResult.FAILED


check = EmrSecurityConfigurationRequiresImdsV2()
