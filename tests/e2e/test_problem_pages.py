"""Every problem type the service answers is a path that serves a short page (issue 42 §4)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from app.api.problems import PROBLEM_TYPES

APP = Path(__file__).resolve().parents[2] / "app"


def answered_types() -> set[str]:
    """Every /problems/NAME the application's code writes."""
    found: set[str] = set()
    for source in APP.rglob("*.py"):
        found.update(re.findall(r'"/problems/([a-z0-9-]+)"', source.read_text("utf-8")))
    return found


def test_every_type_the_code_answers_has_a_page_and_every_page_a_type() -> None:
    assert answered_types() == set(PROBLEM_TYPES)


@pytest.mark.parametrize("name", sorted(PROBLEM_TYPES))
def test_a_problem_type_serves_its_page_without_a_key(api: Any, name: str) -> None:
    page = api.with_key(None).get(f"/problems/{name}")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert f"<code>/problems/{name}</code>" in html and "What to do:" in html
    assert PROBLEM_TYPES[name].title in html


def test_a_problem_answer_links_to_its_page(api: Any) -> None:
    refused = api.post("/v1/rounds/score", data="{", content_type="application/json")
    kind = refused.get_json()["type"]
    assert api.with_key(None).get(kind).status_code == 200


def test_an_unknown_problem_type_is_a_404_problem(api: Any) -> None:
    missing = api.with_key(None).get("/problems/no-such-thing")
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"
