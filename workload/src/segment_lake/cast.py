"""Cast kind-tagged values to their column's type; values that would lose information become NULL
and are listed as discards of the row (column, raw value, reason)."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .infer import BIGINT, BOOLEAN, DECIMAL, STRING, TIMESTAMP, TableSchema

# Between a timestamp value's UTC form and its original text (see jvm/ParseEvent.java).
TIMESTAMP_SEPARATOR = "\x1f"


def _kind(v: Column) -> Column:
    return F.substring(v, 1, 1)


def _text(v: Column) -> Column:
    return F.substring(v, 2, 1 << 30)


def original_text(v: Column) -> Column:
    """The value as the event had it (a timestamp keeps its original spelling)."""
    text = _text(v)
    return F.when(_kind(v) == "t", F.substring_index(text, TIMESTAMP_SEPARATOR, -1)).otherwise(text)


def cast_value(v: Column, target: str) -> Column:
    """``v`` (kind-tagged text) as ``target``, or NULL when that is not lossless."""
    kind, text = _kind(v), _text(v)
    if target == STRING:
        return original_text(v)
    if target == BIGINT:
        whole = text.cast("decimal(38,0)")
        exact = text.cast("decimal(38,6)")
        narrowed = whole.cast("bigint")  # wraps around silently when out of range: compare back
        return (F.when(kind == "i", text.cast("bigint"))
                .when(kind.isin("d", "s") & (whole == exact) & (narrowed.cast("decimal(38,0)") == whole), narrowed))
    if target == DECIMAL:
        return F.when(kind.isin("i", "d", "s"), text.cast(DECIMAL))
    if target == BOOLEAN:
        lowered = F.lower(F.trim(text))
        return F.when(kind == "b", text == "true").when((kind == "s") & lowered.isin("true", "false"), lowered == "true")
    if target == TIMESTAMP:
        return F.when(kind == "t", F.substring_index(text, TIMESTAMP_SEPARATOR, 1).cast("timestamp"))
    raise ValueError(f"unsupported column type {target!r}")


def apply_schema(events: DataFrame, schema: TableSchema, keep: list[str], reserved: list[str] = ()) -> DataFrame:
    """One typed column per schema column (in order), the ``keep`` columns, and ``value_discards``:
    the parse stage's discards, every value its column's type could not hold, and values of
    columns named like a ``reserved`` (partition) column."""
    typed, failures = [], []
    for column in reserved:
        v = F.element_at(F.col("fields"), F.lit(column))
        failures.append(F.when(v.isNotNull(), F.struct(
            F.lit(column).alias("column"), original_text(v).alias("value"),
            F.lit("column name is a partition key of the table").alias("reason"))))
    for column, target in schema.columns:
        v = F.element_at(F.col("fields"), F.lit(column))
        value = cast_value(v, target)
        typed.append(value.alias(column))
        failures.append(F.when(v.isNotNull() & value.isNull(), F.struct(
            F.lit(column).alias("column"), original_text(v).alias("value"),
            F.lit(f"cannot be stored in a {target} column without loss").alias("reason"))))
    discards = F.col("discards")
    if failures:
        discards = F.concat(discards, F.filter(F.array(*failures), lambda item: item.isNotNull()))
    return events.select(*keep, *typed, discards.alias("value_discards"))
