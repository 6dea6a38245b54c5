"""The exact-EV oracle (tests/tools/ev_oracle.py) scores as the service's scorer does.

Its cells are checked against ``score_round`` on random hands, splits and deals, including
the strongest and weakest splits of each hand, which make and suffer home runs. The full
check over thousands of hands: ``.venv/bin/python -m tests.tools.ev_oracle --hands 1000``.
"""

from __future__ import annotations

import pytest

from app.domain.rulesets import PRESETS
from tests.tools import ev_oracle


@pytest.mark.parametrize("name", ["classic4", "swap3", "taiwan4"])
def test_the_oracle_scores_every_cell_as_score_round_does(name: str) -> None:
    cells, runs = ev_oracle.verify(PRESETS[name], hands=15, seed=11)
    assert cells >= 15 * 4 * 3
    assert runs > 0  # home runs were among the cells checked


def test_the_oracle_refuses_a_ruleset_it_cannot_score() -> None:
    with pytest.raises(ValueError, match="dagiang4"):
        ev_oracle.evaluate([], PRESETS["dagiang4"])


def test_every_valid_split_is_listed_once_and_none_fouls() -> None:
    import random

    from app.domain.cards import DECK
    from app.domain.hands import evaluate_hand

    r = PRESETS["classic4"]
    cards = random.Random(5).sample(list(DECK), 13)
    st, pos = ev_oracle.valid_splits(cards, r)
    assert len({tuple(t) for t in st.tolist()}) == len(st)
    for i in range(0, len(st), max(1, len(st) // 50)):
        assert not evaluate_hand(ev_oracle.arrangement_of(cards, pos[i])).foul
