"""Security-group reachability in a synthesized stack, as EC2 enforces it, for the tests: moto accepts any traffic,
so what the nodes of a cluster may open is proven here from the groups and rules the stack declares.

A connection from a node is allowed when an outbound rule of one of its groups allows the protocol and port to the
destination (a CIDR block that holds the destination's address, a prefix list, or a group the destination is in),
and, for a destination with groups of its own (an interface endpoint), an inbound rule of one of them allows it back
from the node's groups or address. Groups are stateful: replies need no rule. Groups this stack does not declare
(brought by id) are not judged: their rules are not in the stack.

How a node reaches an AWS service: through the stack's interface endpoint for it when one has private DNS (the
service's name then resolves to the endpoint's addresses in its subnets), through the S3 gateway endpoint's prefix
list for S3, or else at the service's public addresses (through a NAT or internet gateway), which only a rule to
0.0.0.0/0 covers: AWS's address ranges change, and the stack cannot hold them.
"""
from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass

from stack_helpers import resources

# What the nodes call: S3 (data, logs, the app), Glue (the catalog), STS (credentials), KMS (the lake's keys),
# CloudWatch (the sync's metrics) and EMR (the nodes' agent), each on HTTPS.
SERVICES = ("s3", "glue", "sts", "kms", "monitoring", "elasticmapreduce")
HTTPS = 443
PUBLIC_ADDRESS = ipaddress.ip_network("52.94.0.1/32")  # an address of AWS's public ranges
_REF = re.compile(r"^\$\{(?:data\.)?([a-z0-9_]+)\.([A-Za-z0-9_-]+)\.([a-z_]+)\}$")


@dataclass(frozen=True)
class Rule:
    protocol: str  # "-1" (all), "tcp", "udp", ...
    from_port: int | None
    to_port: int | None
    cidr: str | None = None
    group: str | None = None  # the peer group's address, aws_security_group.<name>
    prefix_list: str | None = None  # the endpoint whose prefix list it names, aws_vpc_endpoint.<name>

    def allows(self, protocol: str, port: int | None) -> bool:
        if self.protocol == "-1":
            return True
        if self.protocol != protocol:
            return False
        return port is None or (self.from_port is not None and self.from_port <= port <= self.to_port)


@dataclass(frozen=True)
class ClusterNetwork:
    """The groups of a cluster's nodes, and the roles it runs as, as a request or a cluster resource names them
    (addresses such as ``aws_security_group.x``, or the ids and names of what is brought)."""

    where: str
    subnet: str
    master: tuple[str, ...]
    core_task: tuple[str, ...]
    service_access: str | None
    service_role: str
    instance_profile: str

    @property
    def groups(self) -> set[str]:
        return {*self.master, *self.core_task, *filter(None, [self.service_access])}

    @property
    def brought(self) -> list[str]:
        return [g for g in self.groups if not g.startswith("aws_")]


def address(value: str) -> str:
    """``aws_security_group.x`` for ``${aws_security_group.x.id}``; a literal id stays as it is."""
    match = _REF.match(value or "")
    return f"{match[1]}.{match[2]}" if match else value


