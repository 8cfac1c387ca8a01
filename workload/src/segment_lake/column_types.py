"""The closed set of column types a table can have, and the kinds of value the parser tells apart.

A column type's value is its name in Spark's DDL, which is also how Hive and Glue write it: the JVM
side builds Spark types from these names with ``DataType.fromDDL`` (``jvm/WriteTables.java``), so
this enum is the one mapping. A value kind is the one-letter tag ``jvm/FieldCodec.java`` gives a
flattened value.
"""
from __future__ import annotations

from enum import StrEnum


class ColumnType(StrEnum):
    BIGINT = "bigint"
    DECIMAL = "decimal(38,6)"
    STRING = "string"
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"


class ValueKind(StrEnum):
    BOOLEAN = "b"
    INTEGER = "i"
    DECIMAL = "d"
    TIME = "t"  # an ISO 8601 date-time in a string
    STRING = "s"

    @property
    def column_type(self) -> ColumnType:
        """The narrowest column type that holds every value of this kind."""
        return _COLUMN_TYPE[self]


_COLUMN_TYPE = {ValueKind.BOOLEAN: ColumnType.BOOLEAN, ValueKind.INTEGER: ColumnType.BIGINT,
                ValueKind.DECIMAL: ColumnType.DECIMAL, ValueKind.TIME: ColumnType.TIMESTAMP,
                ValueKind.STRING: ColumnType.STRING}
