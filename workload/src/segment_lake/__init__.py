"""Segment Data Lakes sync: raw Segment events to partitioned Parquet tables in a catalog."""

__version__ = "0.1.0"
