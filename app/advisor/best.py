"""``mode: best``: the arrangement with the highest expected points at this table.

Every other seat is a keep_back opponent holding 13 random cards from what the hand
leaves, claiming any special hand the ruleset pays. Each valid split (``splits.py``) is
ranked by model points (``model.py``) on ``COARSE`` hands drawn from the ruleset's shipped
opponent table with card-removal weights (``_without_held``; else a pool of ``POOL``
sampled ones), the best ``FINE_SPLITS`` again on ``FINE``; the model's best is the answer
(``_rank``). It, the next ``SHORTLIST`` − 1, keep_back's own and any special claim are then
played through the real scorer on the same ``DEALS`` sampled deals for the points reported
(``expected_points``, with its standard ``error``) and the special claim (``Advice.claim``).
Deals are seeded by the cards, the ruleset's hash and the player count, so a request
always gets one answer, and the ``seed`` it reports reproduces them.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from app.advisor import model, tables
from app.advisor.splits import Splits, lookup, splits, warm_subsets
from app.domain import arrange
from app.domain.arrange import keep_back
from app.domain.cards import DECK, Card
from app.domain.hands import AceLow, Arrangement, row_strength
from app.domain.rulesets import DRAGONS, FrontOrder, Ruleset, Topology, ruleset_hash
from app.domain.scoring import PlayerHand, score_choices
from app.domain.specials import SpecialName, find_specials

COARSE = 256
FINE = 4096
FINE_SPLITS = 16
SHORTLIST = 3
DEALS = 12
POOL = 96
OVERRIDE_Z: float | None = None
ME = "advisor"


@dataclass(frozen=True)
class Choice:
    """One candidate after refinement: what it is and what the real scorer gave it."""

    arrangement: Arrangement | None  # None for the special-hand claim
    special: SpecialName | None
    model_points: float | None
    points: tuple[int, ...]  # the advisor's points on each sampled deal

    @property
    def mean(self) -> float:
        return sum(self.points) / len(self.points)

    @property
    def error(self) -> float:
        return _stderr(self.points)


@dataclass(frozen=True)
class Advice:
    best: Choice
    others: tuple[Choice, ...]  # the other refined arrangements, best first
    keep_back: Choice
    special: Choice | None
    players: int
    deals: int
    seed: str
    table: str
    gain: float  # best − keep_back, same deals
    gain_error: float

    @property
    def claim(self) -> bool:
        """Say whether claiming the special hand is worth more than the best rows.

        The claim's points hardly vary from deal to deal; the rows' vary a lot, so 12
        deals judge the rows poorly: the claim is weighed against the model's points of
        the best rows (``FINE`` opponent hands), or their deals' mean when there are none.
        """
        if self.special is None:
            return False
        rows = self.best.model_points
        return self.special.mean > (self.best.mean if rows is None else rows)


def warm_up() -> None:
    """Build the tables the advisor's first answer in a process builds otherwise (about
    0.4 s in all): the split tables, and for each ``ace_low_straight`` setting of a preset
    its strength scale (app.domain.arrange.warm_up), lookup and index, and the shipped
    opponent tables. A table's own rules that set another ace-low pay for theirs once."""
    arrange.warm_up()
    warm_subsets()
    for ace_low in arrange.PRESET_ACE_LOWS:
        lookup(ace_low)
        tables.index_of(ace_low)
    for decks, ace_low in tables.MODELS:
        tables.removal_logs(decks, ace_low)


def _stderr(xs: Sequence[float]) -> float:
    n = len(xs)
    if n < 2:
        return 0.0
    mean = sum(xs) / n
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1) / n)


def seed_of(cards: Sequence[Card], rules: Ruleset, players: int) -> str:
    text = ",".join(sorted(str(c) for c in cards)) + f"|{_rules_hash(rules)}|{players}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@lru_cache(maxsize=64)
def _rules_hash(rules: Ruleset) -> str:
    """``ruleset_hash``, once per ruleset: equal rulesets have equal canonical JSON."""
    return ruleset_hash(rules)


