"""The sync's Java classes (``jvm/*.java``), compiled when a session first needs them and loaded
into Spark's JVM, so that events are parsed, inferred and written without passing through Python.

Janino, which Spark ships for its own code generation, compiles all the sources together (they
use each other); the classes go to the session as one jar, so they also run on every executor.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from importlib import resources

from pyspark.sql import SparkSession

PACKAGE = "segmentlake"


def _sources() -> dict[str, str]:
    folder = resources.files(__package__).joinpath("jvm")
    return {entry.name: entry.read_text() for entry in sorted(folder.iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".java")}


def _compiled_jar(spark: SparkSession) -> str:
    """Every class of ``jvm/*.java`` in one jar, compiled once per version of the sources."""
    sources = _sources()
    digest = hashlib.sha256("\0".join(f"{name}\0{text}" for name, text in sources.items()).encode()).hexdigest()[:16]
    jar = os.path.join(tempfile.gettempdir(), f"segment-lake-{os.getuid()}-{digest}.jar")
    if os.path.exists(jar):
        return jar
    jvm = spark.sparkContext._jvm
    resource = jvm.org.codehaus.commons.compiler.util.resource
    compiler = jvm.org.codehaus.janino.Compiler()
    compiler.setIClassLoader(jvm.org.codehaus.janino.ClassLoaderIClassLoader(
        jvm.java.lang.Thread.currentThread().getContextClassLoader()))
    classes = jvm.java.util.HashMap()
    compiler.setClassFileCreator(resource.MapResourceCreator(classes))
    units = spark.sparkContext._gateway.new_array(resource.Resource, len(sources))
    for index, (name, text) in enumerate(sources.items()):
        units[index] = resource.StringResource(f"{PACKAGE}/{name}", text)
    compiler.compile(units)
    partial = f"{jar}.{os.getpid()}"
    with zipfile.ZipFile(partial, "w") as archive:
        for path, code in classes.items():
            archive.writestr(path, bytes(code))
    os.replace(partial, jar)  # atomic: a concurrent sync sees no half-written jar
    return jar


def load_class(spark: SparkSession, name: str):
    """The class ``segmentlake.<name>`` in ``spark``'s JVM (and on its executors)."""
    loader = spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    qualified = f"{PACKAGE}.{name}"
    try:
        return loader.loadClass(qualified)
    except Exception:  # py4j wraps ClassNotFoundException
        spark.sql(f"ADD JAR '{_compiled_jar(spark)}'")  # also puts the classes on this thread's class loader
        return spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(qualified)
