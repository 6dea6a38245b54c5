"""Every valid split of 13 cards, as row strengths, with dominated splits dropped.

All 72,072 ways to pick a back (5 of 13), a middle (5 of the 8 left) and a front (the 3
left) are one static table of positions, back by back; a hand's row strengths are then
numpy gathers from its 1,287 five-card and 286 three-card subsets' strengths, found by
sorted-array lookups into the domain's strength scale (``app.domain.arrange._scale``:
every row strength as one integer, 3- and 5-card rows on one scale, built from
``hands.row_strength``). A split is kept when it is valid (front ≤ middle ≤ back, and
strictly below under ``front_order: strict``), once per strength triple, and only if no
other kept split of the same category triple is at least as strong on all three rows
(dominance pruning). Within one category triple every row bonus is the same, so a
dominated split can never score more against any opponent: the pruning loses nothing.
Across category triples it would, when a house pays less for a higher category.

When no row table pays less for a higher category (``monotone``: every preset but
monster4, whose five of a kind pays no bonus), the pruning compares no two splits: most
backs are left out before any gather (``_valid``: every split on them is beaten on all
rows by one split found first), and the rest pruned by one table of running maxima
(``_skyline``). Both keep exactly the splits the pairwise comparison (``_undominated``)
keeps, each with the same first split of its strengths (tests/unit/test_advisor_fast.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import combinations

import numpy as np

from app.domain.arrange import _scale
from app.domain.cards import Card
from app.domain.hands import AceLow, Arrangement, arrangement
from app.domain.rulesets import FrontOrder, Ruleset

_SUIT_CODE = {"s": 0, "h": 1, "d": 2, "c": 3}


@cache
def _positions() -> np.ndarray:
    """Return the (72072, 13) table of positions: back 0-4, middle 5-9, front 10-12."""
    rows = []
    everything = range(13)
    for back in combinations(everything, 5):
        rest = [p for p in everything if p not in back]
        for middle in combinations(rest, 5):
            front = [p for p in rest if p not in middle]
            rows.append((*back, *middle, *front))
    return np.array(rows, dtype=np.int8)


@cache
def _subsets() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the 1,287 five-card and 286 three-card position subsets, and per split the
    (back, middle, front) subset ids: a row's strength is computed once per subset."""
    fives = list(combinations(range(13), 5))
    threes = list(combinations(range(13), 3))
    five_id = {c: i for i, c in enumerate(fives)}
    three_id = {c: i for i, c in enumerate(threes)}
    pos = _positions().tolist()
    ids = np.array([(five_id[tuple(p[:5])], five_id[tuple(p[5:10])], three_id[tuple(p[10:])])
                    for p in pos], dtype=np.int16)
    return np.array(fives, dtype=np.int8), np.array(threes, dtype=np.int8), ids


def warm_subsets() -> None:
    """Build the split positions and their row subsets now (see app.advisor.best.warm_up)."""
    _subsets()
    _id_columns()
    _completions()
    _beside_fronts()
    _members()


@dataclass(frozen=True)
class Lookup:
    """The strength scale as sorted code arrays, for numpy lookups."""

    plain_codes: np.ndarray
    plain_index: np.ndarray
    flush_codes: np.ndarray
    flush_index: np.ndarray
    three_codes: np.ndarray
    three_index: np.ndarray
    category: np.ndarray  # category of each strength index


