"""The README is short and true: it opens with the two commands, says how to install and
start, and links the documentation in docs/ (whose examples tests/test_docs.py runs)."""

import re
import tomllib

from doc_blocks import KINDS, REPO, blocks_of

README = (REPO / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
DOCS_URL = "https://github.com/trainkit-gitops/trainkit/blob/main/"


def test_readme_opens_with_the_setup_and_test_commands():
    first = blocks_of(REPO / "README.md")[0]
    assert KINDS["setup"][0](first)
    lines = first.body.splitlines()
    assert lines[0].startswith("make setup synth")
    assert lines[1].startswith("make test")
    makefile = (REPO / "Makefile").read_text()
    for target in ("setup", "synth", "test", "check", "schemas", "bench", "docs", "reference"):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
    assert "make test" in (REPO / ".ci/run").read_text()


def test_readme_is_short_and_its_guides_are_in_docs():
    assert len(README.splitlines()) <= 120
    # What moved to docs/ is not kept twice.
    for heading in ("## For ML engineers", "## For platform engineers", "## Security model",
                    "## Commands", "### Performance"):  # fmt: skip
        assert heading not in README, heading
    for section in ("## Install", "## Quickstart", "## Documentation", "## Development"):
        assert section in README, section


def test_readme_links_name_pages_that_exist():
    # Absolute links: the README is the package's long description too, where relative
    # links would lead nowhere.
    links = re.findall(
        r"\]\((https://github\.com/trainkit-gitops/trainkit/blob/main/[^)#]+)", README
    )
    assert len(links) >= 10
    for link in links:
        assert (REPO / link.removeprefix(DOCS_URL)).is_file(), link
    assert not re.findall(r"\]\((?!https://)[^)]+\)", README), "relative link in README.md"


def test_the_package_names_its_documentation_source_and_issues():
    project = PYPROJECT["project"]
    assert project["readme"] == "README.md"
    urls = project["urls"]
    assert urls["Documentation"] == DOCS_URL + "docs/index.md"
    assert urls["Source"] == "https://github.com/trainkit-gitops/trainkit"
    assert urls["Issues"] == urls["Source"] + "/issues"
    assert urls["Changelog"] == DOCS_URL + "CHANGELOG.md"
