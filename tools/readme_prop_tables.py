"""Writes the prop tables of README.md and docs/*.md from the props classes' docstrings and defaults, so they
cannot drift.

    python tools/readme_prop_tables.py          # rewrite the tables in README.md and docs/*.md
    python tools/readme_prop_tables.py --check  # exit 1 naming every table that is out of date

A table sits under a marker line ``<!-- props: ClassName -->`` and runs to the next blank line. A table may sit in
any of the pages; every props class has exactly one table across all of them, and so has ``BroughtPieces``: every
``from_*`` of the constructs, what it takes and the reference it makes.
"""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_MARKER = re.compile(r"^<!-- props: (\w+) -->$")
_PARAM = re.compile(r"^:param (\w+):\s*(.*)$")


def documented_params(cls: type) -> dict[str, str]:
    """``:param name: text`` of the class docstring (continuation lines joined), by name."""
    params: dict[str, str] = {}
    current = None
    for line in inspect.cleandoc(cls.__doc__ or "").splitlines():
        match = _PARAM.match(line.strip())
        if match:
            current = match.group(1)
            params[current] = match.group(2)
        elif current and line.startswith(" ") and line.strip():
            params[current] += " " + line.strip()
        else:
            current = None
    return params


def _default(field: dataclasses.Field) -> str:
    if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
        return "required"
    value = field.default if field.default is not dataclasses.MISSING else field.default_factory()
    if value is None:
        return "none"
    if dataclasses.is_dataclass(value):
        return f"`{type(value).__name__}()`"
    return f"`{value!r}`".replace("|", "\\|")


class BroughtPieces:
    """The marker of the table of every ``from_*(scope, id, ...)`` of the constructs."""


def _markdown(text: str) -> str:
    text = re.sub(r"``([^`]+)``", r"`\1`", text).replace("|", "\\|")
    return re.sub(r":(class|meth):`~?([\w.]+)`", r"`\2`", text)


def brought_table() -> list[str]:
    """Each construct's ``from_*``: its arguments after ``scope, id``, the reference it makes, that reference's
    attributes (its docstring's ``Attributes:`` or ``Attribute:``), and what it is for (the method's docstring)."""
    import segment_data_lake

    rows = ["| made by | arguments | reference | attributes | meaning |", "| --- | --- | --- | --- | --- |"]
    for name in sorted(segment_data_lake.__all__):
        cls = getattr(segment_data_lake, name)
        for method in sorted(m for m in vars(cls) if m.startswith("from_")) if isinstance(cls, type) else ():
            function = getattr(cls, method)
            signature = inspect.signature(function)
            arguments = ", ".join(str(p).replace("'", "") for p in list(signature.parameters.values())[2:])
            arguments = arguments.replace("|", "\\|")
            made = getattr(segment_data_lake, signature.return_annotation)
            attributes = " ".join(re.split(r"Attributes?:", inspect.cleandoc(made.__doc__), maxsplit=1)[1].split())
            meaning = " ".join(inspect.cleandoc(function.__doc__).split())
            rows.append(f"| `{name}.{method}` | `{arguments}` | `{made.__name__}` | {_markdown(attributes)} | "
                        f"{_markdown(meaning)} |")
    return rows


def table(cls: type) -> list[str]:
    """The markdown table of ``cls``'s props: every field, its default and its documented meaning."""
    if cls is BroughtPieces:
        return brought_table()
    params = documented_params(cls)
    fields = dataclasses.fields(cls)
    undocumented = [f.name for f in fields if f.name not in params]
    if undocumented:
        raise SystemExit(f"{cls.__name__} does not document {', '.join(undocumented)}: add ':param name: ...' lines")
    rows = ["| prop | default | meaning |", "| --- | --- | --- |"]
    for field in fields:
        meaning = _markdown(params[field.name])
        rows.append(f"| `{field.name}` | {_default(field)} | {meaning} |")
    return rows


def render(text: str, classes: dict[str, type]) -> str:
    lines, out, index = text.splitlines(), [], 0
    while index < len(lines):
        line = lines[index]
        out.append(line)
        index += 1
        match = _MARKER.match(line)
        if match:
            if match.group(1) not in classes:
                raise SystemExit(f"marker names {match.group(1)!r}, which is not a props class of segment_data_lake")
            while index < len(lines) and lines[index].strip():
                index += 1
            out.extend(table(classes[match.group(1)]))
    return "\n".join(out) + "\n"


def props_classes() -> dict[str, type]:
    import segment_data_lake

    return {**{name: getattr(segment_data_lake, name) for name in segment_data_lake.__all__
               if dataclasses.is_dataclass(getattr(segment_data_lake, name))}, "BroughtPieces": BroughtPieces}


def pages(repo: Path = REPO) -> list[Path]:
    """The pages that may hold prop tables: README.md, then docs/*.md in name order."""
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def markers(text: str) -> list[str]:
    """The props classes named by the page's markers, in order."""
    return [m.group(1) for m in map(_MARKER.match, text.splitlines()) if m]


def coverage_problems(texts: dict[str, str], classes: dict[str, type]) -> list[str]:
    """What is wrong with where the tables are: a props class with no table, or with more than one."""
    where: dict[str, list[str]] = {}
    for name, text in texts.items():
        for marker in markers(text):
            where.setdefault(marker, []).append(name)
    problems = [f"{cls} has no table" for cls in sorted(set(classes) - set(where))]
    problems += [f"{cls} has {len(names)} tables ({', '.join(names)})" for cls, names in sorted(where.items())
                 if len(names) > 1]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the tables are up to date")
    args = parser.parse_args(argv)
    classes = props_classes()
    texts = {str(path.relative_to(REPO)): path.read_text() for path in pages()}
    problems = coverage_problems(texts, classes)
    if problems:
        print(f"prop tables: {'; '.join(problems)}: add or remove a <!-- props: ClassName --> marker", file=sys.stderr)
        return 1
    code = 0
    for name, current in texts.items():
        wanted = render(current, classes)
        if current == wanted:
            continue
        if args.check:
            stale = [m for m in markers(current) if table(classes[m])[2:] != _table_after(current, f"<!-- props: {m} -->")]
            print(f"{name} prop tables are out of date ({', '.join(stale) or 'layout'}): "
                  f"run python tools/readme_prop_tables.py", file=sys.stderr)
            code = 1
        else:
            (REPO / name).write_text(wanted)
    return code


def _table_after(text: str, marker: str) -> list[str]:
    after = text.split(marker + "\n", 1)[1].split("\n\n", 1)[0]
    return after.splitlines()[2:]


if __name__ == "__main__":
    raise SystemExit(main())
