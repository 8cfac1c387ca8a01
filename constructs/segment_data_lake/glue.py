"""Glue databases of the sources and Lake Formation grants."""
from __future__ import annotations

from collections.abc import Sequence

from constructs import Construct

from . import validation
from .account import AwsAccount
from .aws import (
    GlueCatalogDatabase,
    LakeformationPermissions,
    LakeformationPermissionsDatabase,
    LakeformationPermissionsTable,
)
from .sources import SegmentSource


class GlueCatalog(Construct):
    """Optionally creates each source's Glue database, and grants Lake Formation
    permissions on those databases and their tables to IAM role ARNs.

    Attributes: ``database_names`` (distinct, in source order), ``databases``
    (name to ``GlueCatalogDatabase``, empty unless created), ``grants``.
    """

    def __init__(self, scope: Construct, id: str, *, sources: Sequence[SegmentSource],
                 create_databases: bool = False, lake_formation_role_arns: Sequence[str] = (),
                 account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        validation.role_arns(lake_formation_role_arns, "lake_formation_role_arns")
        self.database_names = list(dict.fromkeys(source.database for source in sources))
        self.databases: dict[str, GlueCatalogDatabase] = {}
        self.grants: list[LakeformationPermissions] = []
        if create_databases:
            for name in self.database_names:
                self.databases[name] = GlueCatalogDatabase(
                    self, f"Database-{name}", name=name, description="Segment Data Lakes tables of one or more sources")
        if not lake_formation_role_arns:
            return
        account = AwsAccount.of(self, account)
        for index, role_arn in enumerate(lake_formation_role_arns):
            self.grants.append(LakeformationPermissions(
                self, f"CreateDatabase{index}", principal=role_arn, permissions=["CREATE_DATABASE"],
                catalog_resource=True))
            for name in self.database_names:
                depends = [self.databases[name]] if name in self.databases else None
                self.grants.append(LakeformationPermissions(
                    self, f"Database{index}-{name}", principal=role_arn, permissions=["ALL"],
                    database=LakeformationPermissionsDatabase(name=name, catalog_id=account.account_id), depends_on=depends))
                self.grants.append(LakeformationPermissions(
                    self, f"Tables{index}-{name}", principal=role_arn, permissions=["ALL"],
                    table=LakeformationPermissionsTable(database_name=name, wildcard=True,
                                                        catalog_id=account.account_id),
                    depends_on=depends))
