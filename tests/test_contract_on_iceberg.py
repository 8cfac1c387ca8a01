"""The lake contract's tests (test_lake_format.py) and the real-shaped conformance (test_real_shaped.py) on a lake of
Iceberg tables: those modules again, with the modules that need Iceberg's session (conftest.ICEBERG_SESSION_MODULES),
in a pytest of their own whose Spark opens with Iceberg (a JVM's catalogs are set when it starts, and the suite's serve
the Parquet lakes). Their rows are read by pyiceberg from each table's metadata."""
from pathlib import Path

import pytest
from conftest import ICEBERG_SESSION_MODULES
from iceberg_readers import TESTS_TABLE_FORMAT
from nested_pytest import run_modules

pytestmark = [pytest.mark.spark, pytest.mark.aws]

MODULES = [Path(__file__).with_name(name) for name in ("test_lake_format.py", "test_real_shaped.py",
                                                      *ICEBERG_SESSION_MODULES)]


def test_the_contract_and_the_real_shaped_payloads_hold_on_iceberg_tables(tmp_path):
    run_modules(MODULES, tmp_path, {TESTS_TABLE_FORMAT: "iceberg"})
    for lakes in ("contract-iceberg*", "real-shaped*", "hidden-hours*"):  # each module's lakes are Iceberg tables
        assert list(tmp_path.glob(f"{lakes}/*/segment-data/data/*/*/metadata/*.metadata.json")), lakes
