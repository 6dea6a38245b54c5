"""The advisor's answers, pinned: a change meant to make it faster must not change them.

``tests/data/advisor_pinned.json`` holds what ``advise`` answered for 56 seeded hands (seven
per preset), four hands holding a special hand, two smaller tables and two overridden
rulesets whose opponent model has no shipped table (the sampled pool): every refined
arrangement in rank order with its points on each sampled deal and its model points,
keep_back's, the special claim's, the seed and the table. Regenerate it only when what the
advisor computes changes on purpose, and say so in the commit:

    .venv/bin/python -m tests.unit.test_advisor_pinned

New answers need a new ``app.advisor.fairplay.VERSION``, the name every stored fair-play
figure carries: ``tests/data/advisor_versions.json`` maps each version to the digest of its
pinned answers (the command prints it), so answers cannot change under an old name.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from app.advisor.best import Advice, Choice, advise
from app.advisor.fairplay import VERSION
from app.domain.cards import DECK, parse_cards
from app.domain.rulesets import PRESETS, Ruleset, resolve_ruleset

PINNED = Path(__file__).parent.parent / "data" / "advisor_pinned.json"
VERSIONS = PINNED.with_name("advisor_versions.json")
ORDER = ["bonus3", "dagiang4", "du4", "banker", "classic4", "taiwan4", "swap3", "monster4"]
SPECIAL_HANDS = [
    ("classic4", "As Ah Kd Kc Qs Qh Jd Jc 9s 9h 7d 7c 2s"),  # six pairs
    ("swap3", "2h 5h 9h Jh Kh 3s 6s 8s Ts Qs 4d 7d 9d"),  # three flushes, three straights
    ("taiwan4", "2s 3h 4d 5c 6s 7h 8d 9c Ts Js Qh Kd Ac"),  # a dragon
    ("monster4", "As As Ah Ah Ad Ad Kc Kc Qd Qd Js Js 2h"),  # six pairs, two decks
]
# (ruleset spec, players): smaller tables, and overrides with no shipped opponent table.
OTHER_TABLES: list[tuple[Any, int | None]] = [
    ("dagiang4", 3), ("banker", 2),
    ({"preset": "classic4", "overrides": {"ace_low_straight": "second"}}, None),
    ({"preset": "taiwan4", "overrides": {"ace_low_straight": "none"}}, None),
]


def cases() -> list[tuple[Any, int | None, str]]:
    """(ruleset spec, players, cards) of every pinned hand."""
    out: list[tuple[Any, int | None, str]] = []
    for name in ORDER:
        rng = random.Random(f"pinned-{name}")
        pack = list(DECK) * PRESETS[name].decks
        out += [(name, None, " ".join(str(c) for c in rng.sample(pack, 13))) for _ in range(7)]
    out += [(name, None, cards) for name, cards in SPECIAL_HANDS]
    for k, (spec, players) in enumerate(OTHER_TABLES):
        rng = random.Random(f"pinned-other-{k}")
        out.append((spec, players, " ".join(str(c) for c in rng.sample(list(DECK), 13))))
    return out


def _choice(c: Choice) -> dict[str, Any]:
    rows = None if c.arrangement is None else [[str(x) for x in r] for r in c.arrangement.rows]
    return {"rows": rows, "special": None if c.special is None else c.special.value,
            "model_points": c.model_points, "points": list(c.points)}


def answer(spec: Any, players: int | None, cards: str) -> dict[str, Any]:
    rules: Ruleset = resolve_ruleset(spec)
    a: Advice = advise(parse_cards(cards.split()), rules, players)
    return {"ranked": [_choice(c) for c in (a.best, *a.others)],
            "keep_back": _choice(a.keep_back),
            "special": None if a.special is None else _choice(a.special),
            "players": a.players, "deals": a.deals, "seed": a.seed, "table": a.table,
            "gain": a.gain, "gain_error": a.gain_error}


def _pinned() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(PINNED.read_text())
    return data


def test_the_pinned_hands_are_the_cases() -> None:
    assert [(p["ruleset"], p["players"], p["cards"]) for p in _pinned()] == [
        (spec, players, cards) for spec, players, cards in cases()]


@pytest.mark.parametrize("k", range(len(cases())))
def test_the_advisor_answers_as_pinned(k: int) -> None:
    pinned = _pinned()[k]
    got = answer(pinned["ruleset"], pinned["players"], pinned["cards"])
    # Model points are floats from numpy sums: equal to the last few bits, not bit for bit.
    for mine, theirs in zip([*got["ranked"], got["keep_back"]],
                            [*pinned["answer"]["ranked"], pinned["answer"]["keep_back"]],
                            strict=True):
        if theirs["model_points"] is None:
            assert mine["model_points"] is None
        else:
            assert mine["model_points"] == pytest.approx(theirs["model_points"], rel=1e-9,
                                                         abs=1e-9)
            mine["model_points"] = theirs["model_points"]
    assert got == pinned["answer"]


def digest() -> str:
    return hashlib.sha256(PINNED.read_bytes()).hexdigest()[:16]


def test_the_pinned_answers_are_those_of_this_advisor_version() -> None:
    versions: dict[str, str] = json.loads(VERSIONS.read_text())
    assert versions.get(VERSION) == digest(), (
        "the pinned answers changed: name them under a new app.advisor.fairplay.VERSION")
    assert len(set(versions.values())) == len(versions)  # one version, one set of answers


def main() -> None:
    out = [{"ruleset": spec, "players": players, "cards": cards,
            "answer": answer(spec, players, cards)} for spec, players, cards in cases()]
    lines = ",\n".join(json.dumps(hand, ensure_ascii=False) for hand in out)
    PINNED.write_text(f"[\n{lines}\n]\n")
    print(f"{PINNED}: {len(out)} hands, digest {digest()} (advisor_versions.json: the new "
          f"VERSION's; {VERSION} is the current)")


if __name__ == "__main__":
    main()
    sys.exit(0)
