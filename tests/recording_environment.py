"""The environment tests hand a sync (and a deletion or compaction): storage and a catalog that record every write
(what it does and what it touches) and can fail one, chosen by its number among all writes or among those of one
kind: the process dies there (``Died``: nothing after it runs, as after a SIGKILL), before or after the write or, for
a move, halfway (the copy made and the original left, as a rename on S3 is a copy and a delete); or the write raises
an error the process survives. Reads are the real storage's and catalog's.

Both wrappers implement their port (storage.LakeStorage, catalog.Catalog) method by method, with no forwarding of
unknown names: tests/test_recording_environment.py fails when the port gains a method they do not implement, or a
write they do not record."""
from __future__ import annotations

from dataclasses import dataclass

from segment_lake.storage import PARQUET


@dataclass(frozen=True)
class Action:
    """One write: what it does (the port's method, or ``move`` for each file a publish moves) and the kind of thing
    it touches (``data``, ``stage``, ``state/processed``, ``catalog``: recording_environment._kind)."""

    operation: str
    kind: str

    def __str__(self) -> str:
        return f"{self.operation} {self.kind}"

    @property
    def can_be_halfway(self) -> bool:
        """A copy can be cut short, and a move or replace can die between its copy and its delete."""
        return self.operation in ("move", "replace", "copy")


class Died(BaseException):
    """The process died here: nothing after this point runs (BaseException, so no handler in the sync recovers)."""


class Boundaries:
    """Records the writes of a run (``seen``: Actions, such as move data, write_text state/processed) and fails the
    ``die_at``-th, counted among all writes or, with ``matching`` (an Action), among those.
    Without ``error`` the process dies there and every later write dies too; with it, that write raises ``error``
    (before, after or halfway through the write) and the writes after it go on."""

    def __init__(self, lake: str, die_at: int | None = None, how: str = "before", matching: Action | None = None,
                 error: Exception | None = None) -> None:
        self.lake, self.die_at, self.how, self.matching, self.error = lake, die_at, how, matching, error
        self.seen: list[Action] = []
        self.dead = False

    @classmethod
    def at_point(cls, lake: str, seen: list[Action], n: int, how: str) -> Boundaries:
        """Dies at the write that was the ``n``th of a run that recorded ``seen``: counted among the writes of its
        kind, since writes of different kinds may come in another order from run to run (threads, a loaded machine)."""
        return cls(lake, seen[:n].count(seen[n - 1]), how, matching=seen[n - 1])

    def __call__(self, operation: str, target: str, write, half=None):
        if self.dead:
            raise Died(f"already dead: {operation} {target}")
        self.seen.append(Action(operation, _kind(target, self.lake)))
        counted = [w for w in self.seen if w == self.matching] if self.matching else self.seen
        if self.die_at is None or len(counted) != self.die_at or (self.matching and self.seen[-1] != self.matching):
            return write()
        self.die_at = None if self.error else self.die_at  # an error is raised once; a death is for good
        self.dead = self.error is None
        if self.how == "after":
            write()
        elif self.how == "half" and half:
            half()
        raise self.error or Died(f"{self.how} {self.seen[-1]}")


class ForwardingStorage:
    """A LakeStorage that hands every call to ``storage``, method by method: the base of the tests' storages that
    change one or two methods."""

    def __init__(self, storage) -> None:
        self._storage = storage

    def exists(self, uri):
        return self._storage.exists(uri)

    def list_files(self, uri):
        return self._storage.list_files(uri)

    def glob(self, pattern):
        return self._storage.glob(pattern)

    def list_folders(self, uri):
        return self._storage.list_folders(uri)

    def size(self, uri):
        return self._storage.size(uri)

    def parquet_footer(self, uri):
        return self._storage.parquet_footer(uri)

    def from_spark_uri(self, spark_uri):
        return self._storage.from_spark_uri(spark_uri)

    def read_text(self, uri):
        return self._storage.read_text(uri)

    def write_text(self, uri, text):
        return self._storage.write_text(uri, text)

    def write_frame(self, frame, uri, how=PARQUET):
        return self._storage.write_frame(frame, uri, how)

    def write_tables(self, events, plan):
        return self._storage.write_tables(events, plan)

    def replace(self, source, target):
        return self._storage.replace(source, target)

    def copy(self, source, target):
        return self._storage.copy(source, target)

    def delete(self, uri, recursive=False):
        return self._storage.delete(uri, recursive)

    def publish_files(self, moves):
        return self._storage.publish_files(moves)

    def move(self, source, target):
        return self._storage.move(source, target)

    def commit_table(self, database, table, files, run_id):
        return self._storage.commit_table(database, table, files, run_id)

    def delete_rows(self, table, keys_uri, deletion_id):
        return self._storage.delete_rows(table, keys_uri, deletion_id)

    def maintain_table(self, table, partitions, target_bytes, expire_before):
        return self._storage.maintain_table(table, partitions, target_bytes, expire_before)


