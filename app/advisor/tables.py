"""The opponent tables: row strengths of keep_back opponents, generated once, shipped.

One table per opponent model, the number of decks and ``ace_low_straight`` (a keep_back
player arranges the same way at every table). Each holds ``HANDS`` keep_back arrangements
of seeded random deals as front, middle and back strength indices
(``app.domain.arrange._scale``), kept joint so the ranking model reads each row's win
chance and the chance of a scoop from the same hands. A table records the fingerprint of
the scale it indexes, and loading refuses one that no longer matches.

Regenerate (seeded, reproducible; about a minute): ``.venv/bin/python -m app.advisor.tables``
"""

from __future__ import annotations

import hashlib
import math
import random
import sys
from functools import cache
from pathlib import Path

import numpy as np

from app.domain.arrange import _scale, keep_back
from app.domain.cards import DECK, Card
from app.domain.hands import AceLow, row_strength

DATA = Path(__file__).with_name("data")
HANDS = 20_000
SEED = 17
# (decks, ace_low) of every preset (rulesets.PRESETS); tests check nothing is missing.
MODELS = ((1, AceLow.LOWEST), (2, AceLow.LOWEST))


def name(decks: int, ace_low: AceLow) -> str:
    return f"keep_back-{decks}deck-{ace_low.value}"


def fingerprint(ace_low: AceLow) -> str:
    scale = _scale(ace_low).strength
    return hashlib.sha256(repr(scale).encode()).hexdigest()[:16]


def index_of(ace_low: AceLow) -> dict[object, int]:
    return _index(ace_low)


@cache
def _index(ace_low: AceLow) -> dict[object, int]:
    return {s: i for i, s in enumerate(_scale(ace_low).strength)}


def opponent_rows(rng: random.Random, decks: int, ace_low: AceLow, hands: int,
                  exclude: tuple[Card, ...] = ()) -> np.ndarray:
    """Deal ``hands`` keep_back hands from shuffled decks (minus ``exclude``): (hands, 3)."""
    index = _index(ace_low)
    pack = list(DECK) * decks
    for card in exclude:
        pack.remove(card)
    per_deal = len(pack) // 13
    out = np.empty((hands, 3), dtype=np.uint16)
    k = 0
    while k < hands:
        rng.shuffle(pack)
        for seat in range(min(per_deal, hands - k)):
            a = keep_back(pack[13 * seat:13 * seat + 13], ace_low, decks=decks)
            out[k] = [index[row_strength(row, ace_low)] for row in a.rows]
            k += 1
    return out


@cache
def load(decks: int, ace_low: AceLow) -> np.ndarray | None:
    """Return the shipped table of this opponent model, None when there is none."""
    path = DATA / f"{name(decks, ace_low)}.npz"
    if not path.exists():
        return None
    with np.load(path) as data:
        if str(data["fingerprint"]) != fingerprint(ace_low):
            raise RuntimeError(f"{path.name} indexes another strength scale; regenerate it "
                               "with python -m app.advisor.tables")
        rows: np.ndarray = data["rows"].astype(np.int32)
    return rows


def generate(decks: int, ace_low: AceLow, hands: int = HANDS, seed: int = SEED) -> Path:
    rng = random.Random(f"{seed}-{decks}-{ace_low.value}")
    rows = opponent_rows(rng, decks, ace_low, hands)
    path = DATA / f"{name(decks, ace_low)}.npz"
    DATA.mkdir(exist_ok=True)
    np.savez_compressed(path, rows=rows, fingerprint=np.array(fingerprint(ace_low)),
                        seed=np.array(seed), hands=np.array(hands))
    return path


def main() -> None:
    for decks, ace_low in MODELS:
        path = generate(decks, ace_low)
        print(f"{path} ({path.stat().st_size // 1024} KB)", flush=True)


if __name__ == "__main__":
    main()
    sys.exit(0)


