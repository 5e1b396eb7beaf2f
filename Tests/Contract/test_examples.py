"""The Swift code the docs show is code that compiles and runs: every ```swift block of a Markdown file of the
repository is, word for word, in a file of the Examples package, which `make test` builds and runs (make examples)."""

import re
import subprocess

import pytest

import contract

DOCS = subprocess.run(["git", "ls-files", "*.md"], cwd=contract.ROOT, check=True, capture_output=True, text=True).stdout.split()
EXAMPLES = [contract.ROOT / name for name in subprocess.run(
    ["git", "ls-files", "Examples/*.swift"], cwd=contract.ROOT, check=True, capture_output=True, text=True).stdout.split()]
BLOCK = re.compile(r"^```swift\n(.*?)^```", re.M | re.S)

SNIPPETS = [(name, index, code) for name in DOCS
            for index, code in enumerate(BLOCK.findall((contract.ROOT / name).read_text(encoding="utf-8")))]


def test_the_docs_show_swift_examples():
    names = {name for name, _, _ in SNIPPETS}
    assert {"README.md", "docs/embedding.md"} <= names, names


@pytest.mark.parametrize("name,index,code", SNIPPETS, ids=[f"{name}#{index}" for name, index, _ in SNIPPETS])
def test_each_swift_block_is_in_the_examples_package(name, index, code):
    sources = [path.read_text(encoding="utf-8") for path in EXAMPLES]
    assert any(code in source for source in sources), (
        f"{name}: Swift block {index + 1} is in no file of Examples/, so nothing compiles it; "
        f"put it there (make examples builds and runs them) or copy it from there:\n{code}")
