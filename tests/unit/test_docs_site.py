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


_FENCED = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_INLINE = re.compile(r"`([^`]+)`")


def curl_commands(text: str) -> list[str]:
    """Every curl command a page shows, in a fenced block (continued lines joined) or in
    inline code (wrapped lines joined), without its trailing comment."""
    found = []
    for block in _FENCED.findall(text):
        found += block.replace("\\\n", " ").splitlines()
    found += [span.replace("\n", " ") for span in _INLINE.findall(_FENCED.sub("", text))]
    commands = []
    for line in found:
        at = re.search(r"(^|[\s(|;&])curl\s", line)
        if at is not None:
            command = re.split(r"\s#\s", line[at.start():], maxsplit=1)[0]
            commands.append(" ".join(command.split()))
    return commands


def _flags(command: str) -> set[str]:
    return set(re.findall(r"(?:^|\s)(-[a-zA-Z]+|--[a-z-]+)", command))


def saves_a_body_unchecked(command: str) -> str | None:
    """Say why a curl command that writes its body to a file could keep a refusal's body
    (a 429's, a 503's) there, else None: it must fail on one (-f) and write with -o."""
    flags = _flags(command)
    if re.search(r"(?:^|\s)>>?\s*[^\s&]", command):
        return "writes its body with a shell redirect, which keeps a file even when curl fails"
    writes = "--output" in flags or any(f.startswith("-") and not f.startswith("--")
                                         and "o" in f for f in flags)
    fails = "--fail" in flags or any(not f.startswith("--") and "f" in f for f in flags)
    if writes and not fails:
        return "writes its body to a file without -f"
    return None


def test_the_curl_rule_tells_a_saved_refusal_from_a_checked_save():
    assert saves_a_body_unchecked("curl -s -o round.json localhost:8000/v1/rounds")
    assert saves_a_body_unchecked("curl -s …/v1/audit/public-keys > public-keys.json")
    assert saves_a_body_unchecked("curl --fail-with-body -o c.json …/v1/audit/checkpoints")
    assert saves_a_body_unchecked("curl -fsS -o round.json localhost:8000/v1/rounds") is None
    assert saves_a_body_unchecked("curl -s localhost:8000/v1/rounds/ID | jq .") is None
    assert curl_commands("x `curl -fsS …/keys\n-o k.json`.\n```sh\ncurl -s a \\\n  -o b\n```") \
        == ["curl -s a -o b", "curl -fsS …/keys -o k.json"]


@pytest.mark.parametrize("page", ["README.md", *sorted(
    p.relative_to(REPO).as_posix() for p in DOCS.rglob("*.md"))])
def test_every_curl_that_saves_a_body_fails_on_a_refusal_instead(page):
    """A 429's body saved as a checkpoint, a round or a keyring would pass for one."""
    for command in curl_commands((REPO / page).read_text(encoding="utf-8")):
        why = saves_a_body_unchecked(command)
        assert why is None, f"{page}: {command!r} {why}"
