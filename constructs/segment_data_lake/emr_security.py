"""What the cluster runs inside: security configuration, disk key and security groups."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from constructs import Construct

import segment_data_lake_policies as policies

from . import validation
from .account import AwsAccount
from .aws import (
    DataAwsRouteTables,
    DataAwsRouteTablesFilter,
    DataAwsSecurityGroup,
    DataAwsSubnet,
    DataAwsVpcSecurityGroupRule,
    DataAwsVpcSecurityGroupRules,
    DataAwsVpcSecurityGroupRulesFilter,
    EmrSecurityConfiguration,
    KmsKey,
    Postcondition,
    Precondition,
    SecurityGroup,
    TerraformIterator,
    TerraformResourceLifecycle,
    Token,
    VpcSecurityGroupEgressRule,
    VpcSecurityGroupIngressRule,
)
from .refs import EmrManagedSecurityGroups, IKey, KeyRef, SecurityConfigurationRef
from .tagging import EMR_MANAGED_POLICY_TAG, with_vendor_tag

DEFAULT_NAME = "segment-data-lake"


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


# Every AWS API the nodes call (S3, Glue, STS, KMS, CloudWatch, EMR) answers on HTTPS, through a NAT gateway, an S3
# gateway endpoint or interface endpoints in the VPC.
HTTPS = 443
# EMR's ports between the service-access group and the nodes in a private subnet (EMR's managed group rules)
SERVICE_ACCESS_TO_NODES = 8443
MASTER_TO_SERVICE_ACCESS = 9443


@dataclass(frozen=True)
class EmrSecurityProps:
    """Props of :class:`EmrSecurity`.

    :param subnet_id: subnet of the cluster; the security groups go into its VPC. It must carry the tag
        ``for-use-with-amazon-emr-managed-policies=true`` (``AmazonEMRServicePolicy_v2`` launches only into tagged
        subnets): the plan fails on one that does not.
    :param private_subnet: True (default) when the subnet has no route to an internet gateway (it reaches AWS
        through a NAT gateway or VPC endpoints): EMR then reaches the cluster through a service-access security
        group, created here. False for a public subnet, where EMR takes no service-access group.
    :param name: the prefix of the security configuration's and groups' names (default: the cluster's name, in
        :class:`EmrClusterProps`; ``segment-data-lake`` alone).
    :param cluster_key: the KMS key encrypting local disks and the cluster's S3 writes: a ``KmsKey`` of the stack, or
        :meth:`EmrSecurity.from_key_arn` (default: a new key with rotation).
    :param in_transit_certificate_s3_uri: S3 URI of a zip of PEM certificates; turns on TLS between nodes.
    :param security_configuration: an existing EMR security configuration
        (:meth:`EmrSecurity.from_security_configuration_name`), brought instead of created (default: a new one, IMDSv2
        only, encrypting at rest with the cluster's key). Bring with it ``cluster_key``, the key it encrypts with,
        which the cluster's roles are granted; it should require IMDSv2 as the created one does (the scan cannot
        check a configuration that is not in the stack).
    :param managed_security_groups: existing EMR-managed security groups
        (:meth:`EmrSecurity.from_security_group_ids`), brought instead of created (default:
        new groups whose outbound rules allow HTTPS to ``https_egress_cidr_blocks`` and traffic within the cluster;
        EMR adds the inbound rules it needs).
    :param https_egress_cidr_blocks: IPv4 CIDR blocks to which the created groups let the nodes open HTTPS
        connections: they must hold the AWS services' public addresses behind a NAT gateway, S3's addresses behind
        its gateway endpoint and the interface endpoints' addresses in the VPC (default ``0.0.0.0/0``; with interface
        endpoints for everything but S3, the VPC's CIDR and S3's published ranges would do, but those change). Only
        HTTPS leaves the VPC: a bootstrap action or application that downloads over HTTP, or reaches a database
        outside, needs a rule of yours (``additional_*_security_group_ids``).
    :param tags: tags of the key and groups; ``vendor=segment`` is always added.
    """

    subnet_id: str
    private_subnet: bool = True
    name: str | None = None
    cluster_key: IKey | None = None
    in_transit_certificate_s3_uri: str | None = None
    security_configuration: SecurityConfigurationRef | None = None
    managed_security_groups: EmrManagedSecurityGroups | None = None
    https_egress_cidr_blocks: Sequence[str] = ("0.0.0.0/0",)
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validation.matches(self.subnet_id, r"subnet-[0-9a-f]{8,17}", "subnet id",
                           "use the id of an existing subnet, like subnet-0123456789abcdef0")
        if self.name is not None:
            validation.cluster_name(self.name)
        brought = self.managed_security_groups
        if brought is not None and not isinstance(brought, EmrManagedSecurityGroups):
            validation.fail(f"managed_security_groups {brought!r} is not an EmrManagedSecurityGroups: pass "
                            f"EmrSecurity.from_security_group_ids(scope, id, master=, core_task=, service_access=)")
        if brought is not None and self.private_subnet and brought.service_access is None:
            validation.fail(f"managed_security_groups has no service_access group, which EMR needs in a private "
                            f"subnet ({self.subnet_id}): bring one, or set private_subnet=False for a public subnet")
        if brought is not None and not self.private_subnet and brought.service_access is not None:
            validation.fail(f"managed_security_groups brings service_access {brought.service_access!r} for a public "
                            f"subnet (private_subnet=False), where EMR takes none: remove it")
        for block in self.https_egress_cidr_blocks:
            validation.cidr_block(block, "https_egress_cidr_blocks")
        if not self.https_egress_cidr_blocks:
            validation.fail("https_egress_cidr_blocks is empty: the nodes could not reach S3, Glue or EMR; give at "
                            "least the VPC's CIDR (with VPC endpoints) or 0.0.0.0/0")
        if self.in_transit_certificate_s3_uri is not None:
            validation.matches(self.in_transit_certificate_s3_uri, r"s3://[^/]+/.+\.zip", "in-transit certificate URI",
                               "use the s3:// URI of a zip holding privateKey.pem and certificateChain.pem")
        if self.security_configuration is not None:
            name = self.security_configuration.name
            if self.cluster_key is None:
                validation.fail(f"security configuration {name!r} is brought without cluster_key: pass "
                                f"the KMS key it encrypts with, so that the cluster's roles may use it")
            if self.in_transit_certificate_s3_uri is not None:
                validation.fail(f"in_transit_certificate_s3_uri sets TLS in a security configuration this stack "
                                f"creates, not in the brought {name!r}: set TLS there and remove it")
        validation.tags(self.tags)


def _needs_emr_tag(what: str, otherwise: str, precondition: Sequence[Precondition] = ()) -> TerraformResourceLifecycle:
    """A data source's postcondition: the object it reads carries the tag AmazonEMRServicePolicy_v2 needs."""
    tag, value = next(iter(EMR_MANAGED_POLICY_TAG.items()))
    return TerraformResourceLifecycle(precondition=list(precondition) or None, postcondition=[Postcondition(
        condition=f'${{lookup(self.tags, "{tag}", "") == "{value}"}}',
        error_message=f"{what} lacks the tag {tag}={value}, without which AmazonEMRServicePolicy_v2 {otherwise}.")])


