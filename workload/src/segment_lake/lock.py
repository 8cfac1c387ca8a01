"""One run per source: a lock object in the source's state folder, taken atomically, renewed while the run
lives, and taken over once it expires (a killed run cannot release it).

On S3 the lock is one object written with conditional requests (``If-None-Match: *`` to take it,
``If-Match: <etag>`` to renew or take over an expired one); on a local lake, one file changed only under
an exclusive ``flock`` of its guard file. Either way two runs can never both believe they hold it.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol
from urllib.parse import urlparse

from . import interrupt
from .errors import SyncError
from .layout import LakeLayout

LOCK_SECONDS = int(os.environ.get("SEGMENT_LAKE_LOCK_SECONDS", "600"))
LOCK_POLL_SECONDS = 30  # how often a run told to wait for the lock tries again


class SourceBusy(SyncError):
    """Another run holds the source's lock."""

    code = "source_busy"


class LockLost(SyncError):
    """This run's lock expired and another run took it over: stop before changing the lake."""


class LockStore(Protocol):
    """Atomic operations on the lock object; a version names one content of it."""

    def create(self, body: str) -> str | None:
        """Writes ``body`` if there is no lock; its version, or None when one exists."""

    def read(self) -> tuple[str, str] | None:
        """(body, version), or None when there is no lock."""

    def replace(self, body: str, version: str) -> str | None:
        """Writes ``body`` if the lock is still at ``version``; the new version, or None."""

    def delete(self) -> None: ...


class LocalLockStore:
    def __init__(self, path: str) -> None:
        self.path = path
        self.guard = path + ".guard"

    def _locked(self, action):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.guard, "a") as guard:
            fcntl.flock(guard, fcntl.LOCK_EX)
            try:
                return action()
            finally:
                fcntl.flock(guard, fcntl.LOCK_UN)

    def _current(self) -> tuple[str, str] | None:
        try:
            with open(self.path, encoding="utf-8") as file:
                body = file.read()
        except FileNotFoundError:
            return None
        return body, json.loads(body)["token"]

    def _write(self, body: str) -> str:
        partial = f"{self.path}.{os.getpid()}"
        with open(partial, "w", encoding="utf-8") as file:
            file.write(body)
        os.replace(partial, self.path)
        return json.loads(body)["token"]

    def create(self, body: str) -> str | None:
        return self._locked(lambda: None if self._current() else self._write(body))

    def read(self) -> tuple[str, str] | None:
        return self._locked(self._current)

    def replace(self, body: str, version: str) -> str | None:
        def swap():
            current = self._current()
            return self._write(body) if current and current[1] == version else None
        return self._locked(swap)

    def delete(self) -> None:
        self._locked(lambda: os.path.exists(self.path) and os.remove(self.path))


class S3LockStore:
    def __init__(self, uri: str, endpoint: str | None = None) -> None:
        import boto3

        parsed = urlparse(uri)
        self.bucket, self.key = parsed.netloc, parsed.path.lstrip("/")
        self.client = boto3.client("s3", endpoint_url=endpoint)

    def _put(self, body: str, **condition) -> str | None:
        from botocore.exceptions import ClientError

        try:
            return self.client.put_object(Bucket=self.bucket, Key=self.key, Body=body.encode(), **condition)["ETag"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict",
                                                                "NoSuchKey", "412"):
                return None
            raise

    def create(self, body: str) -> str | None:
        return self._put(body, IfNoneMatch="*")

    def read(self) -> tuple[str, str] | None:
        from botocore.exceptions import ClientError

        try:
            found = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        return found["Body"].read().decode(), found["ETag"]

    def replace(self, body: str, version: str) -> str | None:
        return self._put(body, IfMatch=version)

    def delete(self) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.key)


