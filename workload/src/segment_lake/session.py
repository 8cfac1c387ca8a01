"""The Spark session: local mode on a laptop, YARN under spark-submit on EMR, with the embedded
Hive metastore (Derby) inside a local lake, or Glue."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from . import class_archive, embedded_catalog, iceberg_tables, interrupt
from .errors import InvalidSettings
from .jvm_code import compiled_jar, spark_jars_folder
from .layout import metastore_dir


def _under_spark_submit() -> bool:
    # spark-submit starts the Python driver with a gateway to its JVM.
    return "PYSPARK_GATEWAY_PORT" in os.environ


QUIET_LOGGING = Path(__file__).with_name("log4j2.properties")

# The sync streams its rows through shuffle files on disk, so its heap does not grow with a run:
# 2 GB holds a run of 10M events (2.5 GB in all, docs/performance.md), and a smaller machine gives 40% of its memory.
MAX_DEFAULT_DRIVER_MB, MIN_DRIVER_MB = 2048, 512
MEMORY = re.compile(r"[1-9][0-9]*[kmgt]?", re.IGNORECASE)  # as spark.driver.memory takes it


def driver_memory(option: str | None = None) -> str:
    """Spark's heap in local mode: ``option``, else SEGMENT_LAKE_DRIVER_MEMORY, else from this machine's memory."""
    chosen = option or os.environ.get("SEGMENT_LAKE_DRIVER_MEMORY")
    if chosen:
        if not MEMORY.fullmatch(chosen):
            raise InvalidSettings(f"invalid driver memory {chosen!r}: use a size such as 4g or 3072m")
        return chosen
    physical_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return f"{max(MIN_DRIVER_MB, min(MAX_DEFAULT_DRIVER_MB, physical_mb * 2 // 5))}m"


def cores(option: int | None = None) -> int:
    """Spark's task slots in local mode: ``option``, else SEGMENT_LAKE_CORES, else this machine's cores."""
    chosen = option if option is not None else os.environ.get("SEGMENT_LAKE_CORES")
    if chosen is None or chosen == "":
        return len(os.sched_getaffinity(0))
    if not str(chosen).isdigit() or int(chosen) < 1:
        raise InvalidSettings(f"invalid number of cores {chosen!r}: use a whole number of at least 1")
    return int(chosen)


def jvm_exit_code(spark: SparkSession, error: BaseException) -> int | None:
    """The exit code of a local session's JVM when it has exited; None while it runs (or under spark-submit).
    When ``error`` says the JVM is going down, it gets a moment to finish exiting."""
    process = getattr(spark.sparkContext._gateway, "proc", None)
    if process is None:
        return None
    if process.poll() is not None or not _jvm_going_down(error):
        return process.poll()
    try:
        # its shutdown hooks (Spark's, Derby's) may take tens of seconds on a busy machine: a sync's suite saw 10 s pass
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        return None


def _jvm_going_down(error: BaseException) -> bool:
    from py4j.protocol import Py4JError

    if isinstance(error, ConnectionError) or (isinstance(error, Py4JError) and not hasattr(error, "java_exception")):
        return True  # the connection to the JVM is lost
    try:
        return "SparkContext was shut down" in str(error)  # a job cancelled as the JVM exits
    except Exception:  # py4j asks the JVM for the message
        return True


def _local_jars() -> list[str]:
    """The jars a local JVM adds to Spark's class path (s3a's, from set-up): SEGMENT_LAKE_SPARK_JARS, comma-separated
    files (under spark-submit, pass --jars instead)."""
    jars = [jar.strip() for jar in os.environ.get("SEGMENT_LAKE_SPARK_JARS", "").split(",") if jar.strip()]
    for jar in jars:
        if os.pathsep in jar or not os.path.isfile(jar):
            raise InvalidSettings(f"SEGMENT_LAKE_SPARK_JARS names {jar!r}, which is not a jar file: give local paths, "
                                  f"comma-separated (make setup sets it)")
    return jars


def build_session(app_name: str, lake_uri: str | None = None, local_catalog: bool = True,
                  memory: str | None = None, task_slots: int | None = None, verbose: bool = False,
                  reads_only: bool = False, record_classes: bool = False, iceberg: bool = False) -> SparkSession:
    """A session for ``app_name``; with a local ``lake_uri`` and ``local_catalog``, its metastore lives in the lake.
    In local mode, ``memory`` and ``task_slots`` override the defaults of driver_memory() and cores(), and
    Spark logs only errors unless ``verbose``. A command that ``reads_only`` opens a copy of a metastore this user may
    not write (Derby would wait for minutes to write its lock files there). A local JVM maps the class archive of
    its jars (class_archive.py), or records it when there is none and ``record_classes`` (the CLI's commands). An
    embedded catalog opens with Apache Iceberg when ``iceberg`` or when it already holds an Iceberg table
    (iceberg_tables.py); locally, Iceberg's jars come from SEGMENT_LAKE_ICEBERG_JARS."""
    builder = SparkSession.builder.appName(app_name)
    java_options = []
    local_jars = _local_jars()
    embedded = local_catalog and lake_uri and lake_uri.startswith("file:")
    iceberg = iceberg or bool(embedded and embedded_catalog.holds_iceberg(metastore_dir(lake_uri)))
    # Iceberg's jars go at the end of the JVM's class path (the launcher appends SPARK_DIST_CLASSPATH after Spark's
    # jars): the class path of a Parquet lake's JVMs stays its prefix, so both map one class archive (the JVM takes
    # an archive of a prefix of its class path), and no Iceberg command records a second (30 CPU-s, 200 MB)
    appended = iceberg_tables.local_jars() if iceberg and not _under_spark_submit() else []
    if not _under_spark_submit():
        # Python workers must import this package: run them on this interpreter.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        slots = cores(task_slots)
        builder = (builder.master(f"local[{slots}]")
                   # The sync's classes, from the start: the local file system below is one of them. The added jars
                   # too, not as spark.jars: in local mode that copied their 185 MB into a temporary folder at every
                   # start (left behind by a killed run) and kept their classes out of the class archive (`sql` here:
                   # 4.7 -> 3.8 CPU-s).
                   .config("spark.driver.extraClassPath", os.pathsep.join([compiled_jar(), *local_jars]))
                   .config("spark.hadoop.fs.file.impl", "segmentlake.LocalFileSystem")
                   .config("spark.ui.enabled", "false")
                   # a few tasks per core: a busy table partition is split over several (ParseLines.java)
                   .config("spark.sql.shuffle.partitions",
                           os.environ.get("SEGMENT_LAKE_SHUFFLE_PARTITIONS", str(max(8, 4 * slots))))
                   .config("spark.driver.memory", driver_memory(memory)))
        # A sync is a minute of many short Spark queries: at the default thresholds the JIT compilers
        # spent a third of its CPU compiling code that ran a few hundred times (5-8% faster end to end).
        java_options.append("-XX:CompileThresholdScaling=3")
        # Spark's memory pages, sort arrays and column buffers are arrays of 1-64 MB: with G1's default 1 MB regions
        # for a 2 GB heap each is a humongous object that grows the heap (a replay of 1M events peaked at 1.3x the
        # first sync's memory); at 16 MB only the largest pages are (1.0-1.15x).
        java_options.append("-XX:G1HeapRegionSize=16m")
        # after the defaults above, so that they can override them
        java_options += [shlex.quote(option) for option in shlex.split(os.environ.get("SEGMENT_LAKE_JAVA_OPTIONS", ""))]
        if not verbose and not os.environ.get("SEGMENT_LAKE_LOG_LEVEL"):
            # from the JVM's start: its first warnings come before any setLogLevel
            java_options.append(f'"-Dlog4j.configurationFile={QUIET_LOGGING}"')
    builder = (builder.config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.parquet.compression.codec", "snappy")
               .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
               # type inference aggregates (table, column) pairs: keep it in a hash map, not a sort
               .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "65536")
               # timestamps are proleptic Gregorian, as java.time and Athena read them
               .config("spark.sql.parquet.int96RebaseModeInWrite", "CORRECTED")
               .config("spark.sql.parquet.datetimeRebaseModeInWrite", "CORRECTED")
               .config("spark.ui.showConsoleProgress", "false")
               # s3a (Hadoop 3.3) deletes the folder markers above every file it writes: a LIST and a DELETE a file.
               # Kept, as Hadoop 3.4 does by default; clients from 3.2.2 and 2.10.2 on read such a bucket (3.0 and 3.1
               # may take a kept marker for an empty folder when they rename)
               .config("spark.hadoop.fs.s3a.directory.marker.retention", "keep"))
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:  # a local S3 endpoint (tests, MinIO): path-style requests, plain HTTP
        builder = (builder.config("spark.hadoop.fs.s3a.endpoint", endpoint)
                   .config("spark.hadoop.fs.s3a.path.style.access", "true")
                   .config("spark.hadoop.fs.s3a.connection.ssl.enabled", str(endpoint.startswith("https")).lower())
                   .config("spark.hadoop.fs.s3a.aws.credentials.provider",
                           "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"))
    store = creating_in = None  # the folder of an embedded catalog, and that of one this command creates
    if embedded:  # after the settings' checks above: a refused command makes no folder
        store = embedded_catalog.store_for(metastore_dir(lake_uri), reads_only)
        if not embedded_catalog.created(store):
            creating_in = store
        builder = (builder.enableHiveSupport()
                   .config("spark.sql.warehouse.dir", os.path.join(store, "warehouse"))
                   # one folder, not a new <session>_resources in the temporary folder at every command (Hive's
                   # session never closes in Spark, so each was left behind; it stays empty: nothing adds resources)
                   .config("spark.hadoop.hive.downloaded.resources.dir", os.path.join(store, "resources"))
                   .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                           f"jdbc:derby:;databaseName={os.path.join(store, embedded_catalog.DATABASE)};create=true"))
        java_options.append(f'"-Dderby.system.home={store}"')  # quoted: a path may hold spaces
        if iceberg:
            if not reads_only:
                embedded_catalog.mark_iceberg(store)  # every later command on the lake opens it with Iceberg
    if iceberg:
        for key, value in iceberg_tables.session_settings(embedded=store is not None).items():
            builder = builder.config(key, value)
    from pyspark import SparkContext

    recording = None
    if not _under_spark_submit():
        # only a JVM this session starts takes the options, and only one the CLI starts records; the class path in
        # the JVM's order, as the JVM refuses an archive of another
        options, recording = class_archive.java_options([compiled_jar(), *local_jars, spark_jars_folder()],
                                                        record_classes and not appended
                                                        and SparkContext._gateway is None)
        java_options += options
    if java_options:
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(java_options))
    starting = SparkContext._active_spark_context is None
    with _appended_to_class_path(appended):
        spark = builder.getOrCreate()
    if starting:
        _STARTED.append(spark)
        if recording:
            _RECORDING.append((recording, SparkContext._gateway))
        if interrupt.ENABLED:
            interrupt.install(spark)
    spark.sparkContext.setLogLevel(os.environ.get("SEGMENT_LAKE_LOG_LEVEL", "WARN" if verbose else "ERROR"))
    if _under_spark_submit() and not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        conf = dict(spark.sparkContext.getConf().getAll())
        chosen = os.environ.get("SEGMENT_LAKE_SHUFFLE_PARTITIONS") or cluster_shuffle_partitions(
            conf, spark.sparkContext.defaultParallelism, _yarn_vcores(spark))
        spark.conf.set("spark.sql.shuffle.partitions", str(chosen))
    if creating_in and starting:  # (a JVM started earlier keeps the catalog it opened)
        with embedded_catalog.creation(creating_in) as must_create:
            if must_create:  # now, under the lock (Hive would create it at the first catalog call)
                embedded_catalog.create(spark)
    return spark


