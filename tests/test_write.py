"""The write stage on tiny DataFrames: values cast losslessly or discarded with their reason, one file per table and
partition, the column limit."""
from datetime import datetime

import pytest
from stage_rows import write_rows

from segment_lake.parquet_tables import DATA, DISCARDS, LANDED

pytestmark = [pytest.mark.fast, pytest.mark.spark]


@pytest.mark.parametrize("encoded,target,expected", [
    ("i5", "bigint", 5), ("s5", "bigint", 5), ("d5.0", "bigint", 5), ("d5.5", "bigint", None), ("sabc", "bigint", None),
    (f"d{2**63}", "bigint", None), ("btrue", "bigint", None), ("s 7 ", "bigint", 7),
    ("i5", "decimal(38,6)", "5.000000"), ("d1.25", "decimal(38,6)", "1.250000"), ("s2.5", "decimal(38,6)", "2.500000"),
    ("d0.1234567", "decimal(38,6)", "0.123457"), ("sx", "decimal(38,6)", None),
    ("btrue", "boolean", True), ("strue", "boolean", True), ("sFALSE", "boolean", False), ("syes", "boolean", None),
    ("i1", "boolean", None),
    ("t2024-01-02 03:04:05.000000\x1f2024-01-02T03:04:05Z", "timestamp", datetime(2024, 1, 2, 3, 4, 5)),
    ("t2024-01-02 03:04:05.250000\x1f2024-01-02T03:04:05.25Z", "timestamp", datetime(2024, 1, 2, 3, 4, 5, 250000)),
    ("t1850-01-02 03:04:05.000000\x1f1850-01-02T03:04:05Z", "timestamp", datetime(1850, 1, 2, 3, 4, 5)),
    ("syesterday", "timestamp", None), ("i1700000000", "timestamp", None),
    ("t2024-01-02 03:04:05.000000\x1f2024-01-02T03:04:05Z", "string", "2024-01-02T03:04:05Z"),
    ("btrue", "string", "true"), ("i7", "string", "7"), ('s["a"]', "string", '["a"]'),
])
def test_cast_is_lossless_or_null(spark, tmp_path, encoded, target, expected):
    _, read = write_rows(spark, tmp_path, [("t", "2024-01-02", "m", datetime(2024, 1, 2), {"v": encoded}, [])],
                     {"t": [("v", target)]})
    value = read[DATA][0]["v"]
    assert (str(value) if target.startswith("decimal") and value is not None else value) == expected
    assert len(read[DISCARDS]) == (1 if expected is None else 0)



def test_the_writer_discards_what_does_not_fit_and_splits_tables_and_partitions(spark, tmp_path):
    t = datetime(2024, 1, 2, 3)
    rows = [("a", "2024-01-02", f"m{i}", t, {"x": f"i{i}", "day": "sMonday"}, []) for i in range(5)]
    rows += [("a", "2024-01-03", "m5", t, {"x": "sx"}, [("k", "1", "parse reason")]),
             ("b", "2024-01-02", "m6", t, {"y": "strue", "z": None}, [])]
    written, read = write_rows(spark, tmp_path, rows, {"a": [("x", "bigint")], "b": [("y", "boolean"), ("z", "string")]},
                           max_records_per_file=2)
    data = sorted((f.table, f.partition, f.rows) for f in written if f.kind == DATA)
    assert data == [("a", "day=2024-01-02", 1), ("a", "day=2024-01-02", 2), ("a", "day=2024-01-02", 2),
                    ("a", "day=2024-01-03", 1), ("b", "day=2024-01-02", 1)]
    assert sorted(read[DATA], key=lambda r: str(r)) == sorted(
        [{"x": i} for i in range(5)] + [{"x": None}, {"y": True, "z": None}], key=lambda r: str(r))
    discards = sorted((d["table_name"], d["column_name"], d["message_id"], d["value"], d["reason"]) for d in read[DISCARDS])
    assert discards == sorted([("a", "day", f"m{i}", "Monday", "column name is a partition key of the table") for i in range(5)]
                              + [("a", "k", "m5", "1", "parse reason"),
                                 ("a", "x", "m5", "x", "cannot be stored in a bigint column without loss")])
    assert sorted((r["message_id"], r["received_at"]) for r in read[LANDED]) == [(f"m{i}", t) for i in range(7)]



def test_a_table_at_its_column_limit_discards_the_values_of_columns_it_could_not_take(spark, tmp_path):
    t = datetime(2024, 1, 2, 3)
    rows = [("a", "2024-01-02", "m1", t, {"x": "i1", "extra": "sv", "more": "i2"}, [])]
    _, read = write_rows(spark, tmp_path, rows, {"a": [("x", "bigint")]}, max_columns=1)
    assert read[DATA] == [{"x": 1}]
    assert sorted((d["column_name"], d["value"], d["reason"]) for d in read[DISCARDS]) == [
        ("extra", "v", "the table has its limit of 1 columns (--max-columns-per-table)"),
        ("more", "2", "the table has its limit of 1 columns (--max-columns-per-table)")]
    with pytest.raises(Exception, match="is not in the schema of a"):  # below the limit: a bug
        write_rows(spark, tmp_path / "below", rows, {"a": [("x", "bigint")]}, max_columns=5)



def _dictionary_columns(spark, uri):
    """The columns of a Parquet file written with a dictionary, read from its footer."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(jvm.org.apache.hadoop.fs.Path(uri), conf)
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source)
    try:
        chunks = [chunk for block in reader.getFooter().getBlocks() for chunk in block.getColumns()]
        return {chunk.getPath().toDotString() for chunk in chunks
                if any("DICTIONARY" in encoding.name() for encoding in chunk.getEncodings())}
    finally:
        reader.close()



def test_per_event_columns_are_written_without_a_dictionary(spark, tmp_path):
    t = datetime(2024, 1, 2, 3)
    rows = [("a", "2024-01-02", f"m{i}", t, {"message_id": f"sm{i}", "sent_at": "t2024-01-02 03:04:05.000000\x1fx",
                                             "channel": "sserver"}, []) for i in range(50)]
    written, _ = write_rows(spark, tmp_path, rows, {"a": [("message_id", "string"), ("sent_at", "timestamp"),
                                                      ("channel", "string")]})
    for file in written:
        assert _dictionary_columns(spark, file.uri) == ({"channel"} if file.kind == DATA else set())