@cache
def rank_counts(ace_low: AceLow) -> np.ndarray:
    """Return, per strength index, how many cards of each rank (2..A) the row holds.

    A row's strength names its ranks (a high card or flush lists them all, a straight its
    top, a pair its pair and kickers), so each index stands for one rank multiset: the
    scale's rank code, three bits per rank, decoded.
    """
    s = _scale(ace_low)
    out = np.zeros((len(s.strength), 13), dtype=np.int8)
    for table in (s.plain5, s.flush5, s.three):
        for code, i in table.items():
            out[i] = [(code >> 3 * k) & 7 for k in range(13)]
    return out


@cache
def hand_counts(decks: int, ace_low: AceLow) -> np.ndarray | None:
    """Per hand of the shipped table, its 13 cards' count of each rank: (hands, 13)."""
    rows = load(decks, ace_low)
    if rows is None:
        return None
    counts = rank_counts(ace_low)
    out: np.ndarray = (counts[rows[:, 0]] + counts[rows[:, 1]] + counts[rows[:, 2]])
    return out.astype(np.int8)


@cache
def hand_count_columns(decks: int, ace_low: AceLow) -> np.ndarray | None:
    """``hand_counts`` by rank: row r holds every table hand's count of rank r, (13, hands).

    ``removal_logs`` gathers from each rank's table of ``4 × decks + 1`` logarithms with
    them. No matrix product, so no BLAS call (BLAS threads spin and count as the
    process's CPU time).
    """
    counts = hand_counts(decks, ace_low)
    if counts is None:
        return None
    out: np.ndarray = np.ascontiguousarray(counts.T.astype(np.intp))
    return out


@cache
def removal_logs(decks: int, ace_low: AceLow) -> np.ndarray | None:
    """``removal_weights``' factors, gathered once: [r, m − 1] holds every table hand's
    log factor for its count of rank r when the player holds m of that rank, (13, 4 ×
    decks, hands) float64 (8 MB a one-deck table, 17 MB a two-deck one). A weight is
    then a few additions and an exponential, the same numbers in the same order as a
    gather from each rank's small table of logarithms."""
    columns = hand_count_columns(decks, ace_low)
    if columns is None:
        return None
    d = 4 * decks
    out = np.empty((13, d, columns.shape[1]))
    for m in range(1, d + 1):
        left = d - m
        # A count the pack no longer holds: −inf, whose exponential is 0 at once (a finite
        # floor such as −1e4 gives the same 0 through libm's slower underflow path).
        logs = np.array([math.log(math.comb(left, c) / math.comb(d, c)) if c <= left
                         else -math.inf for c in range(d + 1)])
        for r in range(13):
            out[r, m - 1] = logs[columns[r]]
    return out


def removal_weights(logs: np.ndarray, held: np.ndarray) -> np.ndarray:
    """Weight each opponent hand by how likely its ranks are once ``held`` is out of the pack.

    A table hand was dealt from whole decks; at the table the other seats are dealt from what
    the player's 13 cards leave. The chance of a hand's rank counts ``c`` is ∏ C(D, c_r)
    over the whole pack (D = 4 × decks copies of each rank) and ∏ C(D − m_r, c_r) once the
    player holds ``m_r`` of rank r, so each hand's weight is ∏ C(D − m_r, c_r) / C(D, c_r):
    zero for a hand that needs a card the player holds (three aces in the player's hand
    leave no pair of aces to an opponent). Suits are not weighed. ``logs`` is
    ``removal_logs``: the logarithms are summed rank by rank, a rank the player does not
    hold weighing 1 whatever the count.
    """
    logw = None
    for r in range(13):
        m = int(held[r])
        if m:  # from the first rank held: 0.0 + x is x
            logw = logs[r, m - 1].copy() if logw is None else np.add(logw, logs[r, m - 1],
                                                                      out=logw)
    w: np.ndarray = np.exp(logw) if logw is not None else np.ones(logs.shape[2])
    return w
