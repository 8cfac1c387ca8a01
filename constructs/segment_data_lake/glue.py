"""Glue databases of the sources and Lake Formation grants."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from constructs import Construct

from . import validation
from .account import AwsAccount
from .aws import (
    GlueCatalogDatabase,
    LakeformationPermissions,
    LakeformationPermissionsDatabase,
    LakeformationPermissionsTable,
)
from .sources import SegmentSource, validate_sources


@dataclass(frozen=True)
class GlueCatalogProps:
    """Props of :class:`GlueCatalog`.

    :param sources: the Segment sources whose databases these are.
    :param create_glue_databases: create each source's Glue database here rather than letting the first
        sync create it.
    :param lake_formation: grant Lake Formation permissions on the databases and their tables to
        ``lake_formation_role_arns``; needs ``create_glue_databases`` (a grant needs its database), and the
        deploying principal must be a Lake Formation administrator.
    :param lake_formation_role_arns: IAM role ARNs to grant.
    """

    sources: Sequence[SegmentSource]
    create_glue_databases: bool = False
    lake_formation: bool = False
    lake_formation_role_arns: Sequence[str] = ()

    def __post_init__(self) -> None:
        validate_sources(self.sources)
        validation.role_arns(self.lake_formation_role_arns, "lake_formation_role_arns")
        if self.lake_formation and not self.create_glue_databases:
            validation.fail("lake_formation=True grants on the sources' Glue databases, which must exist first: "
                            "set create_glue_databases=True")
        if self.lake_formation_role_arns and not self.lake_formation:
            validation.fail("lake_formation_role_arns is set but lake_formation is False: set lake_formation=True to grant them")


class GlueCatalog(Construct):
    """Optionally creates each source's Glue database, and grants Lake Formation
    permissions on those databases and their tables to IAM role ARNs.

    Attributes: ``database_names`` (distinct, in source order), ``databases``
    (name to ``GlueCatalogDatabase``, empty unless created), ``grants``.
    """

    def __init__(self, scope: Construct, id: str, *, props: GlueCatalogProps, account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props = props
        lake_formation_role_arns = props.lake_formation_role_arns
        self.database_names = list(dict.fromkeys(source.database for source in props.sources))
        self.databases: dict[str, GlueCatalogDatabase] = {}
        self.grants: list[LakeformationPermissions] = []
        if props.create_glue_databases:
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
