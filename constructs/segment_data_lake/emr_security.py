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
class EmrManagedSecurityGroups:
    """Existing EMR-managed security groups, brought instead of created. EMR writes their rules, which reference
    each other: bring three distinct groups made for one cluster, in the subnet's VPC, with no ingress from
    0.0.0.0/0, each tagged ``for-use-with-amazon-emr-managed-policies=true`` (``AmazonEMRServicePolicy_v2`` lets EMR
    change only groups with that tag).

    :param master: group of the master node.
    :param core_task: group of the core and task nodes.
    :param service_access: group through which EMR reaches a cluster in a private subnet.
    """

    master: str
    core_task: str
    service_access: str

    def __post_init__(self) -> None:
        for role in ("master", "core_task", "service_access"):
            validation.matches(getattr(self, role), r"sg-[0-9a-f]{8,17}", f"{role} security group id",
                               "use the id of an existing security group, like sg-0123456789abcdef0")
        if len({self.master, self.core_task, self.service_access}) < 3:
            validation.fail(f"the EMR-managed security groups {self.master}, {self.core_task} and "
                            f"{self.service_access} are not three groups: bring one group for each role")


@dataclass(frozen=True)
class EmrSecurityProps:
    """Props of :class:`EmrSecurity`.

    :param subnet_id: subnet of the cluster; the security groups go into its VPC.
    :param name: cluster name, the prefix of the security configuration and group names.
    :param cluster_kms_key_arn: KMS key encrypting local disks and the cluster's S3 writes
        (default: a new key with rotation).
    :param in_transit_certificate_s3_uri: S3 URI of a zip of PEM certificates; turns on TLS between nodes.
    :param security_configuration_name: an existing EMR security configuration, brought instead of created
        (default: a new one, IMDSv2 only, encrypting at rest with the cluster's key). Bring with it
        ``cluster_kms_key_arn``, the key it encrypts with, which the cluster's roles are granted; it should require
        IMDSv2 as the created one does (the scan cannot check a configuration that is not in the stack).
    :param managed_security_groups: existing EMR-managed security groups, brought instead of created
        (default: three new groups with no rules of their own).
    :param tags: tags of the key and groups; ``vendor=segment`` is always added.
    """

    subnet_id: str
    name: str = "segment-data-lake"
    cluster_kms_key_arn: str | None = None
    in_transit_certificate_s3_uri: str | None = None
    security_configuration_name: str | None = None
    managed_security_groups: EmrManagedSecurityGroups | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validation.matches(self.subnet_id, r"subnet-[0-9a-f]{8,17}", "subnet id",
                           "use the id of an existing subnet, like subnet-0123456789abcdef0")
        validation.matches(self.name, r"[\w .-]{1,256}", "cluster name", "use letters, digits, spaces, '.', '-' or '_'")
        if self.cluster_kms_key_arn is not None:
            validation.matches(self.cluster_kms_key_arn, r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[\w-]+",
                               "cluster_kms_key_arn", "use the key's ARN, arn:aws:kms:<region>:<account>:key/<id> (not "
                               "an alias: IAM grants name keys by ARN)")
        if self.managed_security_groups is not None and not isinstance(self.managed_security_groups,
                                                                       EmrManagedSecurityGroups):
            validation.fail(f"managed_security_groups {self.managed_security_groups!r} is not an "
                            f"EmrManagedSecurityGroups: pass EmrManagedSecurityGroups(master=, core_task=, "
                            f"service_access=)")
        if self.in_transit_certificate_s3_uri is not None:
            validation.matches(self.in_transit_certificate_s3_uri, r"s3://[^/]+/.+\.zip", "in-transit certificate URI",
                               "use the s3:// URI of a zip holding privateKey.pem and certificateChain.pem")
        if self.security_configuration_name is not None:
            brought = self.security_configuration_name
            validation.matches(brought, r"[\w.+=@-]{1,256}", "security configuration name",
                               "use the name of an existing EMR security configuration")
            if self.cluster_kms_key_arn is None:
                validation.fail(f"security configuration {brought!r} is brought without cluster_kms_key_arn: pass "
                                f"the KMS key it encrypts with, so that the cluster's roles may use it")
            if self.in_transit_certificate_s3_uri is not None:
                validation.fail(f"in_transit_certificate_s3_uri sets TLS in a security configuration this stack "
                                f"creates, not in the brought {brought!r}: set TLS there and remove it")
        validation.tags(self.tags)


class EmrSecurity(Construct):
    """KMS key for local disks and S3 writes, the EMR security configuration and three EMR-managed security groups
    (master, core/task, service access) with no rules of their own: EMR adds only the rules it needs, never
    0.0.0.0/0 ingress. Each is created unless brought (``EmrSecurityProps``).

    Attributes: ``cluster_key_arn``, ``security_configuration_name``, ``master_security_group_id``,
    ``core_task_security_group_id``, ``service_access_security_group_id``, ``vpc_id``; the resources this stack
    created (``None`` when brought): ``cluster_key``, ``security_configuration``, ``master_security_group``,
    ``core_task_security_group``, ``service_access_security_group``.
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
        self.security_configuration: EmrSecurityConfiguration | None = None
        self.security_configuration_name = props.security_configuration_name
        if self.security_configuration_name is None:
            self.security_configuration = EmrSecurityConfiguration(
                self, "SecurityConfiguration", name_prefix=f"{name}-",
                configuration=json.dumps(security_configuration_document(cluster_kms_key_arn,
                                                                         props.in_transit_certificate_s3_uri)),
            )
            self.security_configuration_name = self.security_configuration.name
        self.vpc_id = DataAwsSubnet(self, "Subnet", id=props.subnet_id).vpc_id
        brought = props.managed_security_groups
        self.master_security_group, self.core_task_security_group, self.service_access_security_group = (None,) * 3
        if brought is None:
            group_tags = with_vendor_tag(tags, EMR_MANAGED_POLICY_TAG)
            self.master_security_group = self._group("Master", f"{name}-master", "EMR-managed: master node", group_tags)
            self.core_task_security_group = self._group("CoreTask", f"{name}-core-task",
                                                        "EMR-managed: core and task nodes", group_tags)
            self.service_access_security_group = self._group(
                "ServiceAccess", f"{name}-service-access", "EMR-managed: service access from a private subnet",
                group_tags)
        self.master_security_group_id = brought.master if brought else self.master_security_group.id
        self.core_task_security_group_id = brought.core_task if brought else self.core_task_security_group.id
        self.service_access_security_group_id = (brought.service_access if brought
                                                 else self.service_access_security_group.id)

    def _group(self, id: str, name: str, description: str, tags: Mapping[str, str]) -> SecurityGroup:
        # EMR writes the rules of its managed groups; they reference each other, so
        # they must be revoked before the groups can be deleted.
        return SecurityGroup(self, id, name=name, description=description, vpc_id=self.vpc_id,
                             revoke_rules_on_delete=True, tags=dict(tags, Name=name))