def special_claim(cards: Sequence[Card], rules: Ruleset) -> SpecialName | None:
    """The special hand the cards hold that the ruleset pays most for, as the scorer picks."""
    held = [h for h in find_specials(cards, six_pairs_counts_quads=rules.six_pairs_counts_quads,
                                     front_straight_ace=rules.front_straight_ace,
                                     ace_low=rules.ace_low_straight)
            if rules.values_special(h.name)]
    if not held:
        return None
    top = max(held, key=lambda h: (rules.hand_value(h.name),
                                   rules.dragon.enabled and h.name in DRAGONS,
                                   list(SpecialName).index(h.name)))
    return top.name


def pack_without(cards: Sequence[Card], rules: Ruleset) -> list[Card]:
    """The ruleset's decks, in deck order, less ``cards``: what the other seats are dealt."""
    pack = list(DECK) * rules.decks
    for card in cards:
        pack.remove(card)
    return pack


def deal_opponents(rng: random.Random, pack: Sequence[Card], rules: Ruleset,
                   players: int) -> list[PlayerHand]:
    """Deal and keep_back-arrange the other seats' hands from ``pack_without`` the hand."""
    drawn = rng.sample(pack, 13 * (players - 1))
    banker = rules.topology is Topology.BANKER
    return [PlayerHand(f"seat{i + 1}", keep_back(drawn[13 * i:13 * i + 13],
                                                 rules.ace_low_straight, decks=rules.decks),
                       banker=banker and i == 0)
            for i in range(players - 1)]


def _rank(choices: list[Choice]) -> list[Choice]:
    """Order the refined choices: by model points, unless the sampled deals say otherwise.

    The model reads ``FINE`` opponent hands, the deals only ``DEALS``; a choice moves above
    the model's first only when its points on the same deals beat it by more than
    ``OVERRIDE_Z`` standard errors of the difference (never when that is None).
    """
    by_model = sorted(choices, key=lambda c: c.model_points or 0.0, reverse=True)
    if OVERRIDE_Z is None:
        return by_model
    first = by_model[0]

    def margin(c: Choice) -> float:
        diff = [x - y for x, y in zip(c.points, first.points, strict=True)]
        err = _stderr(diff)
        mean = sum(diff) / len(diff)
        return mean - OVERRIDE_Z * err if err > 0 else (mean if mean > 0 else -1.0)

    better = [c for c in by_model[1:] if margin(c) > 0]
    if not better:
        return by_model
    top = max(better, key=lambda c: c.mean)
    return [top, *[c for c in by_model if c is not top]]


def _without_held(pool: np.ndarray, hand: Sequence[Card], rules: Ruleset,
                  rng: random.Random) -> np.ndarray:
    """Draw ``FINE`` table hands in proportion to how likely each is at this table.

    The table's hands were dealt from whole decks; the other seats here are dealt from what
    ``hand`` leaves (``tables.removal_weights``: a hand needing a card the player holds
    is never drawn). Systematic resampling, seeded from ``rng``, keeps the table's order.
    """
    logs = tables.removal_logs(rules.decks, rules.ace_low_straight)
    assert logs is not None
    held = np.zeros(13, dtype=np.int64)
    for card in hand:
        held[int(card.rank) - 2] += 1
    w = tables.removal_weights(logs, held)
    cum = np.cumsum(w)
    at = (rng.random() + np.arange(FINE)) * (cum[-1] / FINE)
    picked = np.minimum(np.searchsorted(cum, at, side="right"), len(pool) - 1)
    rng_np = np.random.default_rng(rng.getrandbits(64))
    picked = picked[rng_np.permutation(FINE)]  # any COARSE of them a fair sample
    drawn: np.ndarray = pool.take(picked, axis=0)
    return drawn


@dataclass(frozen=True)
class _Ranked:
    """What the model decides before any deal: the shortlist, keep_back's, the claim."""

    hand: tuple[Card, ...]
    candidates: list[tuple[Arrangement, float]]  # the best SHORTLIST (+ keep_back), best first
    keep_back: Arrangement
    claim: SpecialName | None
    table: str


