"""A pytest of its own for modules whose Spark must open otherwise than the suite's (a JVM's catalogs and jars are
fixed when it starts): test_contract_on_iceberg.py's (Iceberg on the embedded catalog) and test_iceberg_on_emr.py's
(Iceberg's Glue catalog)."""
import ast
import os
import re
import subprocess
import sys
from pathlib import Path


def run_modules(modules: list[Path], basetemp: Path, environment: dict[str, str]) -> None:
    """Runs every test of ``modules`` with ``environment`` added, its temporary folders below ``basetemp``; fails
    unless every one passed (none failed, skipped or deselected)."""
    tests = sum(isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
                for module in modules for node in ast.parse(module.read_text()).body)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_ADDOPTS"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *map(str, modules), "-q", "-p", "no:cacheprovider", "--basetemp", str(basetemp)],
        env={**inherited, **environment}, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"(=+ )?{tests} passed(, \d+ warnings?)? in [\d.]+s( \(.*\))?( =+)?", summary), \
        result.stdout[-2000:]
