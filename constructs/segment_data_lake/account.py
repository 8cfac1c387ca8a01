"""The partition, account and region the consuming stack's provider points at."""
from __future__ import annotations

from constructs import Construct

from .aws import DataAwsCallerIdentity, DataAwsPartition, DataAwsRegion


class AwsAccount(Construct):
    """Data sources for building ARNs; create one and share it between constructs.

    Attributes: ``partition``, ``account_id``, ``region`` (Terraform tokens), and ``arn_parts`` (the three).
    """

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.partition: str = DataAwsPartition(self, "partition").partition
        self.account_id: str = DataAwsCallerIdentity(self, "caller").account_id
        self.region: str = DataAwsRegion(self, "region").name

    @property
    def arn_parts(self) -> dict[str, str]:
        """``partition``, ``region`` and ``account_id``, for formatting ARNs."""
        return {"partition": self.partition, "region": self.region, "account_id": self.account_id}

    @staticmethod
    def of(scope: Construct, given: AwsAccount | None) -> AwsAccount:
        """The given account context, or the one under ``scope`` (made on first use)."""
        if given is not None:
            return given
        existing = scope.node.try_find_child("Account")
        return existing if isinstance(existing, AwsAccount) else AwsAccount(scope, "Account")
