"""Small files of the lake's state are replaced whole: a reader, or a run after a kill, sees the old text or the
new, never half of one."""
import os

import pytest

from segment_lake.storage import HadoopStorage

pytestmark = [pytest.mark.fast, pytest.mark.spark]


def test_a_local_file_is_replaced_by_a_rename_and_leaves_no_stale_checksum(spark, tmp_path):
    storage = HadoopStorage(spark)
    uri = f"file://{tmp_path}/state/pending.json"
    fs = storage._fs(uri)
    stream = fs.create(storage._path(uri), True)  # as Hadoop writes it, with a .crc beside it
    stream.write(bytearray(b"old text, long enough to differ"))
    stream.close()
    assert sorted(os.listdir(tmp_path / "state")) == [".pending.json.crc", "pending.json"]

    inode = os.stat(tmp_path / "state" / "pending.json").st_ino
    storage.write_text(uri, "new")
    assert storage.read_text(uri) == "new"
    assert os.listdir(tmp_path / "state") == ["pending.json"]  # no temporary file, no checksum of the old bytes
    assert os.stat(tmp_path / "state" / "pending.json").st_ino != inode  # a new file took the name: rename, not rewrite
    storage.write_text(f"file://{tmp_path}/new/folder/file.json", "made with its folders")
    assert (tmp_path / "new" / "folder" / "file.json").read_text() == "made with its folders"