class EmrSecurity(Construct):
    """KMS key for local disks and S3 writes, the EMR security configuration and the EMR-managed security groups
    (master, core/task and, in a private subnet, service access). The created groups get outbound rules only
    (Terraform removes AWS's default allow-all egress rule from a group it creates): HTTPS to the AWS services, all
    traffic between the master's and the core/task groups, and EMR's ports between the service-access group and the
    nodes; EMR adds the inbound rules it needs, never 0.0.0.0/0 ingress. Each piece is created unless brought
    (``EmrSecurityProps``). The plan fails on a subnet without the tag ``AmazonEMRServicePolicy_v2`` needs.

    Attributes: ``cluster_key_arn``, ``security_configuration_name``, ``master_security_group_id``,
    ``core_task_security_group_id``, ``service_access_security_group_id`` (None in a public subnet), ``vpc_id``,
    ``subnet`` (its data source), ``network_rules`` (the created groups' rules: a cluster's first start must wait for
    them); the resources this stack created (``None`` when brought): ``cluster_key``, ``security_configuration``,
    ``master_security_group``, ``core_task_security_group``, ``service_access_security_group``.
    """

    def __init__(self, scope: Construct, id: str, *, props: EmrSecurityProps, account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props = props
        account = AwsAccount.of(self, account)
        name, tags = props.name or DEFAULT_NAME, props.tags
        self.cluster_key: KmsKey | None = None
        if props.cluster_key is None:
            self.cluster_key = KmsKey(
                self, "ClusterKey", description=f"Encrypts local disks and S3 writes of EMR cluster {name}",
                enable_key_rotation=True, deletion_window_in_days=30, tags=with_vendor_tag(tags),
                policy=policies.render_json("cluster-key", partition=account.partition,
                                                    account_id=account.account_id),
            )
        self.cluster_key_arn = (props.cluster_key or self.cluster_key).arn
        self.security_configuration: EmrSecurityConfiguration | None = None
        if props.security_configuration is None:
            self.security_configuration = EmrSecurityConfiguration(
                self, "SecurityConfiguration", name_prefix=f"{name}-",
                configuration=json.dumps(security_configuration_document(self.cluster_key_arn,
                                                                         props.in_transit_certificate_s3_uri)),
            )
        self.security_configuration_name = (props.security_configuration or self.security_configuration).name
        self.subnet = DataAwsSubnet(self, "Subnet", id=props.subnet_id, lifecycle=_needs_emr_tag(
            "The cluster's subnet", "starts no cluster in it: tag the subnet"))
        self.vpc_id = self.subnet.vpc_id
        if not validation.is_token(props.subnet_id):
            # a subnet made in this stack is read before its route table's association exists: not judged
            self._check_subnet_kind(props.subnet_id, props.private_subnet)
        brought = props.managed_security_groups
        if brought is not None:
            self._check_brought_tags(brought)
        self.master_security_group, self.core_task_security_group, self.service_access_security_group = (None,) * 3
        self.network_rules: list[VpcSecurityGroupEgressRule | VpcSecurityGroupIngressRule] = []
        if brought is None:
            group_tags = with_vendor_tag(tags, EMR_MANAGED_POLICY_TAG)
            self.master_security_group = self._group("Master", f"{name}-master", "EMR-managed: master node", group_tags)
            self.core_task_security_group = self._group("CoreTask", f"{name}-core-task",
                                                        "EMR-managed: core and task nodes", group_tags)
            if props.private_subnet:
                self.service_access_security_group = self._group(
                    "ServiceAccess", f"{name}-service-access", "EMR-managed: service access from a private subnet",
                    group_tags)
            self._allow_what_the_cluster_needs(props.https_egress_cidr_blocks, group_tags)
        self.master_security_group_id = brought.master if brought else self.master_security_group.id
        self.core_task_security_group_id = brought.core_task if brought else self.core_task_security_group.id
        self.service_access_security_group_id = (brought.service_access if brought else
                                                 self.service_access_security_group.id
                                                 if self.service_access_security_group else None)

    @staticmethod
    def from_key_arn(scope: Construct, id: str, key_arn: str) -> KeyRef:
        """A KMS key of yours, by ARN: the cluster's key (``cluster_key``), or any key a prop takes."""
        return KeyRef(scope, id, key_arn=key_arn)

    @staticmethod
    def from_security_configuration_name(scope: Construct, id: str, name: str) -> SecurityConfigurationRef:
        """An EMR security configuration of yours, by name (``security_configuration``)."""
        return SecurityConfigurationRef(scope, id, name=name)

    @staticmethod
    def from_security_group_ids(scope: Construct, id: str, *, master: str, core_task: str,
                                service_access: str | None = None) -> EmrManagedSecurityGroups:
        """EMR-managed security groups of yours, by id (``managed_security_groups``): the master node's, the core and
        task nodes', and, in a private subnet, the service-access group."""
        return EmrManagedSecurityGroups(scope, id, master=master, core_task=core_task, service_access=service_access)

    def _check_brought_tags(self, brought: EmrManagedSecurityGroups) -> None:
        """The plan fails on a brought group without the tag AmazonEMRServicePolicy_v2 needs, and on a brought node
        group (master, core/task) with no outbound rule for HTTPS: the nodes call S3, Glue, STS, KMS, CloudWatch and
        EMR on 443 (where to, the stack cannot judge: an endpoint's group or a prefix list may stand for a service)."""
        for role, group in brought.by_role().items():
            https = [] if role == "service_access" else [Precondition(
                condition=self._has_https_egress(role, group), error_message=(
                    f"The brought {role} security group has no outbound rule for HTTPS (TCP 443), which the nodes "
                    "need to reach S3, Glue, STS, KMS, CloudWatch and EMR: add one (docs/constructs.md, The network)."))]
            DataAwsSecurityGroup(self, f"Brought-{role}", id=group, lifecycle=_needs_emr_tag(
                f"The brought {role} security group", "may not add the rules the cluster needs to it: tag the group",
                https))

    def _has_https_egress(self, role: str, group: str) -> str:
        """A condition: one of ``group``'s rules lets TCP 443 out (all traffic or a port range that holds it)."""
        ids = DataAwsVpcSecurityGroupRules(self, f"Brought-{role}-rules", filter=[
            DataAwsVpcSecurityGroupRulesFilter(name="group-id", values=[group])])
        each = TerraformIterator.from_list(ids.ids)
        rules = DataAwsVpcSecurityGroupRule(self, f"Brought-{role}-rule", for_each=each,
                                            security_group_rule_id=Token.as_string(each.value))
        # Terraform's || evaluates both sides: ports are compared through coalesce (all traffic's may be null)
        return (f"${{anytrue([for r in values({rules.fqn}) : r.is_egress && (r.ip_protocol == \"-1\" || "
                f"(r.ip_protocol == \"tcp\" && coalesce(r.from_port, 0) <= 443 && coalesce(r.to_port, 0) >= 443))])}}")

    def _check_subnet_kind(self, subnet_id: str, private: bool) -> None:
        """The plan fails when ``private_subnet`` says otherwise than the subnet's routes: a subnet is public when its
        route table (its own, else the VPC's main one) routes to an internet gateway."""
        def tables(id: str, filters: Mapping[str, str], **options) -> DataAwsRouteTables:
            return DataAwsRouteTables(self, id, vpc_id=self.vpc_id, filter=[
                DataAwsRouteTablesFilter(name=name, values=[value]) for name, value in filters.items()], **options)

        to_internet = {"route.gateway-id": "igw-*"}
        own = tables("SubnetRouteTable", {"association.subnet-id": subnet_id})
        own_to_internet = tables("SubnetRoutesToInternet", {"association.subnet-id": subnet_id, **to_internet})
        # the check sits on the last lookup, the main table's, which it reads as self
        public = f"length({own_to_internet.fqn}.ids) > 0 || (length({own.fqn}.ids) == 0 && length(self.ids) > 0)"
        fix = ("routes to an internet gateway, so it is public: set private_subnet=False (EMR takes no service-access "
               "group there)" if private else "has no route to an internet gateway, so it is private: set "
               "private_subnet=True (EMR needs a service-access group there)")
        tables("MainRoutesToInternet", {"association.main": "true", **to_internet},
               lifecycle=TerraformResourceLifecycle(postcondition=[Postcondition(
                   condition=f"${{{'!' if private else ''}({public})}}", error_message=f"The cluster's subnet {fix}.")]))

    def _group(self, id: str, name: str, description: str, tags: Mapping[str, str]) -> SecurityGroup:
        # EMR writes the inbound rules of its managed groups; they reference each other, so
        # they must be revoked before the groups can be deleted.
        return SecurityGroup(self, id, name=name, description=description, vpc_id=self.vpc_id,
                             revoke_rules_on_delete=True, tags=dict(tags, Name=name))

    def _allow_what_the_cluster_needs(self, https_cidr_blocks: Sequence[str], tags: Mapping[str, str]) -> None:
        """The outbound rules of the created groups (rules of their own, not inline blocks, so that the rules EMR
        adds are not drift), and the service-access group's inbound rule from the master."""
        nodes = {"Master": self.master_security_group, "CoreTask": self.core_task_security_group}
        for group_id, group in nodes.items():
            for index, block in enumerate(https_cidr_blocks):
                self._rule(VpcSecurityGroupEgressRule, f"{group_id}HttpsOut{index}", group, tags,
                           "HTTPS to the AWS services the nodes call", HTTPS, cidr_ipv4=block)
            for peer_id, peer in nodes.items():
                self._rule(VpcSecurityGroupEgressRule, f"{group_id}To{peer_id}", group, tags,
                           "All traffic between the cluster's nodes", None, referenced_security_group_id=peer.id)
        service = self.service_access_security_group
        if service is None:
            return
        self._rule(VpcSecurityGroupEgressRule, "MasterToServiceAccess", self.master_security_group, tags,
                   "The master node to EMR's service access", MASTER_TO_SERVICE_ACCESS,
                   referenced_security_group_id=service.id)
        self._rule(VpcSecurityGroupIngressRule, "ServiceAccessFromMaster", service, tags,
                   "The master node to EMR's service access", MASTER_TO_SERVICE_ACCESS,
                   referenced_security_group_id=self.master_security_group.id)
        for peer_id, peer in nodes.items():
            self._rule(VpcSecurityGroupEgressRule, f"ServiceAccessTo{peer_id}", service, tags,
                       "EMR's service access to the nodes", SERVICE_ACCESS_TO_NODES, referenced_security_group_id=peer.id)

    def _rule(self, kind, id: str, group: SecurityGroup, tags: Mapping[str, str], description: str, port: int | None,
              **peer: str) -> None:
        ports = {"ip_protocol": "-1"} if port is None else {"ip_protocol": "tcp", "from_port": port, "to_port": port}
        self.network_rules.append(kind(self, id, security_group_id=group.id, description=description, tags=dict(tags),
                                       **ports, **peer))
