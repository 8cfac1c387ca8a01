"""The README's prop tables are the props' docstrings and defaults (tools/readme_prop_tables.py), and its contents
list every section."""
import dataclasses
import re

import pytest
from conftest import REPO, load_module

pytestmark = pytest.mark.fast

tables = load_module(REPO / "tools" / "readme_prop_tables.py", "readme_prop_tables")


def test_the_readme_prop_tables_match_the_docstrings():
    classes = tables.props_classes()
    readme = (REPO / "README.md").read_text()
    assert readme == tables.render(readme, classes), "run python tools/readme_prop_tables.py"
    # every props class of the package has its table
    assert {name for name in classes} == {line.split()[2] for line in readme.splitlines() if line.startswith("<!-- props: ")}


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


def test_the_contents_list_every_section_in_order_with_its_anchor():
    readme = (REPO / "README.md").read_text()
    contents, body = readme.split("## Contents\n", 1)[1].split("\n## ", 1)
    listed = re.findall(r"^ *- \[(.+)\]\(#(.+)\)$", contents, re.M)
    headings = re.findall(r"^#{2,3} (.+)$", "## " + body, re.M)
    assert [title for title, _ in listed] == [h.replace("`", "") for h in headings]
    # GitHub's anchors: lower case, punctuation but '-' and '_' dropped, spaces to '-'
    assert [anchor for _, anchor in listed] == [re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings]
