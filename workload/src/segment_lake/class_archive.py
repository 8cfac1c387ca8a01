"""The local JVM's class archive (Java's AppCDS): a command's JVM maps the classes an earlier command loaded from one
file instead of finding, reading and verifying them in Spark's 250 jars, which cut 4-5 s from every command's start
here (a 15-line sync 20 s -> 15.5 s, `sql` 12.5 s -> 7.9 s).

The first command of the CLI to start a local Spark for this Java and these jars records the archive as its JVM exits
(once, about 13 s more on that command's exit); every later one maps it. Recording and using are keyed by the java
binary and every jar on the class path, and the JVM itself checks the archive against its class path and refuses
(silently, then loading classes as usual) one that does not match. The JVM also maps an archive of a prefix of its
class path: an Iceberg lake's JVMs, whose Iceberg jars come last, map the Parquet lake's archive and record none.
Under spark-submit (EMR) nothing changes.
``SEGMENT_LAKE_CLASS_ARCHIVE=off`` turns it off, and nothing is recorded or mapped while a configuration folder on the
class path holds files (SPARK_CONF_DIR with a spark-defaults.conf, HADOOP_CONF_DIR): the JVM can use no archive then,
and one told to record fails as it exits ("Cannot have non-empty directory in paths"); nor while an agent runs in the
JVM (a -javaagent, Flight Recorder): Java 17 crashed at its start mapping the archive with JFR on.
"""
from __future__ import annotations

import atexit
import glob
import hashlib
import os
import tempfile
import time
from dataclasses import dataclass

from .jvm_code import java_binary, spark_jars_folder

# the JVM says nothing about the archive: a refused one only means a slower start
QUIET = "-Xlog:cds*=off"
# a recording whose command was killed leaves its marker; another command may record after this long
STALE_SECONDS = 15 * 60
# how long a recording command waits for its JVM to write the archive as it exits
WRITE_SECONDS = 120
# archives of other Java installations or jars (each about 170 MB) are removed beyond this many
KEEP = 3


def _config_folders() -> list[str]:
    """The folders Spark's launcher puts on the JVM's class path beside the jars (AbstractCommandBuilder)."""
    folders = [os.environ.get("SPARK_CONF_DIR") or os.path.join(os.path.dirname(spark_jars_folder()), "conf")]
    folders += [os.environ.get(name, "") for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")]
    folders += os.environ.get("SPARK_DIST_CLASSPATH", "").split(os.pathsep)
    return [folder for folder in folders if folder]


# options that run an agent in the JVM, given in the variables Java reads or in the sync's own
AGENTS = ("-javaagent", "-agentlib", "-agentpath", "-Xrun", "StartFlightRecording")
OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "SEGMENT_LAKE_JAVA_OPTIONS")


def _agent_runs() -> bool:
    options = " ".join(os.environ.get(name, "") for name in OPTION_VARIABLES)
    return any(agent in options for agent in AGENTS)


def _holds_files(folder: str) -> bool:
    try:
        if not os.path.isdir(folder):
            return False
        with os.scandir(folder) as entries:
            return any(entries)
    except OSError:
        return False


def archive_path(class_path: list[str]) -> str:
    """Where this Java's archive of these jars (``class_path``: jar files and folders of jars) lives."""
    digest = hashlib.sha256()
    java = os.path.realpath(java_binary())
    jars = [java]
    for entry in class_path:
        jars += sorted(glob.glob(os.path.join(entry, "*.jar"))) if os.path.isdir(entry) else [entry]
    for jar in jars:
        try:
            stat = os.stat(jar)
            digest.update(f"{jar}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        except OSError:
            digest.update(f"{jar}\0missing\0".encode())
    return os.path.join(_folder(), f"{_PREFIX}{digest.hexdigest()[:16]}.jsa")


_PREFIX = f"segment-lake-{os.getuid()}-classes-"


def _folder() -> str:
    return tempfile.gettempdir()


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _tidy() -> None:
    """Removes what other recordings left: the partial archives of ended processes, and archives beyond the
    KEEP newest."""
    for partial in glob.glob(os.path.join(_folder(), f"{_PREFIX}*.partial")):
        try:
            os.kill(int(partial.rsplit(".", 2)[-2]), 0)
        except ProcessLookupError:
            _remove(partial)
        except (OSError, ValueError):
            pass
    archives = sorted(glob.glob(os.path.join(_folder(), f"{_PREFIX}*.jsa")), key=_mtime, reverse=True)
    for archive in archives[KEEP:]:
        _remove(archive)


def _ours(path: str) -> bool:
    """Whether the archive at ``path`` is this user's, and no one else may write it: the JVM runs what it maps."""
    try:
        status = os.stat(path)
    except OSError:
        return False
    return status.st_uid == os.getuid() and not status.st_mode & 0o022


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


@dataclass
class Recording:
    """A JVM started to write the archive at ``partial`` as it exits; ``finish`` moves it into place."""

    archive: str
    partial: str
    marker: str

    def finish(self, jvm) -> None:
        """After the session stopped: ends the JVM (``jvm``: its process), waits while it writes the archive, and
        moves a complete one into place; a JVM that did not end cleanly leaves none."""
        try:
            if jvm is not None:
                if jvm.stdin:
                    jvm.stdin.close()  # Spark's JVM exits when its parent's pipe closes
                if jvm.wait(timeout=WRITE_SECONDS) == 0 and os.path.getsize(self.partial) > 0:
                    os.replace(self.partial, self.archive)  # atomic: a starting JVM sees no half-written archive
                    _tidy()
        except Exception:  # noqa: BLE001 - no archive: the next command records one
            pass
        finally:
            _remove(self.partial)
            self.abandon()

    def abandon(self) -> None:
        """Lets another command record (also at this process's exit, whatever ended it)."""
        _remove(self.marker)


def java_options(class_path: list[str], record: bool) -> tuple[list[str], Recording | None]:
    """The JVM options that map the archive of ``class_path``, or, when there is none and ``record``, those that
    record it (with the Recording to finish), unless another command is recording it now."""
    if (os.environ.get("SEGMENT_LAKE_CLASS_ARCHIVE", "").lower() == "off" or _agent_runs()
            or any(map(_holds_files, _config_folders()))):
        return [], None
    archive = archive_path(class_path)
    if os.path.exists(archive):
        # the folder is shared: another user's file at this name is neither mapped nor replaced
        return ([f"-XX:SharedArchiveFile={archive}", QUIET] if _ours(archive) else []), None
    if not record:
        return [], None
    marker = f"{archive}.recording"
    if time.time() - _mtime(marker) > STALE_SECONDS:
        _remove(marker)
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:  # another command records it (or the folder is not writable)
        return [], None
    _tidy()
    recording = Recording(archive, f"{archive[:-len('.jsa')]}.{os.getpid()}.partial", marker)
    atexit.register(recording.abandon)
    return [f"-XX:ArchiveClassesAtExit={recording.partial}", QUIET], recording
