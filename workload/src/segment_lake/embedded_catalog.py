"""The embedded catalog of a local lake: Hive's metastore in Derby (``segment-data/metastore/metastore_db``), created by
the first command that opens the lake, under a lock."""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import sys
import tempfile
import time

from pyspark.sql import SparkSession

CREATION_LOCK = "catalog-creation.lock"  # beside metastore_db
DATABASE = "metastore_db"
# the line Derby writes last in service.properties: a run killed before Derby flushed the file leaves it short or empty,
# and Derby refuses to open the folder ever after (XCY03: 'derby.serviceProtocol' has not been set)
LAST_LINE = "#--- last line, don't put anything after this line ---"
ICEBERG_MARKER = "holds-iceberg-tables"


def store_for(store: str, reads_only: bool) -> str:
    """The folder of the catalog a command opens: ``store`` (made if missing), or, for a command that ``reads_only``
    and may not write there, a copy (Derby would wait for minutes to write its lock files)."""
    database = os.path.join(store, DATABASE)
    if reads_only and not _writable(database if os.path.isdir(database) else store):
        return _read_only_copy(store)
    os.makedirs(store, exist_ok=True)
    return store


def holds_iceberg(store: str) -> bool:
    """Whether a sync made Iceberg tables in the catalog of ``store`` (then every command opens it with Iceberg)."""
    return os.path.exists(os.path.join(store, ICEBERG_MARKER))


def mark_iceberg(store: str) -> None:
    with open(os.path.join(store, ICEBERG_MARKER), "a"):
        pass


def created(store: str) -> bool:
    """Whether Derby finished writing the catalog's ``service.properties`` (a complete file ends with its last line).
    Derby keeps the previous file as ``service.propertiesold`` while it rewrites one: a catalog once complete is never
    taken for a half-created one."""
    database = os.path.join(store, DATABASE)
    if os.path.exists(os.path.join(database, "service.propertiesold")):
        return True
    try:
        with open(os.path.join(database, "service.properties"), "rb") as properties:
            return properties.read().rstrip().endswith(LAST_LINE.encode())
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def creation(store: str):
    """Held while this command creates the catalog in ``store``: a second command started meanwhile waits for it, and
    neither takes the other's folder for a killed run's. Yields whether the catalog is still to be created. Under the
    lock, a folder without a complete ``service.properties`` was left by a run killed while creating it (the kernel
    released its lock). Derby refuses to open such a folder ever after, and it never held a table (a finished run needs
    a created catalog): it is moved aside, and the redo registers its tables anew."""
    with open(os.path.join(store, CREATION_LOCK), "a") as lock_file:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("segment-lake: another command is creating the embedded catalog: waiting for it", file=sys.stderr)
            fcntl.flock(lock_file, fcntl.LOCK_EX)
        database = os.path.join(store, DATABASE)
        if created(store):
            yield False  # created meanwhile by the command this one waited for
            return
        if os.path.isdir(database):
            aside = f"{database}.half-created-{int(time.time())}"
            os.rename(database, aside)
            print(f"segment-lake: the embedded catalog was left half-created by a killed run; moved it to {aside}",
                  file=sys.stderr)
        yield True  # closing the file releases the lock


def create(spark: SparkSession) -> None:
    """Has Hive create the catalog of ``spark`` now (it would at the first catalog call), under ``creation``."""
    spark.catalog.listDatabases()


def _writable(folder: str) -> bool:
    """Whether this process may create a file in ``folder`` (tried: permission bits do not tell for root)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".segment-lake-probe-"):
            return True
    except OSError:
        return False


def _read_only_copy(store: str) -> str:
    """A copy of the embedded catalog in a temporary folder, removed when the process ends."""
    copy = tempfile.mkdtemp(prefix="segment-lake-catalog-")
    atexit.register(shutil.rmtree, copy, ignore_errors=True)
    database = os.path.join(copy, DATABASE)
    if not os.path.isdir(os.path.join(store, DATABASE)):  # no catalog yet: an empty one
        return copy
    shutil.copytree(os.path.join(store, DATABASE), database, ignore=shutil.ignore_patterns("*.lck"),
                    copy_function=shutil.copyfile)
    for folder, _, files in os.walk(database):  # copytree keeps the folders' modes: read-only, as they were
        os.chmod(folder, 0o700)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o600)
    print("segment-lake: this user may not write the lake's catalog: querying a copy of it, as of now",
          file=sys.stderr)
    return copy
