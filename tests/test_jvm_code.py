"""The sync's Java sources compile wherever the sync runs."""
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import py4j
import pytest
from conftest import REPO

pytestmark = pytest.mark.spark


def test_the_java_sources_compile_when_py4j_comes_from_a_zip(tmp_path):
    """As under spark-submit on EMR, which imports py4j from Spark's python/lib/py4j-*-src.zip, where py4j
    cannot find its own jar: the sync must start the compiler JVM with Spark's py4j jar instead."""
    package = Path(py4j.__file__).parent
    archive = tmp_path / "py4j-src.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in package.rglob("*.py"):
            out.write(path, f"py4j/{path.relative_to(package)}")
    base_python = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    pythonpath = os.pathsep.join([str(archive), str(REPO / "workload" / "src"), sysconfig.get_paths()["purelib"]])
    script = (f"import py4j; assert py4j.__file__.startswith({str(archive)!r}), py4j.__file__\n"
              "from segment_lake import jvm_code\n"
              "classes = jvm_code._compile(jvm_code._sources())\n"
              "print(sorted(name for name in classes if '$' not in name))")
    run = subprocess.run([str(base_python), "-c", script], env={**os.environ, "PYTHONPATH": pythonpath},
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "segmentlake/ParseLines.class" in run.stdout and "segmentlake/WriteTables.class" in run.stdout