def clusters(stack: dict) -> list[ClusterNetwork]:
    """Every cluster the stack starts: its EMR cluster resources, the RunJobFlow requests of its schedules, and the
    replay templates it writes."""
    found = []
    for name, cluster in resources(stack, "aws_emr_cluster").items():
        ec2 = cluster["ec2_attributes"]

        def extra(key: str, ec2: dict = ec2) -> tuple[str, ...]:
            return tuple(address(g) for g in (ec2.get(key) or "").split(",") if g)

        found.append(ClusterNetwork(
            f"aws_emr_cluster.{name}", ec2["subnet_id"],
            (address(ec2["emr_managed_master_security_group"]), *extra("additional_master_security_groups")),
            (address(ec2["emr_managed_slave_security_group"]), *extra("additional_slave_security_groups")),
            address(ec2["service_access_security_group"]) if ec2.get("service_access_security_group") else None,
            address(cluster["service_role"]), address(ec2["instance_profile"])))
    requests = [(f"aws_scheduler_schedule.{name}", json.loads(schedule["target"]["input"]))
                for name, schedule in resources(stack, "aws_scheduler_schedule").items()]
    requests += [(f"aws_s3_object.{name}", json.loads(item["content"])["run_job_flow"])
                 for name, item in resources(stack, "aws_s3_object").items() if "run_job_flow" in item.get("content", "")]
    for where, request in requests:
        instances = request.get("Instances")
        if instances is None:  # AddJobFlowSteps: the always-on cluster's, judged above
            continue
        found.append(ClusterNetwork(
            where, instances["Ec2SubnetId"],
            tuple(address(g) for g in [instances["EmrManagedMasterSecurityGroup"],
                                       *instances.get("AdditionalMasterSecurityGroups", [])]),
            tuple(address(g) for g in [instances["EmrManagedSlaveSecurityGroup"],
                                       *instances.get("AdditionalSlaveSecurityGroups", [])]),
            address(instances["ServiceAccessSecurityGroup"]) if "ServiceAccessSecurityGroup" in instances else None,
            address(request["ServiceRole"]), address(request["JobFlowRole"])))
    return found


def _ports(config: dict) -> tuple[str, int | None, int | None]:
    protocol = str(config.get("ip_protocol", config.get("protocol")))
    protocol = "-1" if protocol in ("-1", "all") else protocol
    return protocol, config.get("from_port"), config.get("to_port")


def rules(stack: dict, direction: str) -> dict[str, list[Rule]]:
    """Each declared group's rules of ``direction`` (``egress`` or ``ingress``): inline, and rules of their own."""
    found: dict[str, list[Rule]] = {f"aws_security_group.{name}": [] for name in resources(stack, "aws_security_group")}

    def add(group: str, config: dict, cidrs: list[str], peers: list[str], prefix_lists: list[str]) -> None:
        protocol, low, high = _ports(config)
        found.setdefault(group, []).extend(
            [Rule(protocol, low, high, cidr=c) for c in cidrs] + [Rule(protocol, low, high, group=address(p))
                                                                  for p in peers]
            + [Rule(protocol, low, high, prefix_list=p) for p in prefix_lists])

    for name, group in resources(stack, "aws_security_group").items():
        for config in group.get(direction) or []:
            add(f"aws_security_group.{name}", config, config.get("cidr_blocks") or [],
                config.get("security_groups") or [],
                [_prefix_list_endpoint(p) for p in config.get("prefix_list_ids") or []])
    for config in resources(stack, f"aws_vpc_security_group_{direction}_rule").values():
        add(address(config["security_group_id"]), config, [c for c in [config.get("cidr_ipv4")] if c],
            [g for g in [config.get("referenced_security_group_id")] if g],
            [_prefix_list_endpoint(config["prefix_list_id"])] if config.get("prefix_list_id") else [])
    for config in resources(stack, "aws_security_group_rule").values():
        if config["type"] == direction:
            add(address(config["security_group_id"]), config, config.get("cidr_blocks") or [],
                [g for g in [config.get("source_security_group_id")] if g],
                [_prefix_list_endpoint(p) for p in config.get("prefix_list_ids") or []])
    return found


def _prefix_list_endpoint(value: str) -> str:
    match = _REF.match(value)
    return f"{match[1]}.{match[2]}" if match and match[3] == "prefix_list_id" else value


def _holds(cidr: str, network) -> bool:
    try:
        return network is not None and ipaddress.ip_network(network).subnet_of(ipaddress.ip_network(cidr))
    except (TypeError, ValueError):
        return False


def subnet_cidr(stack: dict, subnet: str) -> str | None:
    """The CIDR block of a subnet the stack creates (None for one it is given by id)."""
    match = _REF.match(subnet)
    if match and match[1] == "aws_subnet":
        return resources(stack, "aws_subnet")[match[2]]["cidr_block"]
    return None