class DyingStorage(ForwardingStorage):
    """LakeStorage whose writes pass through ``boundaries``; reads are the real storage's."""

    def __init__(self, storage, boundaries: Boundaries, spark) -> None:
        super().__init__(storage)
        self._boundaries, self._spark = boundaries, spark

    def write_text(self, uri, text):
        return self._boundaries("write_text", uri, lambda: self._storage.write_text(uri, text))

    def write_frame(self, frame, uri, how=PARQUET):
        return self._boundaries("write_frame", uri, lambda: self._storage.write_frame(frame, uri, how))

    def write_tables(self, events, plan):
        return self._boundaries("write_tables", plan.stage_uri, lambda: self._storage.write_tables(events, plan))

    def delete(self, uri, recursive=False):
        return self._boundaries("delete", uri, lambda: self._storage.delete(uri, recursive))

    def move(self, source, target):
        return self._boundaries("move", target, lambda: self._storage.move(source, target),
                                half=lambda: self._copy(source, target))

    def commit_table(self, database, table, files, run_id):
        return self._boundaries("commit_table", "catalog",  # a table's commit: its catalog entry moves to it
                                lambda: self._storage.commit_table(database, table, files, run_id))

    def delete_rows(self, table, keys_uri, deletion_id):
        return self._boundaries("delete_rows", "catalog",
                                lambda: self._storage.delete_rows(table, keys_uri, deletion_id))

    def maintain_table(self, table, partitions, target_bytes, expire_before):
        return self._boundaries("maintain_table", "catalog", lambda: self._storage.maintain_table(
            table, partitions, target_bytes, expire_before))

    def publish_files(self, moves):  # one write per file, as moves
        for source, target in moves:
            self._boundaries("move", target, lambda s=source, t=target: self._storage.publish_files([(s, t)]),
                             half=lambda s=source, t=target: self._copy(s, t))

    def replace(self, source, target):  # halfway: the copy over the target made, the source not yet removed (S3)
        return self._boundaries("replace", target, lambda: self._storage.replace(source, target),
                                half=lambda: self._copy(source, target))

    def copy(self, source, target):  # halfway: a partial file at the target (a local copy cut short)
        return self._boundaries("copy", target, lambda: self._storage.copy(source, target),
                                half=lambda: self._partial_copy(source, target))

    def _partial_copy(self, source, target):
        self._copy(source, target)
        path = target[len("file:"):].lstrip("/")
        with open("/" + path, "r+b") as file:
            file.truncate(max(1, file.seek(0, 2) // 2))

    def _copy(self, source, target):
        jvm, conf = self._spark.sparkContext._jvm, self._spark.sparkContext._jsc.hadoopConfiguration()
        src, dst = jvm.org.apache.hadoop.fs.Path(source), jvm.org.apache.hadoop.fs.Path(target)
        jvm.org.apache.hadoop.fs.FileUtil.copy(src.getFileSystem(conf), src, dst.getFileSystem(conf), dst, False,
                                               True, conf)


class DyingCatalog:
    """A catalog whose writes pass through ``boundaries``; reads are the real catalog's."""

    def __init__(self, catalog, boundaries: Boundaries) -> None:
        self._catalog, self._boundaries = catalog, boundaries

    def database_exists(self, database):
        return self._catalog.database_exists(database)

    def tables_columns(self, database, tables):
        return self._catalog.tables_columns(database, tables)

    def describe_tables(self, database, tables):
        return self._catalog.describe_tables(database, tables)

    def partitions(self, database, table):
        return self._catalog.partitions(database, table)

    def partition_locations(self, database, table):
        return self._catalog.partition_locations(database, table)

    def ensure_database(self, database):
        return self._boundaries("ensure_database", "catalog", lambda: self._catalog.ensure_database(database))

    def register(self, database, changes, known=None):
        return self._boundaries("register", "catalog", lambda: self._catalog.register(database, changes, known))

    def set_partition_locations(self, database, table, keys, locations):
        return self._boundaries("set_partition_locations", "catalog",
                                lambda: self._catalog.set_partition_locations(database, table, keys, locations))


def _kind(target: str, lake: str) -> str:
    """What a write touches, without run ids or partitions: ``state/pending.json``, ``data``, ``catalog``."""
    if target == "catalog":
        return target
    path = target[len(lake):].lstrip("/").split("/")
    if path[0] == "segment-stage":
        return "stage"
    area = path[1]
    if area == "state":
        return f"state/{path[3].split('=')[0]}" if len(path) > 3 else "state"
    return area
