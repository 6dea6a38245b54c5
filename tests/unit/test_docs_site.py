"""The documentation site builds with no warning, and what it shows from the code is true."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docs_tables import generated

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
_GENERATED = re.compile(r"<!-- generated: (\w+) -->\n(.*?)<!-- end generated -->", re.S)


def test_the_site_builds_strictly_with_every_internal_link_and_anchor_found(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                            "--site-dir", str(tmp_path / "site")], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    assert (tmp_path / "site" / "rules" / "thirteen" / "index.html").exists()


@pytest.mark.parametrize("page", sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                                        if _GENERATED.search(p.read_text())))
def test_each_generated_table_is_what_the_code_makes_now(page):
    for name, text in _GENERATED.findall((DOCS / page).read_text()):
        assert text == generated(name), f"docs/{page}: regenerate the '{name}' table"


def test_no_page_cites_files_a_users_clone_does_not_have():
    for page in DOCS.rglob("*.md"):
        text = page.read_text()
        assert not re.search(r"\b(rules|settlement|service|games|matches)\.md §", text), page
        assert "../shared" not in text, page


def test_the_readme_is_a_first_page_and_links_only_to_pages_that_exist():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / target).exists(), target