@contextmanager
def _appended_to_class_path(jars: list[str]) -> Iterator[None]:
    """While a local JVM starts: ``jars`` at the end of its class path, after Spark's own."""
    if not jars:  # the launch's environment as it is
        yield
        return
    before = os.environ.get("SPARK_DIST_CLASSPATH")
    os.environ["SPARK_DIST_CLASSPATH"] = os.pathsep.join(filter(None, [before, *jars]))
    try:
        yield
    finally:
        if before is None:
            del os.environ["SPARK_DIST_CLASSPATH"]
        else:
            os.environ["SPARK_DIST_CLASSPATH"] = before


_STARTED: list[SparkSession] = []
_RECORDING: list = []  # (class_archive.Recording, the gateway of the JVM that records)
# dynamic allocation's maxExecutors when not set (Int.MaxValue): no bound
_UNBOUNDED_EXECUTORS = 100_000


def cluster_shuffle_partitions(conf: dict[str, str], registered_cores: int, cluster_cores: int = 0) -> int:
    """Spark's tasks per shuffle on a cluster: four per core, at least 8, rather than Spark's fixed 200 (each
    write task of a run leaves a landed-index file that every later dedup reads). The cores are the executors'
    (``spark.executor.cores`` times ``spark.executor.instances``, else dynamic allocation's ``maxExecutors`` when
    bounded), those registered when the session starts, or the cluster's (YARN's running nodes: EMR's dynamic
    allocation has no bound and starts with no executor), whichever is most."""
    per_executor = int(conf.get("spark.executor.cores", "1"))
    executors = int(conf.get("spark.executor.instances", "0"))
    if not executors and conf.get("spark.dynamicAllocation.enabled") == "true":
        executors = int(conf.get("spark.dynamicAllocation.maxExecutors", str(_UNBOUNDED_EXECUTORS)))
        executors = 0 if executors >= _UNBOUNDED_EXECUTORS else executors
    return max(8, 4 * max(registered_cores, per_executor * executors, cluster_cores))