def _fine(hand: tuple[Card, ...], rules: Ruleset, n: int, rng: random.Random, found: Splits,
          extra: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, float | None, str]:
    """Rank the splits ``found`` of ``hand`` by the model: every split on ``COARSE``
    opponent hands, the best ``FINE_SPLITS`` again on ``FINE``. Returns those best in
    order (best first) with their fine points, the fine points of ``extra`` (one more
    split's strengths, or None) and the opponent table's name. A split's points are its
    own alone, so ``extra`` changes no other split's."""
    low = rules.ace_low_straight
    banker = rules.topology is Topology.BANKER
    category = lookup(low).category

    pool = tables.load(rules.decks, low)
    table = tables.name(rules.decks, low)
    if pool is None:
        pool = tables.opponent_rows(rng, rules.decks, low, POOL, exclude=hand).astype(np.int32)
        table = f"sampled:{POOL}"
    else:
        pool = _without_held(pool, hand, rules, rng)

    between = model.scoop_rate(pool, category, rules)

    def points(strengths: np.ndarray, size: int) -> np.ndarray:
        return model.expected(strengths, pool[:size], category, rules, n - 1, banker, between)

    coarse = points(found.strengths, COARSE)
    top = np.argsort(-coarse, kind="stable")[:FINE_SPLITS]
    rows = found.strengths[top] if extra is None else np.concatenate([found.strengths[top],
                                                                       extra])
    fine_all = points(rows, FINE)
    fine = fine_all[:len(top)]
    by_fine = np.argsort(-fine, kind="stable")
    extra_points = None if extra is None else float(fine_all[-1])
    return top[by_fine], fine[by_fine], extra_points, table


def _ranked(hand: tuple[Card, ...], rules: Ruleset, n: int, rng: random.Random,
            claim: SpecialName | None) -> _Ranked:
    """Rank the splits of ``hand`` by the model: the shortlist the deals then play.
    ``claim`` is ``special_claim(hand, rules)``, which the caller has found already."""
    found = splits(hand, rules)
    kb, kb_strengths = _keep_back(hand, rules, found)
    order, fine, kb_points, table = _fine(hand, rules, n, rng, found, kb_strengths)
    assert kb_points is not None
    candidates: list[tuple[Arrangement, float]] = []
    for i, points in zip(order[:SHORTLIST].tolist(), fine[:SHORTLIST].tolist(), strict=True):
        a = found.arrangement(i)
        if (found.strengths[i] == kb_strengths[0]).all():
            a = kb  # the same strengths: keep keep_back's own cards (suits only differ)
        candidates.append((a, points))
    if all(a != kb for a, _ in candidates):
        candidates.append((kb, kb_points))
    return _Ranked(hand, candidates, kb, claim, table)


def _strengths(a: Arrangement, low: AceLow) -> np.ndarray:
    index = tables.index_of(low)
    return np.array([[index[row_strength(row, low)] for row in a.rows]], dtype=np.int32)


def _keep_back(hand: tuple[Card, ...], rules: Ruleset, found: Splits
               ) -> tuple[Arrangement, np.ndarray]:
    """keep_back's arrangement of ``hand`` and its row strengths, (1, 3): read from
    ``found`` (``keep_back_split``) unless keep_back must be run."""
    at = keep_back_split(found, rules)
    if at is None:
        kb = keep_back(hand, rules.ace_low_straight, decks=rules.decks)
        return kb, _strengths(kb, rules.ace_low_straight)
    return found.arrangement(at), found.strengths[at:at + 1]


def keep_back_split(found: Splits, rules: Ruleset) -> int | None:
    """Which of ``found`` is keep_back's arrangement, without running keep_back.

    keep_back plays the valid split that is best by the back's, the middle's and the
    front's category, then their strengths in that order (app.domain.arrange): a split
    at least as strong on every row is at least as good by that order, so keep_back's is
    never dominated and ``splits`` keeps its strengths. Among the splits of those
    strengths keep_back takes the one whose back, then middle, then front hold the
    cards earliest in canonical order: the first in the position table, the one
    ``splits`` keeps. None under ``front_order: strict``, which keep_back does not play
    by: ``splits`` may have dropped its split.
    """
    if rules.front_order is FrontOrder.STRICT:
        return None
    st = found.strengths.astype(np.int64)
    cat = lookup(rules.ace_low_straight).category[found.strengths].astype(np.int64)
    # Strength indices are below 2**14 and categories below 2**4: one integer orders both.
    key = (((cat[:, 2] << 8 | cat[:, 1] << 4 | cat[:, 0]) << 42)
           | st[:, 2] << 28 | st[:, 1] << 14 | st[:, 0])
    return int(np.argmax(key))


