"""``segment-lake generate``: deterministic bytes, Segment's layout, and a realistic mix of events."""
import collections
import gzip
import hashlib
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from segment_lake.generate import GenerateOptions, generate

pytestmark = pytest.mark.fast

CLI = str(Path(sys.executable).with_name("segment-lake"))


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.gz"))}


def _lines(root: Path):
    for path in sorted(root.rglob("*.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                yield path, line.rstrip("\n")


def _leaves(value, path=()):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, path + (key,))
    else:
        yield path, value


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """20,000 lines over two hours, 80 event names, 2% duplicates and 1% malformed lines."""
    root = tmp_path_factory.mktemp("generated")
    options = GenerateOptions(output=root, events=20_000, event_names=80, duplicate_rate=0.02, malformed_rate=0.01,
                              seed=7)
    files = generate(options)
    events, malformed = [], 0
    for _, line in _lines(root):
        try:
            event = json.loads(line)
        except ValueError:
            malformed += 1
            continue
        if isinstance(event, dict) and event.get("receivedAt") and event.get("type") in (
                "track", "identify", "page", "screen", "group", "alias") and not (
                event["type"] == "track" and "event" not in event):
            events.append(event)
        else:
            malformed += 1
    return options, files, events, malformed


def test_same_seed_same_bytes_whatever_the_processes(tmp_path):
    options = dict(events=3_000, event_names=20, hours=1, files_per_hour=3, seed=11)
    generate(GenerateOptions(output=tmp_path / "a", **options), workers=1)
    generate(GenerateOptions(output=tmp_path / "b", **options), workers=2)
    generate(GenerateOptions(output=tmp_path / "c", **{**options, "seed": 12}), workers=2)
    first, second, other = _digest(tmp_path / "a"), _digest(tmp_path / "b"), _digest(tmp_path / "c")
    assert first == second and len(first) == 3
    assert set(other) == set(first) and all(other[name] != first[name] for name in first)


def test_files_follow_the_s3_destination_layout(sample):
    options, files, _, _ = sample
    assert len(files) == options.hours * options.files_per_hour
    midnight = int(datetime(2024, 1, 2, tzinfo=UTC).timestamp() * 1000)
    assert {f.relative_to(options.output).parts[:3] for f in files} == {("segment-logs", "src0001", str(midnight))}
    assert sorted(f.name for f in files) == [f"{n:05d}.gz" for n in range(len(files))]
    assert sum(1 for _ in _lines(options.output)) == options.events


def test_every_line_is_received_within_its_files_slice(sample):
    options, _, _, _ = sample
    slice_ms = 3_600_000 // options.files_per_hour
    start = int(options.start.timestamp() * 1000)
    for path, line in _lines(options.output):
        index = int(path.stem)
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not (isinstance(event, dict) and str(event.get("messageId")).startswith("src0001-")):
            continue  # a malformed line
        moment = int(datetime.fromisoformat(event["receivedAt"]).timestamp() * 1000)
        assert start + index * slice_ms <= moment < start + (index + 1) * slice_ms


def test_names_are_all_present_and_zipf_skewed(sample):
    options, _, events, _ = sample
    names = collections.Counter(e["event"] for e in events if e["type"] == "track")
    assert len(names) == options.event_names
    counts = sorted(names.values(), reverse=True)
    assert counts[0] > 10 * counts[len(counts) // 2]  # a few names carry most of the traffic
    types = collections.Counter(e["type"] for e in events)
    assert set(types) == {"track", "identify", "page", "screen", "group", "alias"}
    assert 0.55 < types["track"] / len(events) < 0.75


def test_values_of_every_json_type_nested_and_changing(sample):
    _, _, events, _ = sample
    kinds = collections.defaultdict(set)
    for event in events:
        for path, value in _leaves(event):
            kinds[path].add(type(value).__name__)
    seen = set().union(*kinds.values())
    assert {"str", "int", "float", "bool", "NoneType", "list"} <= seen
    assert any(len(path) >= 4 for path in kinds)  # properties.metadata.campaign.id
    assert {"int", "str"} <= kinds[("properties", "value")]  # a property that changes type
    assert ("context", "page", "url") in kinds and ("context", "device", "model") in kinds  # web and mobile
    assert any(isinstance(v, list) and v and isinstance(v[0], dict) for e in events
               for v in e.get("properties", {}).values())  # arrays of objects


def test_duplicates_and_malformed_lines_at_their_rates(sample):
    options, _, events, malformed = sample
    ids = collections.Counter(e["messageId"] for e in events)
    repeats = sum(count - 1 for count in ids.values())
    assert 0.5 * options.duplicate_rate * options.events < repeats < 1.5 * options.duplicate_rate * options.events
    assert 0.5 * options.malformed_rate * options.events < malformed < 1.5 * options.malformed_rate * options.events
    first = {}
    for event in events:  # a repeat is the same event with another receivedAt
        original = first.setdefault(event["messageId"], event)
        assert {k: v for k, v in event.items() if k != "receivedAt"} == {
            k: v for k, v in original.items() if k != "receivedAt"}


def test_cli_generates_and_refuses_bad_options_in_one_line(tmp_path):
    done = subprocess.run([CLI, "generate", "--output", str(tmp_path / "out"), "--events", "500", "--days", "1",
                           "--files-per-hour", "1", "--event-names", "5"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("generated 500 lines in 24 files")
    for bad, message in ((["--events", "0"], "--events must be at least 1, not 0"),
                         (["--duplicate-rate", "2"], "--duplicate-rate must be between 0 and 1, not 2.0"),
                         (["--start", "yesterday"], "invalid --start 'yesterday': use YYYY-MM-DDTHH")):
        result = subprocess.run([CLI, "generate", "--output", str(tmp_path / "bad"), *bad], capture_output=True,
                                text=True, timeout=60)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 1 and len(lines) == 1
        assert lines[0].startswith(f"segment-lake: error (invalid_settings): {message}"), lines
    assert not (tmp_path / "bad").exists()


def test_batches_of_other_seeds_or_times_share_no_message_id(tmp_path):
    def ids(**options):
        folder = tmp_path / "-".join(f"{k}{v}" for k, v in options.items())
        generate(GenerateOptions(output=folder, events=2000, hours=1, **options), workers=1)
        return {json.loads(line)["messageId"] for path in folder.rglob("*.gz")
                for line in gzip.decompress(path.read_bytes()).decode().splitlines()
                if line.startswith("{") and '"messageId":"src' in line}

    first = ids(seed=1)
    assert len(first) > 1900
    assert not first & ids(seed=2)
    assert not first & ids(seed=1, start=datetime(2024, 1, 3, tzinfo=UTC))
