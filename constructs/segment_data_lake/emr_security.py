"""What the cluster runs inside: security configuration, disk key and security groups."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from constructs import Construct

from . import policy_documents, validation
from .account import AwsAccount
from .aws import DataAwsSubnet, EmrSecurityConfiguration, KmsKey, SecurityGroup
from .tagging import EMR_MANAGED_POLICY_TAG, with_vendor_tag


def security_configuration_document(cluster_key_arn: str, in_transit_certificate_s3_uri: str | None) -> dict:
    """IMDSv2 only; local disks and EMRFS writes to S3 encrypted with the KMS key; TLS between nodes when a
    certificate is given."""
    encryption: dict = {
        "EnableAtRestEncryption": True,
        "EnableInTransitEncryption": in_transit_certificate_s3_uri is not None,
        "AtRestEncryptionConfiguration": {
            "S3EncryptionConfiguration": {"EncryptionMode": "SSE-KMS", "AwsKmsKey": cluster_key_arn},
            "LocalDiskEncryptionConfiguration": {"EncryptionKeyProviderType": "AwsKms", "AwsKmsKey": cluster_key_arn},
        },
    }
    if in_transit_certificate_s3_uri is not None:
        encryption["InTransitEncryptionConfiguration"] = {
            "TLSCertificateConfiguration": {"CertificateProviderType": "PEM", "S3Object": in_transit_certificate_s3_uri},
        }
    return {
        "EncryptionConfiguration": encryption,
        "InstanceMetadataServiceConfiguration": {"MinimumInstanceMetadataServiceVersion": 2, "HttpPutResponseHopLimit": 2},
    }


@dataclass(frozen=True)
class EmrSecurityProps:
    """Props of :class:`EmrSecurity`.

    :param subnet_id: subnet of the cluster; the security groups go into its VPC.
    :param name: cluster name, the prefix of the security configuration and group names.
    :param cluster_kms_key_arn: KMS key encrypting local disks and the cluster's S3 writes
        (default: a new key with rotation).
    :param in_transit_certificate_s3_uri: S3 URI of a zip of PEM certificates; turns on TLS between nodes.
    :param tags: tags of the key and groups; ``vendor=segment`` is always added.
    """

    subnet_id: str
    name: str = "segment-data-lake"
    cluster_kms_key_arn: str | None = None
    in_transit_certificate_s3_uri: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validation.matches(self.subnet_id, r"subnet-[0-9a-f]{8,17}", "subnet id",
                           "use the id of an existing subnet, like subnet-0123456789abcdef0")
        validation.matches(self.name, r"[\w .-]{1,256}", "cluster name", "use letters, digits, spaces, '.', '-' or '_'")
        if self.in_transit_certificate_s3_uri is not None:
            validation.matches(self.in_transit_certificate_s3_uri, r"s3://[^/]+/.+\.zip", "in-transit certificate URI",
                               "use the s3:// URI of a zip holding privateKey.pem and certificateChain.pem")
        validation.tags(self.tags)


class EmrSecurity(Construct):
    """KMS key for local disks and S3 writes (unless one is given), the EMR security configuration
    and three EMR-managed security groups (master, core/task, service access) with
    no rules of their own: EMR adds only the rules it needs, never 0.0.0.0/0 ingress.

    Attributes: ``cluster_key_arn``, ``cluster_key`` (or ``None``),
    ``security_configuration``, ``master_security_group``,
    ``core_task_security_group``, ``service_access_security_group``, ``vpc_id``.
    """

    def __init__(self, scope: Construct, id: str, *, props: EmrSecurityProps, account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props = props
        account = AwsAccount.of(self, account)
        name, tags, cluster_kms_key_arn = props.name, props.tags, props.cluster_kms_key_arn
        self.cluster_key: KmsKey | None = None
        if cluster_kms_key_arn is None:
            self.cluster_key = KmsKey(
                self, "ClusterKey", description=f"Encrypts local disks and S3 writes of EMR cluster {name}",
                enable_key_rotation=True, deletion_window_in_days=30, tags=with_vendor_tag(tags),
                policy=policy_documents.render_json("cluster-key", partition=account.partition,
                                                    account_id=account.account_id),
            )
            cluster_kms_key_arn = self.cluster_key.arn
        self.cluster_key_arn = cluster_kms_key_arn
        self.security_configuration = EmrSecurityConfiguration(
            self, "SecurityConfiguration", name_prefix=f"{name}-",
            configuration=json.dumps(security_configuration_document(cluster_kms_key_arn, props.in_transit_certificate_s3_uri)),
        )
        self.vpc_id = DataAwsSubnet(self, "Subnet", id=props.subnet_id).vpc_id
        group_tags = with_vendor_tag(tags, EMR_MANAGED_POLICY_TAG)
        self.master_security_group = self._group("Master", f"{name}-master", "EMR-managed: master node", group_tags)
        self.core_task_security_group = self._group("CoreTask", f"{name}-core-task", "EMR-managed: core and task nodes",
                                                    group_tags)
        self.service_access_security_group = self._group(
            "ServiceAccess", f"{name}-service-access", "EMR-managed: service access from a private subnet", group_tags)

    def _group(self, id: str, name: str, description: str, tags: Mapping[str, str]) -> SecurityGroup:
        # EMR writes the rules of its managed groups; they reference each other, so
        # they must be revoked before the groups can be deleted.
        return SecurityGroup(self, id, name=name, description=description, vpc_id=self.vpc_id,
                             revoke_rules_on_delete=True, tags=dict(tags, Name=name))