def choose(cards: Sequence[Card], rules: Ruleset, players: int | None = None
           ) -> tuple[Arrangement, SpecialName | None]:
    """What ``advise`` plays, without the deals it reports points from when it need not.

    Returns the best arrangement and the special hand to claim (None: play the rows). The
    deals decide nothing unless the cards hold a special claim (``Advice.claim`` weighs
    the claim's mean over them, so only the claim is played on them) or ``OVERRIDE_Z``
    lets them reorder the shortlist (then the whole ``advise`` is run): the choice is
    always ``advise``'s own. For the fair-play job, which prices every seat of a round.
    """
    n = rules.max_players if players is None else players
    hand = tuple(sorted(cards, key=lambda c: c.order))
    if OVERRIDE_Z is not None:
        advice = advise(hand, rules, n)
        claimed = advice.special.special if advice.claim and advice.special else None
        assert advice.best.arrangement is not None
        return advice.best.arrangement, claimed
    rng = random.Random(seed_of(hand, rules, n))
    claim = special_claim(hand, rules)
    ranked = _ranked(hand, rules, n, rng, claim)
    best, rows = _model_first(ranked.candidates)
    if claim is None:
        return best, None
    play = [PlayerHand(ME, ranked.keep_back, special=claim.value)]
    pack = pack_without(hand, rules)
    points = [score_choices(play, deal_opponents(rng, pack, rules, n), rules)[0]
              .players[0].points for _ in range(DEALS)]
    return best, claim if sum(points) / len(points) > rows else None


def _model_first(candidates: list[tuple[Arrangement, float]]) -> tuple[Arrangement, float]:
    """The candidate ``_rank`` puts first without ``OVERRIDE_Z``: the most model points,
    the first of equals. keep_back's comes last and may be it: the shortlist is the best
    of ``FINE_SPLITS`` chosen on ``COARSE`` hands, and keep_back's split may not be among
    those and still score more on ``FINE``."""
    return max(candidates, key=lambda c: c[1] or 0.0)


def advise(cards: Sequence[Card], rules: Ruleset, players: int | None = None,
           deals: int = DEALS) -> Advice:
    """Return the best arrangement of 13 checked cards at a table of ``players``."""
    n = rules.max_players if players is None else players
    hand = tuple(sorted(cards, key=lambda c: c.order))
    seed = seed_of(hand, rules, n)
    rng = random.Random(seed)
    ranked = _ranked(hand, rules, n, rng, special_claim(hand, rules))
    candidates, kb, claim = ranked.candidates, ranked.keep_back, ranked.claim

    plays = [PlayerHand(ME, a, special="none") for a, _ in candidates]
    if claim is not None:
        plays.append(PlayerHand(ME, kb, special=claim.value))
    pack = pack_without(hand, rules)
    scores: list[list[int]] = [[] for _ in plays]
    for _ in range(deals):
        others = deal_opponents(rng, pack, rules, n)
        for k, result in enumerate(score_choices(plays, others, rules)):
            scores[k].append(result.players[0].points)
    claimed = scores.pop() if claim is not None else []

    choices = [Choice(a, None, m, tuple(s)) for (a, m), s in zip(candidates, scores, strict=True)]
    ranked_choices = _rank(choices)
    best = ranked_choices[0]
    kb_choice = next(c for c in choices if c.arrangement == kb)
    diff = [x - y for x, y in zip(best.points, kb_choice.points, strict=True)]
    special = None if claim is None else Choice(None, claim, None, tuple(claimed))
    return Advice(best, tuple(ranked_choices[1:]), kb_choice, special, n, deals, seed,
                  ranked.table, sum(diff) / deals, _stderr(diff))
