"""The recording environment covers its ports: every method of LakeStorage and Catalog is implemented by the tests'
wrappers (none is reached through a fallback), and every write is recorded, so that a new write method cannot slip
past the crash-point tests unrecorded."""
import inspect

import pytest
from recording_environment import Action, Boundaries, Died, DyingCatalog, DyingStorage, ForwardingStorage

from segment_lake.catalog import Catalog
from segment_lake.storage import READS, WRITES, HadoopStorage, LakeStorage

pytestmark = pytest.mark.fast

CATALOG_WRITES = ("ensure_database", "register", "set_partition_locations")


def _methods(port) -> set[str]:
    return {name for name, _ in inspect.getmembers(port, inspect.isfunction) if not name.startswith("_")}


class Calls:
    """A port that records the method each call reached."""

    def __init__(self) -> None:
        self.reached: list[str] = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.reached.append(name)


class Plan:
    stage_uri = "file:///lake/segment-stage/src1/run_id=r1"


def _arguments(method) -> list:
    """Stand-ins for a method's arguments: a URI where one is named, a list of moves for a publish."""
    names = [p for p in inspect.signature(method).parameters.values() if p.name != "self" and p.default is p.empty]
    uri = "file:///lake/segment-data/data/src1/page/day=2024-01-02/f.parquet"
    given = {"moves": [(uri, uri)], "plan": Plan(), "frame": None, "events": None}
    return [given.get(p.name, uri) for p in names]


def test_the_ports_methods_are_its_reads_and_writes():
    assert _methods(LakeStorage) == set(READS) | set(WRITES)
    assert _methods(HadoopStorage) >= set(READS) | set(WRITES)


def test_the_wrappers_implement_every_method_of_their_port():
    assert not hasattr(ForwardingStorage, "__getattr__") and not hasattr(DyingCatalog, "__getattr__")
    assert set(vars(ForwardingStorage)) >= _methods(LakeStorage)
    assert set(vars(DyingCatalog)) >= _methods(Catalog)


@pytest.mark.parametrize("method", sorted(set(READS) | set(WRITES)))
def test_each_storage_call_reaches_the_storage_and_each_write_is_recorded(method):
    inner, boundaries = Calls(), Boundaries("file:///lake")
    getattr(DyingStorage(inner, boundaries, spark=None), method)(*_arguments(getattr(LakeStorage, method)))
    assert inner.reached == [method]
    if method in WRITES:
        assert [a.operation for a in boundaries.seen] == ["move" if method == "publish_files" else method]
        assert all(isinstance(action, Action) for action in boundaries.seen)
    else:
        assert boundaries.seen == []


@pytest.mark.parametrize("method", sorted(_methods(Catalog)))
def test_each_catalog_call_reaches_the_catalog_and_each_write_is_recorded(method):
    inner, boundaries = Calls(), Boundaries("file:///lake")
    arguments = [None] * len([p for p in inspect.signature(getattr(Catalog, method)).parameters.values()
                              if p.name != "self" and p.default is p.empty])
    getattr(DyingCatalog(inner, boundaries), method)(*arguments)
    assert inner.reached == [method]
    assert boundaries.seen == ([Action(method, "catalog")] if method in CATALOG_WRITES else [])


def test_a_write_dies_where_it_is_told():
    boundaries = Boundaries("file:///lake", die_at=1, matching=Action("write_text", "state/processed"))
    storage = DyingStorage(Calls(), boundaries, spark=None)
    storage.write_text("file:///lake/segment-data/state/src1/pending.json", "{}")  # not of its kind
    with pytest.raises(Died, match="before write_text state/processed"):
        storage.write_text("file:///lake/segment-data/state/src1/processed/run_id=r1.json", "{}")
    with pytest.raises(Died, match="already dead"):  # nothing after a death runs
        storage.read_text("file:///lake/segment-data/state/src1/pending.json") or storage.delete("file:///lake/x")
    assert [str(action) for action in boundaries.seen] == ["write_text state/pending.json", "write_text state/processed"]


def test_a_point_of_a_counted_run_is_its_kinds_occurrence_not_its_number():
    # a run that wrote a, b, a; the next may write b after the second a (threads): the 3rd write is still the 2nd a
    a, b = Action("move", "data"), Action("register", "catalog")
    boundaries = Boundaries.at_point("file:///lake", [a, b, a], 3, "before")
    assert (boundaries.matching, boundaries.die_at) == (a, 2)
    storage = DyingStorage(Calls(), boundaries, spark=None)
    storage.publish_files([("file:///lake/segment-data/stage/x", "file:///lake/segment-data/data/s/t/x")])
    with pytest.raises(Died, match="before move data"):
        storage.publish_files([("file:///lake/segment-data/stage/y", "file:///lake/segment-data/data/s/t/y")])