def lock_store(uri: str, s3_endpoint: str | None = None) -> LockStore:
    """The store of the lock at ``uri``: a local file, or an S3 object (``s3://`` or ``s3a://``)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("s3", "s3a"):
        return S3LockStore(uri, s3_endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"))
    return LocalLockStore(parsed.path)


def default_holder() -> str:
    """Who runs this sync, as a person reading the refusal would look for it."""
    step = os.environ.get("EMR_STEP_ID")
    return f"process {os.getpid()} on host {socket.gethostname()}" + (f" (EMR step {step})" if step else "")


@dataclass
class SourceLock:
    """The lock of one source: ``acquire`` it, ``check`` it before changing the lake, ``release`` it."""

    store: LockStore
    source_id: str
    holder: str
    seconds: int = LOCK_SECONDS
    wait_seconds: float = 0  # how long ``held`` waits for another run to release the lock before refusing
    run_id: str | None = None
    version: str | None = None
    lost: bool = False
    started: datetime | None = None
    # the keep-alive thread and the run's own checks renew it: one at a time, or one would see the other's version
    _mutex: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _body(self, now: datetime) -> str:
        return json.dumps({"holder": self.holder, "run_id": self.run_id, "source_id": self.source_id,
                           "started": self.started.isoformat(), "expires": (now + timedelta(seconds=self.seconds)).isoformat(),
                           "token": uuid.uuid4().hex})

    def acquire(self, now: datetime | None = None) -> str | None:
        """Takes the lock, or raises SourceBusy naming its holder; returns the holder of an expired lock taken over."""
        now = now or datetime.now(UTC)
        self.started = now
        self.version = self.store.create(self._body(now))
        if self.version:
            return None
        current = self.store.read()
        if current is None:  # released meanwhile
            self.version = self.store.create(self._body(now))
            if self.version:
                return None
            current = self.store.read() or ("{}", "")
        held = json.loads(current[0])
        if datetime.fromisoformat(held["expires"]) > now:
            raise SourceBusy(f"source {self.source_id} is being synced by {held['holder']} (run {held.get('run_id')}, "
                             f"since {held['started']}): wait for it to end; if it was killed, its lock expires at "
                             f"{held['expires']} and the next sync then redoes its work")
        self.version = self.store.replace(self._body(now), current[1])
        if not self.version:  # another run took it over first
            return self.acquire(now)
        return f"{held['holder']} (run {held.get('run_id')}, expired {held['expires']})"

    def renew(self, now: datetime | None = None) -> bool:
        """Pushes the expiry forward; False (and ``lost``) when another run took the lock over."""
        with self._mutex:
            if self.lost or not self.version:
                return False
            self.version = self.store.replace(self._body(now or datetime.now(UTC)), self.version)
            self.lost = self.version is None
            return not self.lost

    def check(self) -> None:
        """Raises LockLost when this run no longer holds the lock, and Interrupted once a signal asked the command to
        stop (before anything that changes the lake)."""
        interrupt.check("it stopped before its next change to the lake; the next run of the command (or a sync) "
                        "finishes what it began")
        if self.lost or not self.renew():
            raise LockLost(f"this run lost the lock of source {self.source_id} (it was paused for longer than the "
                           f"lock lasts, {self.seconds} s, and another run took over): it stops before changing the "
                           f"lake; that run does the work")

    def release(self) -> None:
        with self._mutex:
            if self.version and not self.lost:
                current = self.store.read()
                if current and current[1] == self.version:
                    self.store.delete()
            self.version = None

    @contextmanager
    def held(self, now: datetime | None = None) -> Iterator[str | None]:
        """Holds the lock, renewed, for a ``with`` block (see ``acquire``, whose result it yields); waits up to
        ``wait_seconds`` for another run to end first."""
        deadline = time.monotonic() + self.wait_seconds
        while True:
            try:
                taken_over = self.acquire(now)
                break
            except SourceBusy:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(min(LOCK_POLL_SECONDS, deadline - time.monotonic()))
                now = None  # the time the lock is finally taken
        keeping = self.keep_alive()
        try:
            yield taken_over
        finally:
            keeping.set()
            self.release()

    def keep_alive(self) -> threading.Event:
        """Renews the lock every third of its life, in a daemon thread, until the returned event is set."""
        stop = threading.Event()

        def renew_until_stopped():
            while not stop.wait(self.seconds / 3):
                if not self.renew():
                    return
        threading.Thread(target=renew_until_stopped, name="segment-lake-lock", daemon=True).start()
        return stop


def source_lock(spark, layout: LakeLayout, wait_seconds: float = 0) -> SourceLock:
    """The source's lock (``layout.lock``); on S3 through the endpoint Spark's s3a uses, if one is set."""
    endpoint = spark.sparkContext._jsc.hadoopConfiguration().get("fs.s3a.endpoint")
    return SourceLock(lock_store(layout.lock, endpoint if endpoint and "://" in endpoint else None),
                      layout.source_id, default_holder(), wait_seconds=wait_seconds)
