"""The fair-play signal of one stored 十三支 round: what each player's choice gave each other.

For every ordered pair of seats A→B (A chose its rows, B is anyone else at the table):

- ``t``: the points A would have scored against B's actual rows with the advisor's choice
  (``mode: best``: its arrangement, or its special claim when it says the claim is worth
  more), minus A's actual points against B. The round is scored again with A's hand
  replaced and every other seat as played (so home runs count as they would have), and
  the pair's points read from each.
- ``d``: ``t`` minus A's mean ``t`` against the round's other opponents. An honest
  player's mistakes land on everyone alike, so ``d`` averages zero whatever his skill; it
  turns positive when his mistakes land on one partner.
- ``scoop``: +1 when A scooped B in the round as played, −1 when B scooped A, else 0.
- ``agreed``: A played exactly what the advisor would (a bot plays so far too often).

A seat that did not choose (13 cards arranged by the service, ``auto``) gives no figures as
A. Every figure carries ``VERSION`` and the advisor's seed for A's hand: the advisor is
deterministic, so the figure can always be computed again and never changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.advisor.best import choose, seed_of
from app.domain.cards import parse_cards
from app.domain.hands import ROWS, Row, arrangement
from app.domain.rulesets import Ruleset
from app.domain.scoring import PlayerHand, RoundScore, score_round

# What a stored figure was computed with: bump it whenever app/advisor answers differently
# (tests/unit/test_advisor_pinned.py fails then, and tests/data/advisor_versions.json must
# name the new answers' digest under the new version), so old figures stay as they were.
# cr1: card removal. cr2: every split ranked on 256 opponent hands (was 64), the best 16
# (was 24) on 4,096.
VERSION = "advisor-2026.12-cr2"


@dataclass(frozen=True, slots=True)
class PairSignal:
    player_a: str
    player_b: str
    seat_a: int
    seat_b: int
    t: int  # points A's choice gave B, against the advisor's
    d: float  # t minus A's mean t against the other opponents (0.0 heads-up)
    scoop: int  # +1 A scooped B, −1 B scooped A, 0 neither
    agreed: bool  # A played the advisor's choice
    moved: int  # A's actual points against B (negative: A paid B)
    seed: str  # the advisor's seed for A's hand


@dataclass(frozen=True, slots=True)
class Evidence:
    """What A held, played and was advised, for a case's evidence list."""

    cards: tuple[str, ...]
    played: dict[str, list[str]] | None
    special: str | None
    advised: dict[str, list[str]] | None
    advised_special: str | None


def _hand(player: Mapping[str, Any], decks: int) -> PlayerHand | None:
    """The seat as the player submitted it; None when the service arranged it."""
    submitted = player.get("submitted") or {}
    if "cards" in submitted or player.get("auto_arranged"):
        return None
    rows = [parse_cards(submitted[row.value]) for row in ROWS]
    special = player.get("special") or "none"
    return PlayerHand(player["player_id"], arrangement(*rows), special=special,
                      row_bet=None if player.get("row_bet") is None else Row(player["row_bet"]),
                      banker=bool(player.get("banker")))


def _as_played(player: Mapping[str, Any]) -> PlayerHand:
    """Any seat as it was scored: its rows as used, its special hand as played."""
    used: Mapping[str, Any] = player.get("arrangement") or player.get("submitted") or {}
    rows = [parse_cards(used[row.value]) for row in ROWS]
    return PlayerHand(player["player_id"], arrangement(*rows),
                      special=player.get("special") or "none",
                      row_bet=None if player.get("row_bet") is None else Row(player["row_bet"]),
                      banker=bool(player.get("banker")))


def _pair_points(score: RoundScore, a: str, b: str) -> int:
    for p in score.pairs:
        if p.first == a and p.second == b:
            return p.points
        if p.first == b and p.second == a:
            return -p.points
    return 0  # a pair the ruleset does not score (banker topology)


def _scoop(score: RoundScore, a: str, b: str) -> int:
    for p in score.pairs:
        if {p.first, p.second} == {a, b} and p.scoop is not None:
            return 1 if p.scoop == a else -1
    return 0


def analyse(result: Mapping[str, Any], rules: Ruleset
            ) -> tuple[list[PairSignal], dict[str, Evidence]]:
    """Return every ordered pair's signal of one round, and each chooser's evidence."""
    players: Sequence[Mapping[str, Any]] = result["players"]
    n = len(players)
    try:
        table = [_as_played(p) for p in players]
    except KeyError:  # a seat scored by its 13 cards alone (a special hand): no rows to price
        return [], {}
    actual = score_round(table, rules)
    out: list[PairSignal] = []
    evidence: dict[str, Evidence] = {}
    for i, player in enumerate(players):
        mine = _hand(player, rules.decks)
        if mine is None or n < 2:
            continue
        cards = [c for row in table[i].arrangement.rows for c in row]  # type: ignore[union-attr]
        best, claimed = choose(cards, rules, n)
        claims = claimed is not None
        if claimed is not None:
            chosen = PlayerHand(mine.player_id, table[i].arrangement, special=claimed.value,
                                row_bet=mine.row_bet, banker=mine.banker)
        else:
            chosen = PlayerHand(mine.player_id, best, special="none",
                                row_bet=mine.row_bet, banker=mine.banker)
        played_special = player.get("special")
        agreed = (claims and played_special == chosen.special) or (
            not claims and not played_special
            and chosen.arrangement == table[i].arrangement)
        # The seat as the advisor would play it; the round as played when that is it.
        advised = (actual if chosen == table[i]
                   else score_round([*table[:i], chosen, *table[i + 1:]], rules))
        a = mine.player_id
        seed = seed_of(cards, rules, n)
        ts: dict[int, int] = {}
        for j, other in enumerate(players):
            if j == i:
                continue
            b = other["player_id"]
            ts[j] = _pair_points(advised, a, b) - _pair_points(actual, a, b)
        for j, t in ts.items():
            rest = [v for k, v in ts.items() if k != j]
            d = t - sum(rest) / len(rest) if rest else 0.0
            b = players[j]["player_id"]
            out.append(PairSignal(a, b, i, j, t, d, _scoop(actual, a, b), agreed,
                                  _pair_points(actual, a, b), seed))
        evidence[a] = Evidence(
            tuple(str(c) for c in cards), player.get("submitted"), played_special,
            None if chosen.arrangement is None or claims else chosen.arrangement.as_text(),
            chosen.special if claims else None)
    return out, evidence
