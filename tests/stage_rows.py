"""Rows as the parse stage leaves them, written by the write stage: the input of the write and publish tests."""
from pyspark.sql import functions as F

from segment_lake.field_codec import ENCODE, register_codec
from segment_lake.parquet_tables import DATA, DISCARDS, LANDED, TablePlan, write_parquet_tables

# the parse stage's rows, with the fields as a map of kind-tagged text (encoded as the parser does)
EVENTS_SCHEMA = ("table string, day string, _message_id string, _received_at timestamp, fields map<string,string>, "
                 "discards array<struct<column:string,value:string,reason:string>>")


def write_rows(spark, tmp_path, rows, columns, max_records_per_file=100, max_columns=5000):
    """The tables' writer on ``rows`` (EVENTS_SCHEMA) in two tasks; returns the files written and their rows (as
    dicts)."""
    register_codec(spark)
    frame = (spark.createDataFrame(rows, EVENTS_SCHEMA).repartition(2)
             .select("table", F.concat(F.lit("day="), "day").alias("partition"), "_message_id", "_received_at",
                     F.expr(f"{ENCODE}(fields)").alias("fields"), "discards"))
    written = write_parquet_tables(frame, TablePlan(columns, ["day"], f"file://{tmp_path}/stage", max_records_per_file,
                                                    max_columns))
    read = {kind: [r.asDict() for f in written if f.kind == kind for r in spark.read.parquet(f.uri).collect()]
            for kind in (DATA, DISCARDS, LANDED)}
    return written, read