def may_open(egress: dict[str, list[Rule]], groups: tuple[str, ...], protocol: str, port: int | None, *,
             network=None, group_in: tuple[str, ...] = (), prefix_list: str | None = None) -> bool:
    """Whether a node in ``groups`` may open a connection to a destination in ``network`` (a CIDR), or in one of the
    groups ``group_in``, or behind ``prefix_list``."""
    return any(rule.allows(protocol, port) and (
        (rule.cidr is not None and _holds(rule.cidr, network)) or (rule.group is not None and rule.group in group_in)
        or (prefix_list is not None and rule.prefix_list == prefix_list))
        for group in groups for rule in egress.get(group, []))


def service_path(stack: dict, service: str) -> tuple[str, str | None]:
    """How the nodes reach ``service``: ("interface", endpoint address), ("gateway", endpoint address) or
    ("public", None)."""
    for name, endpoint in resources(stack, "aws_vpc_endpoint").items():
        if not endpoint["service_name"].endswith(f".{service}"):
            continue
        kind = endpoint.get("vpc_endpoint_type", "Gateway")
        if kind == "Interface" and endpoint.get("private_dns_enabled"):
            return "interface", f"aws_vpc_endpoint.{name}"
        if kind == "Gateway":
            return "gateway", f"aws_vpc_endpoint.{name}"
    return "public", None


def unreachable(stack: dict, cluster: ClusterNetwork) -> list[str]:
    """What the cluster's nodes could not reach, as sentences (empty: everything)."""
    egress, ingress = rules(stack, "egress"), rules(stack, "ingress")
    problems = []
    node_network = subnet_cidr(stack, cluster.subnet)
    for role, groups in (("master", cluster.master), ("core/task", cluster.core_task)):
        for service in SERVICES:
            kind, endpoint = service_path(stack, service)
            if kind == "public":
                ok = may_open(egress, groups, "tcp", HTTPS, network=PUBLIC_ADDRESS)
            elif kind == "gateway":
                ok = may_open(egress, groups, "tcp", HTTPS, network=PUBLIC_ADDRESS, prefix_list=endpoint)
            else:
                config = resources(stack, "aws_vpc_endpoint")[endpoint.split(".", 1)[1]]
                endpoint_groups = tuple(address(g) for g in config.get("security_group_ids") or [])
                networks = [subnet_cidr(stack, s) for s in config.get("subnet_ids") or []]
                out = all(may_open(egress, groups, "tcp", HTTPS, network=n, group_in=endpoint_groups)
                          for n in networks) and networks
                back = may_open(ingress, endpoint_groups, "tcp", HTTPS, network=node_network, group_in=groups)
                ok = bool(out and back)
            if not ok:
                problems.append(f"{cluster.where}: the {role} nodes cannot reach {service} on {HTTPS} ({kind})")
    for source, targets in (("master", cluster.core_task), ("master", cluster.master),
                            ("core/task", cluster.master), ("core/task", cluster.core_task)):
        groups = cluster.master if source == "master" else cluster.core_task
        if not may_open(egress, groups, "-1", None, group_in=targets[:1]):
            problems.append(f"{cluster.where}: the {source} nodes cannot open every port to {targets[0]}")
    if cluster.service_access:
        service = (cluster.service_access,)
        for target in (cluster.master[0], cluster.core_task[0]):
            if not may_open(egress, service, "tcp", 8443, group_in=(target,)):
                problems.append(f"{cluster.where}: EMR's service access cannot reach {target} on 8443")
        if not may_open(egress, cluster.master, "tcp", 9443, group_in=service) or not may_open(
                ingress, service, "tcp", 9443, group_in=cluster.master):
            problems.append(f"{cluster.where}: the master cannot reach EMR's service access on 9443")
    return problems