@cache
def lookup(ace_low: AceLow) -> Lookup:
    s = _scale(ace_low)

    def pair(table: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
        codes = np.array(sorted(table), dtype=np.int64)
        return codes, np.array([table[c] for c in codes.tolist()], dtype=np.int32)

    return Lookup(*pair(s.plain5), *pair(s.flush5), *pair(s.three),
                  np.array(s.category, dtype=np.int8))


def _find(codes: np.ndarray, table: np.ndarray, index: np.ndarray) -> np.ndarray:
    at = np.searchsorted(table, codes)
    return index[np.minimum(at, len(table) - 1)]


@dataclass(frozen=True)
class Splits:
    """The candidate splits of one hand: strengths per row and the cards of each."""

    cards: tuple[Card, ...]  # canonical order; positions index this
    strengths: np.ndarray  # (n, 3) int32: front, middle, back strength indices
    positions: np.ndarray  # (n, 13) int8: back 0-4, middle 5-9, front 10-12

    def arrangement(self, i: int) -> Arrangement:
        p = self.positions[i].tolist()
        c = self.cards
        return arrangement([c[k] for k in p[10:]], [c[k] for k in p[5:10]],
                           [c[k] for k in p[:5]])


@cache
def _id_columns() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_subsets``' per-split (back, middle, front) subset ids as three contiguous index
    arrays: numpy gathers with them without converting 72,072 int16 ids each time."""
    ids = _subsets()[2]
    back, middle, front = (np.ascontiguousarray(ids[:, k], dtype=np.intp) for k in range(3))
    return back, middle, front


def _row_columns(cards: tuple[Card, ...], ace_low: AceLow
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every split's front, middle and back strength index, as three (72072,) arrays."""
    five, three = _subset_strengths(cards, ace_low)
    back, middle, front = _id_columns()
    return three[front], five[middle], five[back]


def _subset_strengths(cards: tuple[Card, ...], ace_low: AceLow
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The strength index of each five-card and three-card subset of the 13 cards."""
    in_five, in_three = _members()
    lk = lookup(ace_low)
    # Per card, three bits for its rank and three for its suit: a subset's rank code (as
    # the scale's tables key it) and suit counts are one integer product each.
    bits = np.array([(1 << 3 * (int(c.rank) - 2), 1 << 3 * _SUIT_CODE[c.suit]) for c in cards],
                    dtype=np.int64)
    code, suits = (in_five @ bits).T
    one_suit = (suits == 5) | (suits == 5 << 3) | (suits == 5 << 6) | (suits == 5 << 9)
    five = _find(code, lk.plain_codes, lk.plain_index)
    if one_suit.any():
        five[one_suit] = _find(code[one_suit], lk.flush_codes, lk.flush_index)
    three = _find(in_three @ bits[:, 0], lk.three_codes, lk.three_index)
    return five, three


@cache
def _members() -> tuple[np.ndarray, np.ndarray]:
    """Which of the 13 positions each five-card and three-card subset holds, as 0/1 rows:
    (1287, 13) and (286, 13) int64."""
    fives, threes, _ = _subsets()
    out = []
    for subsets in (fives, threes):
        member = np.zeros((len(subsets), 13), dtype=np.int64)
        np.put_along_axis(member, subsets.astype(np.intp), 1, axis=1)
        out.append(member)
    return out[0], out[1]


@cache
def _completions() -> tuple[np.ndarray, np.ndarray]:
    """The position table's middle and front subset ids as (1287, 56) index arrays: row b
    holds the splits whose back is five-card subset b (the table runs back by back)."""
    ids = _subsets()[2]
    middle, front = (np.ascontiguousarray(ids[:, k], dtype=np.intp).reshape(1287, 56)
                     for k in (1, 2))
    return middle, front


@cache
def _beside_fronts() -> tuple[np.ndarray, np.ndarray]:
    """Per three-card subset (286), the back and middle five-card subset ids of the 252
    ways to split the ten other cards: two (286, 252) index arrays."""
    five_id: dict[tuple[int, ...], int] = {
        c: i for i, c in enumerate(combinations(range(13), 5))}
    backs, middles = [], []
    for front in combinations(range(13), 3):
        rest = [p for p in range(13) if p not in front]
        pairs = [(back, tuple(p for p in rest if p not in back))
                 for back in combinations(rest, 5)]
        backs.append([five_id[b] for b, _ in pairs])
        middles.append([five_id[m] for _, m in pairs])
    return np.array(backs, dtype=np.intp), np.array(middles, dtype=np.intp)


def _valid(cards: tuple[Card, ...], ace_low: AceLow, prune: bool
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The valid splits (front ≤ middle ≤ back): their numbers in the position table and
    their front, middle and back strength indices (int16; below 2**14). ``_row_columns``
    of those, from gathers of 56 middles and fronts per back: the back is the row's own
    five-card subset.

    With ``prune``, backs whose every split another beats on all three rows are left out
    before any gather. Take the strongest front any valid split plays, and the strongest
    middle a valid split holds beside it (``floor``): that split beats on every row any
    split whose back is below ``floor``, whose middle is no stronger than its back and
    front no stronger than the best. About nine backs in ten go so; only dominated splits.
    The fronts are tried strongest first, a few dozen at a time, until one can be played.
    """
    five, three = _subset_strengths(cards, ace_low)
    five16, three16 = five.astype(np.int16), three.astype(np.int16)
    ids_m, ids_f = _completions()
    backs = None
    if prune:
        beside_b, beside_m = _beside_fronts()
        order = np.argsort(-three16, kind="stable")
        start, size = 0, 32
        while start < len(order):
            tried = order[start:start + size]
            fronts = three16[tried][:, None]
            back, middle = five16[beside_b[tried]], five16[beside_m[tried]]
            ok = (fronts <= middle) & (middle <= back)
            if ok.any():
                best = np.where(ok, fronts, -1).max()
                floor = middle[ok & (fronts == best)].max()
                backs = np.flatnonzero(five16 >= floor)
                ids_m, ids_f = ids_m[backs], ids_f[backs]
                break
            start, size = start + size, 2 * size
    middle = five16[ids_m]
    front = three16[ids_f]
    back16 = five16 if backs is None else five16[backs]
    here = np.flatnonzero((front <= middle) & (middle <= back16[:, None]))
    row = here // 56
    at = here if backs is None else backs[row] * 56 + here % 56
    return at, front.ravel()[here], middle.ravel()[here], back16[row]


def row_strengths(cards: tuple[Card, ...], ace_low: AceLow) -> np.ndarray:
    """Return the (72072, 3) front, middle, back strength indices of every split."""
    out: np.ndarray = np.stack(_row_columns(cards, ace_low), axis=1).astype(np.int32)
    return out


def splits(cards: tuple[Card, ...], r: Ruleset) -> Splits:
    """Return the valid, distinct, undominated splits of 13 cards in canonical order.

    When a row table pays less for some higher category than for a lower one
    (``monotone``), a split dominates another only if it is also paid at least as much
    in every row by every table, so the pruning stays exact.

    Each distinct strength triple is kept once, with its first split in position-table
    order, and the splits come out in ascending (back, middle, front) order. Only row
    strengths are filtered; the positions of the few splits kept are gathered at the end.
    """
    ace_low = r.ace_low_straight
    prune = monotone(r) and r.front_order is not FrontOrder.STRICT
    at, front, middle, back = _valid(cards, ace_low, prune)
    # One integer per triple (strength indices are below 2**14), ascending as
    # (back, middle, front) is, then the split's number below it (72,072 < 2**17): one
    # sort orders the triples and puts each one's first split first.
    key = ((back.astype(np.int64) << 28) | (middle.astype(np.int64) << 14)
           | front) << 17 | at
    key.sort()
    triple = key >> 17
    first = np.ones(len(key), dtype=bool)
    first[1:] = triple[1:] != triple[:-1]
    key = key[first]
    at = key & ((1 << 17) - 1)
    triple = key >> 17
    st = np.empty((len(at), 3), dtype=np.int32)
    st[:, 0] = triple & ((1 << 14) - 1)
    st[:, 1] = (triple >> 14) & ((1 << 14) - 1)
    st[:, 2] = triple >> 28
    if r.front_order is FrontOrder.STRICT:
        keep = _strictly_below(st[:, 0], st[:, 1], ace_low)
        st, at = st[keep], at[keep]
    if monotone(r):
        extra = np.zeros((len(st), 0), dtype=np.int64)
    else:
        cats = lookup(ace_low).category[st]
        columns = [np.array(table[k], dtype=np.int64)[cats[:, k]]
                   for table in (r.lookup.row_bonus, r.lookup.holding, r.lookup.winner)
                   for k in range(3)]
        extra = np.stack(columns, axis=1)
    keep = _skyline(st) if extra.shape[1] == 0 else _undominated(st, extra)
    return Splits(cards, st[keep], _positions()[at[keep]])


def _skyline(st: np.ndarray) -> np.ndarray:
    """Return ``_undominated(st, no extra columns)``'s mask, without comparing splits pairwise.

    Split i is dominated when another is at least as strong on every row: one with a
    stronger middle, an equal middle and a stronger front, or all but the back equal and a
    stronger back. One table answers all three: per back (strongest first, a row of its
    own above them all) and per front rank (strongest first, a column of its own before
    them all), the strongest middle among the splits at least that strong on both, built by
    a scatter and two running maxima. Distinct triples never dominate through an equal one.
    """
    front, middle, back = st[:, 0], st[:, 1], st[:, 2]
    new = np.empty(len(st), dtype=bool)
    new[0] = True
    np.not_equal(back[1:], back[:-1], out=new[1:])  # st ascends by back
    rising = np.cumsum(new)
    backs = int(rising[-1])
    rank = np.zeros(int(front.max()) + 2, dtype=np.intp)
    rank[front] = 1
    rank[::-1] = np.cumsum(rank[::-1])  # rank[v]: distinct fronts at least v, 1 the strongest
    width = int(rank[0]) + 1
    cell = (backs + 1 - rising) * width + rank[front]
    table = np.full((backs + 1) * width, -1, dtype=np.int32)
    np.maximum.at(table, cell, middle)
    grid = table.reshape(backs + 1, width)
    np.maximum.accumulate(grid, axis=1, out=grid)
    np.maximum.accumulate(grid, axis=0, out=grid)
    out: np.ndarray = ((table[cell] <= middle) & (table[cell - 1] < middle)
                       & (table[cell - width] < middle))
    return out


def _strictly_below(front: np.ndarray, middle: np.ndarray, ace_low: AceLow) -> np.ndarray:
    """A strict front is below the middle: a prefix-equal key of one category is not."""
    scale = _scale(ace_low).strength
    out = np.ones(len(front), dtype=bool)
    for i, (f, m) in enumerate(zip(front.tolist(), middle.tolist(), strict=True)):
        sf, sm = scale[f], scale[m]
        if sf.category == sm.category and sm.key[:len(sf.key)] == sf.key:
            out[i] = False
    return out


def _undominated(st: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """Return a mask of the splits no other split beats on every row and ``extra`` column.

    ``st`` holds distinct triples in ascending (back, middle, front) order, so read
    backwards a split can only be dominated by one before it (an equal back needs an
    equal middle, then a higher front), and, dominance being transitive, by one already
    kept. Each chunk is checked against itself, earlier ones only; then every split still
    waiting against the chunk's kept ones, which drops most of them at once.
    """
    s = np.concatenate([st[::-1, :2], extra[::-1]], axis=1)  # the back is never worse
    s = _ranks(s[:, (s != s[:1]).any(axis=0)])  # a column equal in every split decides nothing
    keep = np.zeros(len(s), dtype=bool)
    waiting = np.arange(len(s))
    chunk = 256
    while len(waiting):
        part, waiting = waiting[:chunk], waiting[chunk:]
        rows = s[part]
        new = ~np.tril(_covered(rows, rows), k=-1).any(axis=1)
        keep[part[new]] = True
        if len(waiting):
            waiting = waiting[~_covered(s[waiting], rows[new]).any(axis=1)]
    return keep[::-1]


def _ranks(s: np.ndarray) -> np.ndarray:
    """Replace each column's values by their rank among its distinct values, as int16.

    Comparisons within a column are unchanged; a column holds at most 1,287 distinct
    values (the five-card subsets of 13 cards), and the narrow type makes the
    comparisons cheaper.
    """
    out = np.empty(s.shape, dtype=np.int16)
    for k in range(s.shape[1]):
        out[:, k] = np.unique(s[:, k], return_inverse=True)[1]
    return out


def _covered(rows: np.ndarray, by: np.ndarray) -> np.ndarray:
    """Return [i, j]: ``by[j]`` is at least ``rows[i]`` in every column.

    One comparison per column, and-ed: numpy reduces a short last axis (``all(axis=2)``
    over two columns) about ten times slower.
    """
    out = np.ones((len(rows), len(by)), dtype=bool)
    for k in range(rows.shape[1]):
        out &= by[None, :, k] >= rows[:, None, k]
    return out


def monotone(r: Ruleset) -> bool:
    """Say whether every row table pays at least as much for each higher category.

    Only the categories a row can hold count: the front holds high card, one pair or
    three of a kind, and five of a kind needs two decks. Then a split at least as strong
    on every row is at least as good against any opponent, and dominance prunes across
    category triples; otherwise only within one.
    """
    five = 10 if r.decks > 1 else 9
    possible = ((0, 1, 3), tuple(range(five)), tuple(range(five)))
    for table in (r.lookup.row_bonus, r.lookup.holding, r.lookup.winner):
        for row, cats in zip(table, possible, strict=True):
            values = [row[c] for c in cats]
            if any(a > b for a, b in zip(values, values[1:], strict=False)):
                return False
    return True
