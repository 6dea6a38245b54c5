"""Every settle answer of the corpus, and every read of it, is byte for byte what it was
before the speed work.

tests/data/settle_corpus.json holds each request with the sha256 of its answer (as
``POST /v1/rounds`` writes it) and of the rows the append was given, written by
tests/settle_corpus.py from the code as it was: a change that moves one byte of an
answer, a content hash, a receipt or a stored value's type fails here.
"""

from __future__ import annotations

import json

import pytest

from tests.settle_corpus import CORPUS, digest, settle_bytes, settled_and_read

CASES = json.loads(CORPUS.read_text("utf-8"))["cases"]


def test_the_corpus_covers_every_game_and_preset():
    from app.domain.games import PRESETS

    played = {c["request"]["ruleset"] if isinstance(c["request"]["ruleset"], str)
              else c["request"]["ruleset"]["preset"] for c in CASES}
    assert played == set(PRESETS)
    assert len(CASES) >= 300


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_a_settle_answers_the_same_bytes_and_appends_the_same_rows(case):
    answer, rows = settle_bytes(case["request"])
    assert (digest(answer), len(answer)) == (case["answer_sha256"], case["answer_bytes"])
    assert digest(rows) == case["rows_sha256"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_a_read_answers_the_same_bytes_before_and_after_a_reversal(case):
    _, _, (read, reversed_) = settled_and_read(case["request"])
    assert digest(read) == case["read_sha256"]
    assert digest(reversed_) == case["reversed_read_sha256"]