def _yarn_vcores(spark: SparkSession) -> int:
    """The virtual cores of the cluster's running YARN nodes, or 0 (not on YARN, or YARN did not answer)."""
    if spark.sparkContext.master != "yarn":
        return 0
    try:
        jvm = spark.sparkContext._jvm
        yarn = jvm.org.apache.hadoop.yarn
        client = yarn.client.api.YarnClient.createYarnClient()
        client.init(yarn.conf.YarnConfiguration(spark.sparkContext._jsc.hadoopConfiguration()))
        client.start()
        try:
            running = spark.sparkContext._gateway.new_array(yarn.api.records.NodeState, 1)
            running[0] = yarn.api.records.NodeState.RUNNING
            return sum(node.getCapability().getVirtualCores() for node in client.getNodeReports(running))
        finally:
            client.stop()
    except Exception:  # noqa: BLE001 - the other measures of the cluster still apply
        return 0


def started_sessions() -> int:
    """How many sessions ``build_session`` has started so far: a mark for ``stop_started_sessions``."""
    return len(_STARTED)


def stop_started_sessions(since: int = 0) -> None:
    """Stops the sessions ``build_session`` started after the mark ``since``, not one it found running (a
    notebook's, a test's) or started before: the executors and, under spark-submit, the application end with the
    command, not at the JVM's exit."""
    while len(_STARTED) > since:
        spark = _STARTED.pop()
        try:
            spark.stop()
        except Exception:  # noqa: BLE001 - a JVM that died with the command (its error is already reported)
            pass
    if _RECORDING and not _STARTED:
        _finish_recording(*_RECORDING.pop())


def _finish_recording(recording: class_archive.Recording, gateway) -> None:
    """Ends the JVM that records the class archive and keeps the archive, unless a signal stopped the command: then
    the JVM is killed, so that the command ends at once (writing the archive takes seconds, and whoever reads the
    command's output would wait for the JVM, which holds the same pipes)."""
    from pyspark import SparkContext

    if interrupt.received():
        jvm = getattr(gateway, "proc", None)
        if jvm is not None:
            jvm.kill()
            jvm.wait()
        recording.finish(None)
        return
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the JVM is ending anyway
        pass
    SparkContext._gateway = SparkContext._jvm = None  # a later session in this process starts a new JVM
    recording.finish(getattr(gateway, "proc", None))
