"""The prop tables of README.md and docs/*.md are the props' docstrings and defaults (tools/readme_prop_tables.py),
each page's contents list every section, and every relative link reaches an existing file and heading."""
import dataclasses
import re
from pathlib import Path

import pytest
from conftest import REPO, load_module

pytestmark = pytest.mark.fast

tables = load_module(REPO / "tools" / "readme_prop_tables.py", "readme_prop_tables")
PAGES = tables.pages(REPO)


def _name(page: Path) -> str:
    return str(page.relative_to(REPO))


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _prose(text: str) -> str:
    """The page without its fenced code blocks, whose lines are neither headings nor links."""
    return re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.M | re.S)


def _anchors(text: str) -> set[str]:
    """Every heading's anchor, a repeated one numbered as GitHub numbers it (``-1``, ``-2``)."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+?)#*$", _prose(text), re.M):
        anchor = _anchor(heading.strip())
        anchors.add(anchor if anchor not in seen else f"{anchor}-{seen[anchor]}")
        seen[anchor] = seen.get(anchor, 0) + 1
    return anchors


def test_the_pages_are_the_readme_and_the_docs():
    assert PAGES[0] == REPO / "README.md"
    assert {p.name for p in PAGES[1:]} >= {"constructs.md", "lake-format.md", "operations.md", "querying.md",
                                           "reliability.md", "performance.md"}


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_the_prop_tables_match_the_docstrings(page):
    text = page.read_text()
    assert text == tables.render(text, tables.props_classes()), "run python tools/readme_prop_tables.py"


def test_every_props_class_has_exactly_one_table_across_the_pages():
    classes = tables.props_classes()
    texts = {_name(page): page.read_text() for page in PAGES}
    assert tables.coverage_problems(texts, classes) == []
    assert sorted(m for text in texts.values() for m in tables.markers(text)) == sorted(classes)


def test_a_missing_or_doubled_table_is_named():
    classes = {"AProps": object, "BProps": object}
    texts = {"README.md": "<!-- props: AProps -->\n", "docs/x.md": "<!-- props: AProps -->\n"}
    assert tables.coverage_problems(texts, classes) == ["BProps has no table",
                                                        "AProps has 2 tables (README.md, docs/x.md)"]


def test_a_stale_table_is_rewritten_and_an_undocumented_prop_refused():
    @dataclasses.dataclass(frozen=True)
    class ExampleProps:
        """Props.

        :param size: how big,
            in units.
        """

        size: int = 3

    text = "# x\n<!-- props: ExampleProps -->\n| old |\n\nafter\n"
    assert tables.render(text, {"ExampleProps": ExampleProps}) == (
        "# x\n<!-- props: ExampleProps -->\n| prop | default | meaning |\n| --- | --- | --- |\n"
        "| `size` | `3` | how big, in units. |\n\nafter\n")

    @dataclasses.dataclass(frozen=True)
    class Undocumented:
        """No params."""

        size: int = 3

    with pytest.raises(SystemExit, match="Undocumented does not document size"):
        tables.table(Undocumented)


@pytest.mark.parametrize("page", [p for p in PAGES if "\n## Contents\n" in p.read_text()], ids=_name)
def test_the_contents_list_every_section_in_order_with_its_anchor(page):
    text = page.read_text()
    contents, body = text.split("## Contents\n", 1)[1].split("\n## ", 1)
    listed = re.findall(r"^ *- \[(.+)\]\(#(.+)\)$", contents, re.M)
    headings = re.findall(r"^#{2,3} (.+)$", _prose("## " + body), re.M)
    assert [title for title, _ in listed] == [h.replace("`", "") for h in headings]
    assert [anchor for _, anchor in listed] == [_anchor(h) for h in headings]


def test_the_readme_and_every_docs_page_have_contents():
    assert all("\n## Contents\n" in page.read_text() for page in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_reaches_a_file_and_heading(page):
    prose = re.sub(r"`[^`\n]*`", "", _prose(page.read_text()))  # inline code holds no links
    links = re.findall(r"\]\(([^)\s]+)\)", prose)
    assert links, f"{_name(page)} links nowhere"
    broken = []
    for link in links:
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists() or REPO not in (target, *target.parents):
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target.read_text()):
            broken.append(f"{link}: no heading #{anchor} in {target.relative_to(REPO)}")
    assert not broken, f"{_name(page)}: {broken}"


def test_anchors_are_made_as_github_makes_them():
    text = "# Title\n\n## A `b` (c)\n\n```\n## not a heading\n```\n"
    assert _anchors(text) == {"title", "a-b-c"}
    assert _anchors("## x\n## x\n") == {"x", "x-1"}


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_python_block_compiles(page):
    for block in re.findall(r"^```python\n(.*?)^```", page.read_text(), re.M | re.S):
        compile(block, _name(page), "exec")


def test_the_cost_table_is_what_its_arithmetic_prints():
    import subprocess
    import sys

    readme = (REPO / "README.md").read_text()
    held = re.search(r"<!-- cost-table: python tools/cost_table.py -->\n(.*?)<!-- /cost-table -->", readme, re.DOTALL)
    assert held, "the README has no cost table between its markers"
    printed = subprocess.run([sys.executable, str(REPO / "tools" / "cost_table.py")], capture_output=True, text=True,
                             check=True).stdout
    assert held.group(1) == printed, "the README's cost table is stale: paste `python tools/cost_table.py`'s output"
    ten_million = re.search(r"^\| 10,000,000 \|(?:[^|]*\|){2} \$([\d.]+) \|", printed, re.MULTILINE)
    assert float(ten_million.group(1)) <= 30  # the target for 10M events a day, recommended settings
