"""Inference: the type lattice over value kinds, its Spark DDL names, and the plan that keeps the catalog's types and
appends new columns."""
import pytest
from pyspark.sql import types as T

from segment_lake.column_types import ColumnType, ValueKind
from segment_lake.infer import plan_schema, type_of_kinds

pytestmark = [pytest.mark.fast, pytest.mark.spark]


@pytest.mark.parametrize("kinds,expected", [
    ({"i"}, "bigint"), ({"i", "d"}, "decimal(38,6)"), ({"i", "s"}, "string"), ({"b"}, "boolean"),
    ({"b", "i"}, "string"), ({"t"}, "timestamp"), ({"t", "s"}, "string"), ({"d"}, "decimal(38,6)"),
])
def test_type_lattice(kinds, expected):
    assert type_of_kinds(kinds) == expected



def test_column_types_are_spark_ddl_names_and_every_kind_has_one(spark):
    expected = {ColumnType.BIGINT: T.LongType(), ColumnType.DECIMAL: T.DecimalType(38, 6),
                ColumnType.STRING: T.StringType(), ColumnType.BOOLEAN: T.BooleanType(),
                ColumnType.TIMESTAMP: T.TimestampType()}
    parse_ddl = spark.sparkContext._jvm.org.apache.spark.sql.types.DataType.fromDDL
    assert {t: T._parse_datatype_json_string(parse_ddl(t.value).json()) for t in ColumnType} == expected
    assert {kind: kind.column_type for kind in ValueKind} == {
        ValueKind.BOOLEAN: ColumnType.BOOLEAN, ValueKind.INTEGER: ColumnType.BIGINT, ValueKind.DECIMAL: ColumnType.DECIMAL,
        ValueKind.TIME: ColumnType.TIMESTAMP, ValueKind.STRING: ColumnType.STRING}



def test_plan_keeps_catalog_types_and_appends_new_columns_in_first_seen_order():
    existing = [("a", "bigint"), ("b", "string")]
    observed = [("c", {"s"}, (2, "m", 0)), ("a", {"s"}, (0, "m", 0)), ("d", {"i"}, (1, "m", 3)),
                ("sent_at", {"s"}, (1, "m", 1)), ("e", set(), (0, "m", 5))]
    schema = plan_schema(existing, observed, 5000)
    assert schema.columns == (("a", "bigint"), ("b", "string"), ("sent_at", "timestamp"), ("d", "bigint"),
                              ("c", "string"))
    assert schema.new_columns == ("sent_at", "d", "c") and schema.refused == ()
    # a table at its column limit takes the first seen, and names the others
    limited = plan_schema(existing, observed, 3)
    assert limited.columns == (("a", "bigint"), ("b", "string"), ("sent_at", "timestamp"))
    assert (limited.new_columns, limited.refused) == (("sent_at",), ("d", "c"))
    assert plan_schema(existing, observed, 1).columns == (("a", "bigint"), ("b", "string"))

