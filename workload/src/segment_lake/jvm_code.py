"""The sync's Java classes (``jvm/*.java``), compiled once per version of the sources and loaded
into Spark's JVM, so that events are parsed, inferred and written without passing through Python.

Janino, which Spark ships for its own code generation, compiles all the sources together (they
use each other) in a short-lived JVM of its own, before Spark starts: a local session then has the
classes on its class path from the start (its file system is one of them), and a session started
by spark-submit adds the jar, which also ships it to every executor.
"""
from __future__ import annotations

import glob
import hashlib
import os
import shutil
import tempfile
import zipfile
from importlib import resources

from pyspark.sql import SparkSession

PACKAGE = "segmentlake"


def _sources() -> dict[str, str]:
    folder = resources.files(__package__).joinpath("jvm")
    return {entry.name: entry.read_text() for entry in sorted(folder.iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".java")}


def java_binary() -> str:
    """The java Spark itself runs, as spark-class picks it: JAVA_HOME's, else the one on the PATH."""
    java_home = os.environ.get("JAVA_HOME")
    return os.path.join(java_home, "bin", "java") if java_home else (shutil.which("java") or "java")


def spark_jars_folder() -> str:
    from pyspark.find_spark_home import _find_spark_home

    return os.path.join(_find_spark_home(), "jars")


def compiled_jar() -> str:
    """The jar of every class of ``jvm/*.java``; compiled when this version of the sources has no jar yet."""
    sources = _sources()
    digest = hashlib.sha256("\0".join(f"{name}\0{text}" for name, text in sources.items()).encode()).hexdigest()[:16]
    jar = os.path.join(tempfile.gettempdir(), f"segment-lake-{os.getuid()}-{digest}.jar")
    if not os.path.exists(jar):
        classes = _compile(sources)
        partial = f"{jar}.{os.getpid()}"
        with zipfile.ZipFile(partial, "w") as archive:
            for path, code in sorted(classes.items()):
                archive.writestr(path, code)
        os.replace(partial, jar)  # atomic: a concurrent sync sees no half-written jar
    return jar


def _compile(sources: dict[str, str]) -> dict[str, bytes]:
    """Class file path -> bytes, compiled by Janino in a JVM with Spark's jars on its class path."""
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway
    from py4j.protocol import Py4JJavaError

    java = java_binary()
    # Spark's own py4j jar: under spark-submit py4j is imported from a zip, where py4j cannot find its jar.
    py4j_jars = sorted(glob.glob(os.path.join(spark_jars_folder(), "py4j-*.jar")))
    if not py4j_jars:
        raise RuntimeError(f"no py4j jar in {spark_jars_folder()}: the sync needs a Spark 3.5 installation with its jars")
    try:
        port = launch_gateway(jarpath=py4j_jars[-1], classpath=os.path.join(spark_jars_folder(), "*"), die_on_exit=True,
                              java_path=java)
    except OSError as error:
        raise RuntimeError(f"cannot start {java} ({error.strerror}): Spark needs Java 17; "
                           f"install it or point JAVA_HOME at it") from None
    gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port))
    try:
        jvm = gateway.jvm
        resource = jvm.org.codehaus.commons.compiler.util.resource
        compiler = jvm.org.codehaus.janino.Compiler()
        compiler.setIClassLoader(jvm.org.codehaus.janino.ClassLoaderIClassLoader(
            jvm.java.lang.Thread.currentThread().getContextClassLoader()))
        classes = jvm.java.util.HashMap()
        compiler.setClassFileCreator(resource.MapResourceCreator(classes))
        units = gateway.new_array(resource.Resource, len(sources))
        for index, (name, text) in enumerate(sources.items()):
            units[index] = resource.StringResource(f"{PACKAGE}/{name}", text)
        try:
            compiler.compile(units)
        except Py4JJavaError as error:  # read the message while the JVM lives
            raise RuntimeError(f"the sync's Java sources do not compile: {error.java_exception.getMessage()}") from None
        return {path: bytes(code) for path, code in classes.items()}
    finally:
        gateway.shutdown()


def load_class(spark: SparkSession, name: str):
    """The class ``segmentlake.<name>`` in ``spark``'s JVM (and on its executors)."""
    loader = spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    qualified = f"{PACKAGE}.{name}"
    try:
        return loader.loadClass(qualified)
    except Exception:  # py4j wraps ClassNotFoundException
        spark.sql(f"ADD JAR '{compiled_jar()}'")  # also puts the classes on this thread's class loader
        return spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(qualified)
