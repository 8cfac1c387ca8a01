"""The lake contract's tests (test_lake_format.py) and the real-shaped conformance (test_real_shaped.py) on a lake of
Iceberg tables: those modules again, with the modules that need Iceberg's session (conftest.ICEBERG_SESSION_MODULES),
in a pytest of their own whose Spark opens with Iceberg (a JVM's catalogs are set when it starts, and the suite's serve
the Parquet lakes). Their rows are read by pyiceberg from each table's metadata."""
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ICEBERG_SESSION_MODULES
from iceberg_readers import TESTS_TABLE_FORMAT

pytestmark = [pytest.mark.spark, pytest.mark.aws]

MODULES = [Path(__file__).with_name(name) for name in ("test_lake_format.py", "test_real_shaped.py",
                                                      *ICEBERG_SESSION_MODULES)]


def test_the_contract_and_the_real_shaped_payloads_hold_on_iceberg_tables(tmp_path):
    tests = sum(isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
                for module in MODULES for node in ast.parse(module.read_text()).body)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_ADDOPTS"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *map(str, MODULES), "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path)],
        env={**environment, TESTS_TABLE_FORMAT: "iceberg"}, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    summary = result.stdout.strip().splitlines()[-1]  # every test passed: none failed, skipped or deselected
    assert re.fullmatch(rf"(=+ )?{tests} passed(, \d+ warnings?)? in [\d.]+s( \(.*\))?( =+)?", summary), \
        result.stdout[-2000:]
    for lakes in ("contract-iceberg*", "real-shaped*", "hidden-hours*"):  # each module's lakes are Iceberg tables
        assert list(tmp_path.glob(f"{lakes}/*/segment-data/data/*/*/metadata/*.metadata.json")), lakes
