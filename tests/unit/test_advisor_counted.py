"""The advisor's faster paths give the numbers of the direct ones, bit for bit.

``model._counted`` (per-row counts instead of a (c, n) array of points) against
``model._pair_points_each``, and ``splits._skyline`` (one table of running maxima) against
``splits._undominated`` (splits compared pairwise), on seeded hands and opponent pools
under every preset and overrides that reach each of their branches. The advisor's pinned
answers (test_advisor_pinned.py) check the whole; these check the parts on many more
inputs, the rules the pinned hands do not play included.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from app.advisor import model, tables
from app.advisor.best import _without_held
from app.advisor.splits import _row_columns, _skyline, _undominated, lookup, splits
from app.domain.cards import DECK
from app.domain.rulesets import PRESETS, Ruleset, resolve_ruleset

LARGEST = {"row_base": 100_000, "scoop": {"kind": "multiply", "amount": 10, "over": "all"},
           "row_bet": {"single": 100_000, "same_row": 100_000, "default_row": "back"},
           "row_bonus": {row: {"straight_flush": 100_000} for row in ("middle", "back")}
           | {"front": {"three_of_a_kind": 100_000}}}
RULES: list[Any] = [name for name, r in PRESETS.items() if isinstance(r, Ruleset)] + [
    {"preset": "classic4", "overrides": {"tie_rule": "banker_wins"}},
    {"preset": "classic4", "overrides": {"row_bet": {"single": 1, "same_row": 4,
                                                     "default_row": "middle"}}},
    {"preset": "bonus3", "overrides": {"scoop": {"kind": "multiply", "amount": 3,
                                                 "over": "all"}}},
    {"preset": "classic4", "overrides": {"holding_bonus": {"back": {"full_house": 2}}}},
    {"preset": "swap3", "overrides": LARGEST},
    {"preset": "monster4", "overrides": {"row_base": 7, "scoop": {"kind": "add",
                                                                  "amount": 5}}},
]


def _id(spec: Any) -> str:
    return spec if isinstance(spec, str) else "-".join(spec["overrides"])


def _hands(rules: Ruleset, k: int, seed: str) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    pack = list(DECK) * rules.decks
    return [tuple(sorted(rng.sample(pack, 13), key=lambda c: c.order)) for _ in range(k)]


def test_the_counted_path_takes_the_presets_it_can_and_leaves_the_rest() -> None:
    counted = {name for name, r in PRESETS.items()
               if isinstance(r, Ruleset) and model._countable(r)}
    assert counted == {"bonus3", "banker", "classic4", "taiwan4", "monster4", "swap3"}
    # The largest points a ruleset may set keep a pair's points below EXACT.
    assert model._countable(resolve_ruleset({"preset": "swap3", "overrides": LARGEST}))


@pytest.mark.parametrize("spec", RULES, ids=_id)
def test_counted_pair_points_are_those_of_each_pair_bit_for_bit(spec: Any) -> None:
    rules = resolve_ruleset(spec)
    low = rules.ace_low_straight
    category = lookup(low).category
    shipped = tables.load(rules.decks, low)
    assert shipped is not None
    for k, hand in enumerate(_hands(rules, 6, f"counted-{_id(spec)}")):
        pool = _without_held(shipped, hand, rules, random.Random(k))
        mine = splits(hand, rules).strengths
        for size in (96, 256, 1024):  # a size that is no multiple of 64 too
            for banker_side in (False, True):
                for joint in (False, True):
                    want = model._pair_points_each(mine, pool[:size], category, rules,
                                                   banker_side, joint)
                    got = model.pair_points(mine, pool[:size], category, rules,
                                            banker_side, joint)
                    for w, g in zip(want, got, strict=True):
                        assert w.dtype == g.dtype and w.shape == g.shape
                        assert w.tobytes() == g.tobytes()


@pytest.mark.parametrize("name", ["classic4", "monster4", "swap3"])
def test_the_skyline_keeps_the_splits_the_pairwise_comparison_keeps(name: str) -> None:
    rules = PRESETS[name]
    assert isinstance(rules, Ruleset)
    for hand in _hands(rules, 40, f"skyline-{name}"):
        front, middle, back = _row_columns(hand, rules.ace_low_straight)
        at = np.flatnonzero((front <= middle) & (middle <= back))
        st = np.unique(np.stack([back[at], middle[at], front[at]], axis=1), axis=0)[:, ::-1]
        st = np.ascontiguousarray(st, dtype=np.int32)  # distinct, ascending by back
        want = _undominated(st, np.zeros((len(st), 0), dtype=np.int64))
        assert (_skyline(st) == want).all()
        assert want.sum() < len(st)  # the hands prune something
