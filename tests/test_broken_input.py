"""Broken input never blocks a source: a file that cannot be read whole gives its readable lines and a
rejected record of where and why the rest was lost; the other files of the run land as usual."""
import gzip
import json

import pytest
from recording_environment import ForwardingStorage
from sync_harness import Lake, make_catalog

from segment_lake.storage import FileInfo, HadoopStorage, LakeStorage
from segment_lake.sync import Sync

pytestmark = pytest.mark.spark


def event(n: int, prefix: str) -> str:
    return json.dumps({"type": "track", "event": "Order Completed", "messageId": f"{prefix}{n}",
                       "receivedAt": "2024-01-02T03:04:05Z", "properties": {"n": n}})


class ListsARemovedFile(ForwardingStorage):
    """Storage whose listing of the input also has a file the reading no longer finds."""

    def __init__(self, storage: LakeStorage, input_uri: str, removed: FileInfo) -> None:
        super().__init__(storage)
        self._input, self._removed = input_uri, removed

    def list_files(self, uri: str) -> list[FileInfo]:
        return self._storage.list_files(uri) + ([self._removed] if uri == self._input else [])


def test_a_broken_file_lands_what_can_be_read_and_records_the_rest(spark, tmp_path):
    folder = tmp_path / "input" / "segment-logs" / "src1" / "1704153600000"
    folder.mkdir(parents=True)
    whole = gzip.compress("\n".join(event(n, "t") for n in range(3000)).encode())
    (folder / "truncated.json.gz").write_bytes(whole[: len(whole) // 2])  # an upload cut short
    (folder / "corrupt.json.gz").write_bytes(whole[:10] + b"\x00not deflate at all" * 20)
    (folder / "empty.json.gz").write_bytes(b"")
    (folder / "empty.json").write_bytes(b"")
    (folder / "latin1.json").write_bytes(event(1, "l").encode()[:-2] + b', "name": "caf\xe9"}}\r\n' + event(2, "l").encode())
    (folder / "good.json").write_text("\r\n".join(event(n, "g") for n in range(5)) + "\n")
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input/segment-logs/src1", "src1", "broken_input")
    storage = ListsARemovedFile(HadoopStorage(spark), lake.input_uri, FileInfo(f"file://{folder}/removed.json.gz", 1234))

    said = []
    result = Sync(spark, lake.settings(), lake.catalog, progress=said.append, storage=storage).run()

    assert result.status == "finished"
    rejected = {row["file"].rsplit("/", 1)[-1]: row for row in lake.rejected()}
    assert set(rejected) == {"truncated.json.gz", "corrupt.json.gz", "removed.json.gz"}
    truncated = rejected["truncated.json.gz"]["reason"]
    assert truncated.startswith("unreadable: EOFException: Unexpected end of input stream at byte ")
    assert f" of {len(whole) // 2}, after " in truncated
    landed_from_truncated = int(truncated.rsplit("after ", 1)[1].split()[0])
    assert 0 < landed_from_truncated < 3000
    corrupt = rejected["corrupt.json.gz"]["reason"]
    assert corrupt.startswith("unreadable: ") and corrupt.endswith("after 0 lines")
    assert rejected["removed.json.gz"]["reason"] == "unreadable: the file no longer exists"
    assert all(row.get("raw") is None for row in rejected.values())

    ids = {row["message_id"] for row in lake.rows("track_order_completed")}
    assert {f"g{n}" for n in range(5)} | {"l1", "l2"} <= ids  # \r\n and \n line ends; latin-1 bytes kept as text
    assert len({i for i in ids if i.startswith("t")}) == landed_from_truncated  # every line read before the fault
    assert [row["properties_name"] for row in lake.rows("track_order_completed") if row["message_id"] == "l1"] == ["caf\ufffd"]
    # the counts balance: each unreadable rest is one rejected line
    assert result.read_count == result.row_count + result.duplicate_count + result.rejected_count
    assert (result.rejected_count, result.row_count) == (3, landed_from_truncated + 7)
    # and nothing blocks the source: the run finished, the next one has nothing to do
    assert Sync(spark, lake.settings(), lake.catalog, progress=said.append).run().read_count == 0
