"""A newcomer reads the contract without leaving the repository: every link in a Markdown file of the repository
points at a file inside it that exists, and every #anchor at a heading of its file."""

import re
import subprocess

import pytest

import contract

FILES = subprocess.run(["git", "ls-files", "*.md"], cwd=contract.ROOT, check=True, capture_output=True, text=True).stdout.split()
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(text):
    return {re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-") for heading in re.findall(r"^#+ (.+)$", text, re.M)}


def test_the_readme_links_the_contract():
    assert "](docs/contract.md)" in (contract.ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", FILES)
def test_links_stay_inside_the_repository(name):
    path = contract.ROOT / name
    text = path.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        assert not re.match(r"^[a-z]+:", target), f"{name} links outside the repository: {target}"
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        assert linked.is_relative_to(contract.ROOT), f"{name} links outside the repository: {target}"
        assert linked.exists(), f"{name} links to a missing file: {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked.read_text(encoding="utf-8")), f"{name}: no heading for #{anchor}"
