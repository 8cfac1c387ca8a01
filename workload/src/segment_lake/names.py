"""The catalog names a sync gives beyond the contract's (``segment_lake_contract``): its record tables, and the names
earlier versions gave, which it refuses to fork (the legacy-name policy, docs/lake-format.md: Names from earlier versions)."""
from __future__ import annotations

from segment_lake_contract import slug

from .catalog import Catalog
from .errors import InvalidSettings
from .settings import SyncSettings

DISCARDS_TABLE = "segment_discards"  # values a table's column could not hold
DUPLICATES_TABLE = "segment_duplicates"  # events dropped as duplicates, and the ones they repeat


def legacy_database(settings: SyncSettings) -> str | None:
    """The database earlier versions named from the same options (a camelCase split), when it differs from today's:
    a lake they synced has it."""
    legacy = None if settings.glue_database else slug(settings.database_name_source)
    return legacy if legacy != settings.database else None


def legacy_table_prefix(settings: SyncSettings) -> str | None:
    """The prefix earlier versions glued on without ``_``, when it differs from today's joined one."""
    return settings.table_prefix if settings.table_prefix != settings.table_name_prefix else None


def ensure_database(catalog: Catalog, settings: SyncSettings) -> None:
    """Creates the source's database, unless an earlier version named it otherwise: that one is not forked."""
    legacy, database = legacy_database(settings), settings.database
    if legacy:
        if catalog.database_exists(database):
            return
        if catalog.database_exists(legacy):
            raise InvalidSettings(
                f"the catalog has database {legacy!r}, named from {settings.database_name_source!r} by an earlier "
                f"version; Segment's name is {database!r}: pass --glue-database {legacy} to keep syncing into it, "
                f"or rename it (docs/lake-format.md: Names from earlier versions)")
    catalog.ensure_database(database)


def refuse_legacy_tables(catalog: Catalog, settings: SyncSettings, new_tables: list[str]) -> None:
    """A table an earlier version named without the ``_`` after the prefix is not silently forked."""
    legacy = legacy_table_prefix(settings)
    if not legacy or not new_tables:
        return
    suffix = len(settings.table_name_prefix)
    old_names = {legacy + table[suffix:]: table for table in new_tables}
    found = catalog.tables_columns(settings.database, sorted(old_names))
    clashes = sorted(old for old, columns in found.items() if columns is not None)
    if clashes:
        named = ", ".join(repr(old) for old in clashes[:3]) + (" and more" if len(clashes) > 3 else "")
        raise InvalidSettings(
            f"the catalog has {named}, named by an earlier version without the '_' after prefix {legacy!r}; this "
            f"version writes {old_names[clashes[0]]!r}: rename the old tables (docs/lake-format.md: Names from earlier versions) "
            f"and sync again")
