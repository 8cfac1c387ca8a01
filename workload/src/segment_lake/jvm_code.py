"""The sync's Java classes (``jvm/*.java``), compiled when a session first needs them and loaded
into Spark's JVM, so that events are parsed and written without passing through Python.

Janino, which Spark ships for its own code generation, compiles them; the classes go to the
session as a jar, so they also run on every executor.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from importlib import resources

from pyspark.sql import SparkSession

PACKAGE = "segmentlake"


def _compiled_jar(spark: SparkSession, name: str) -> str:
    """The classes of ``jvm/<name>.java`` as a jar, compiled once per version of the source."""
    source = resources.files(__package__).joinpath("jvm", f"{name}.java").read_text()
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    jar = os.path.join(tempfile.gettempdir(), f"segment-lake-{os.getuid()}-{name}-{digest}.jar")
    if os.path.exists(jar):
        return jar
    jvm = spark.sparkContext._jvm
    compiler = jvm.org.codehaus.janino.SimpleCompiler()
    compiler.setParentClassLoader(jvm.java.lang.Thread.currentThread().getContextClassLoader())
    compiler.cook(source)
    partial = f"{jar}.{os.getpid()}"
    with zipfile.ZipFile(partial, "w") as archive:
        for class_name, code in compiler.getBytecodes().items():
            archive.writestr(class_name.replace(".", "/") + ".class", bytes(code))
    os.replace(partial, jar)  # atomic: a concurrent sync sees no half-written jar
    return jar


def load_class(spark: SparkSession, name: str):
    """The class ``segmentlake.<name>`` in ``spark``'s JVM (and on its executors)."""
    loader = spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    qualified = f"{PACKAGE}.{name}"
    try:
        return loader.loadClass(qualified)
    except Exception:  # py4j wraps ClassNotFoundException
        spark.sql(f"ADD JAR '{_compiled_jar(spark, name)}'")  # also puts the class on this thread's class loader
        return spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(qualified)
