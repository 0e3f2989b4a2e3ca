"""The documentation, checked: the generated configuration reference (docs/reference/) is what the code declares,
every relative link of README.md and docs/ leads to a file (and heading) that exists, every page is in the README's
table of contents, and the README still gives the two commands CI and the demo test run. No Spark, no services.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"

# The "Two commands" section's commands, as CI (`.ci/run`: `make test`) and tests/runtime/test_cli.py (the demo)
# rely on them.
TWO_COMMANDS = (
    "make demo    # set everything up, then run the main job on the embedded default",
    "make test    # set everything up, start the test services, run the whole test suite, stop them",
)


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- Markdown, as GitHub reads it -------------------------------------------------------------------------

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    out, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1) == fence:
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        out.append((number, _CODE_SPAN.sub(lambda m: "code", line)))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (code, links and emphasis marks removed) in lower case, every
    character but letters, digits, '_', '-' and spaces dropped, spaces made hyphens."""
    text = re.sub(r"(`+)(.+?)\1", r"\2", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text).replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a page; a repeated heading's are `-1`, `-2`, ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fence = None
    for line in path.read_text(encoding="utf-8").splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            fence = None if opened and opened.group(1) == fence else fence
            continue
        if opened:
            fence = opened.group(1)
            continue
        heading = _HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    return [(number, m.group(1)) for number, line in prose_lines(path.read_text(encoding="utf-8"))
            for m in _LINK.finditer(line)]


def test_slugs_are_githubs():
    assert slug("S3 sink (Confluent's `S3SinkConnector`)") == "s3-sink-confluents-s3sinkconnector"
    assert slug("Fidelity: Kafka's transforms and converters") == "fidelity-kafkas-transforms-and-converters"
    assert slug("The Schema Registry API (`/registry`)") == "the-schema-registry-api-registry"
    assert slug("What `make test` does") == "what-make-test-does"


# --- the checks ------------------------------------------------------------------------------------------


def test_the_reference_is_current(tmp_path):
    from ingest.reference import write

    write(tmp_path)
    made = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.glob("*.md")}
    committed = {p.name: p.read_text(encoding="utf-8") for p in REFERENCE.glob("*.md")}
    stale = sorted(name for name in made.keys() | committed.keys() if made.get(name) != committed.get(name))
    assert not stale, (f"docs/reference/ is not what the code declares ({', '.join(stale)}): run "
                       "`python -m ingest.reference docs/reference` and commit the pages")


@pytest.mark.parametrize("page", pages(), ids=_name)
def test_every_relative_link_leads_somewhere(page):
    broken = []
    for number, target in links(page):
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target):
            continue  # a URL, not a file of the repository
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        where = f"{_name(page)}:{number}: {target}"
        if not dest.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{where} (no heading with that anchor in {dest.name})")
        elif anchor and dest.suffix != ".md":
            broken.append(f"{where} (an anchor into a file that is not Markdown)")
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_every_page_is_in_the_readmes_table_of_contents():
    linked = {(README.parent / target.partition("#")[0]).resolve() for _, target in links(README)}
    missing = [_name(p) for p in pages()[1:] if p.resolve() not in linked]
    assert not missing, f"pages README.md does not link to: {missing}"


def test_the_readme_keeps_the_two_commands():
    text = README.read_text(encoding="utf-8")
    section = text.partition("\n## Two commands\n")[2].partition("\n## ")[0]
    assert section, "README.md has no '## Two commands' section"
    lines = section.splitlines()
    for command in TWO_COMMANDS:
        assert command in lines, f"README.md's 'Two commands' section no longer has the line {command!r}"
    assert 'make test PYTEST_ARGS="tests/jdbc -x"' in section
