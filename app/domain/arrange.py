"""Arrange 13 cards into three rows: ``keep_back`` and ``suggest`` (rules.md §4).

Valid arrangements are ordered, best first, by the back's, the middle's, then the front's
category; then their strengths (``hands.Strength``) in that order; then by the tie-break
"card list largest in canonical order", read as comparing the back rows card by card in
canonical order (rank descending, then suit s h d c), then the middle, then the front
rows. Strengths fix every row's ranks, so the tie-break only ever picks suits.

The search builds rows from cores (the cards that make a category) and kickers, best
first, with bounds, and never enumerates the 72,072 splits (docs/architecture.md).
Strengths are integers from tables built once per ``AceLow`` (``_scale``, ``warm_up``).
One search, kept whole in one module, longer than most.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from itertools import combinations, combinations_with_replacement, product
from typing import NamedTuple

from app.domain.cards import Card, Rank, Suit, check_copies
from app.domain.errors import CardError, Problem
from app.domain.hands import AceLow, Arrangement, Category, Strength, row_strength
from app.domain.rulesets import PRESETS

_FIVE = Category.FIVE_OF_A_KIND
_SF = Category.STRAIGHT_FLUSH
_QUADS = Category.FOUR_OF_A_KIND
_FULL = Category.FULL_HOUSE
_FLUSH = Category.FLUSH
_STRAIGHT = Category.STRAIGHT
_TRIPS = Category.THREE_OF_A_KIND
_TWO_PAIR = Category.TWO_PAIR
_PAIR = Category.ONE_PAIR
_HIGH = Category.HIGH_CARD
_FRONT_CATEGORIES = (_TRIPS, _PAIR, _HIGH)
_SUITS = tuple(Suit)
_WHEEL_BITS = sum(1 << r for r in (14, 2, 3, 4, 5))
_WINDOWS = {top: tuple(range(top, top - 5, -1)) for top in range(6, 15)} | {5: (14, 5, 4, 3, 2)}


def _code(ranks: Sequence[int]) -> int:
    """Encode a multiset of ranks, three bits per rank, so a row's code is a plain sum."""
    return sum(1 << 3 * (r - 2) for r in ranks)


class _Scale(NamedTuple):
    """Row strengths as integers on one scale, looked up by rank code."""

    plain5: dict[int, int]  # 5-card rows that are not all one suit
    flush5: dict[int, int]  # 5-card rows all of one suit
    three: dict[int, int]  # 3-card rows
    category: tuple[int, ...]  # category of each integer strength
    strength: tuple[Strength, ...]  # the Strength each integer stands for


@cache
def _scale(ace_low: AceLow) -> _Scale:
    """Build the strength tables for one ``ace_low_straight`` setting from ``row_strength``."""
    plain5: dict[int, Strength] = {}
    flush5: dict[int, Strength] = {}
    three: dict[int, Strength] = {}
    ranks = [Rank(r) for r in range(2, 15)]
    for combo in combinations_with_replacement(ranks, 5):
        # Suits cycle so that the plain row is never all one suit.
        mixed = [Card(r, _SUITS[i % 4]) for i, r in enumerate(combo)]
        plain5[_code(combo)] = row_strength(mixed, ace_low)
        if max(combo.count(r) for r in combo) <= 2:  # two decks hold two copies of a card
            flush5[_code(combo)] = row_strength([Card(r, Suit.SPADES) for r in combo], ace_low)
    for triple in combinations_with_replacement(ranks, 3):
        three[_code(triple)] = row_strength([Card(r, _SUITS[i]) for i, r in enumerate(triple)],
                                            ace_low)
    ordered = sorted({*plain5.values(), *flush5.values(), *three.values()})
    index = {s: i for i, s in enumerate(ordered)}
    return _Scale({c: index[s] for c, s in plain5.items()},
                  {c: index[s] for c, s in flush5.items()},
                  {c: index[s] for c, s in three.items()},
                  tuple(s.category for s in ordered), tuple(ordered))


# The ace-low settings of the presets: every round of a preset table uses one of these.
PRESET_ACE_LOWS = tuple(a for a in AceLow if any(r.ace_low_straight is a for r in PRESETS.values()))


def warm_up() -> None:
    """Build the strength scale of each preset's ``ace_low_straight`` setting now (about
    0.13 s each): the first ``keep_back`` of a process under a setting builds it otherwise,
    and an ``auto`` player's settle, a score or an arrange waits for it, as do the requests
    queued behind that one. A table's own rules that set another one pay for it once."""
    for ace_low in PRESET_ACE_LOWS:
        _scale(ace_low)


_Groups = tuple[dict[int, list[int]], dict[Suit, list[int]]]


class _Found(NamedTuple):
    """One valid arrangement as positions in the hand, with the order it sorts by."""

    # (cb, cm, cf, sb, sm, sf, back, middle and front tie-break lists): larger is better
    rank: tuple[int, int, int, int, int, int,
                tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    back: tuple[int, ...]
    middle: tuple[int, ...]
    front: tuple[int, ...]


class _Hand:
    """The 13 cards in canonical order, with the per-card facts the search reads."""

    def __init__(self, cards: Sequence[Card], ace_low: AceLow) -> None:
        self.cards = sorted(cards, key=lambda c: c.order)
        self.scale = _scale(ace_low)
        self.ace_low = ace_low
        self.rank = [int(c.rank) for c in self.cards]
        self.suit = [c.suit for c in self.cards]
        self.order = [c.order for c in self.cards]
        self.enc = [1 << 3 * (r - 2) for r in self.rank]
        per_suit = {s: self.suit.count(s) for s in _SUITS}
        # Copies of a rank are interchangeable unless their suit can still make a flush.
        self.kind = [(self.rank[p], self.suit[p] if per_suit[self.suit[p]] >= 5 else None)
                     for p in range(13)]

    # --- strengths -------------------------------------------------------------------

    def score(self, row: Sequence[int]) -> int:
        code = 0
        for p in row:
            code += self.enc[p]
        if len(row) == 3:
            return self.scale.three[code]
        first = self.suit[row[0]]
        if all(self.suit[p] == first for p in row):
            return self.scale.flush5[code]
        return self.scale.plain5[code]

    # --- cores -----------------------------------------------------------------------

    def choose(self, positions: Sequence[int], k: int) -> list[tuple[int, ...]]:
        """Return the distinct ways to take k of these same-rank cards, best suits first."""
        if len(positions) == k:
            return [tuple(positions)]
        seen: set[tuple[object, ...]] = set()
        ways = []
        for combo in combinations(positions, k):
            kinds = tuple(self.kind[p] for p in combo)
            if kinds not in seen:
                seen.add(kinds)
                ways.append(combo)
        return ways

    def group(self, pool: Sequence[int]) -> _Groups:
        """Return the histograms of a pool of cards: its cards by rank and by suit."""
        by_rank: dict[int, list[int]] = {}
        by_suit: dict[Suit, list[int]] = {}
        rank, suit = self.rank, self.suit
        for p in pool:
            by_rank.setdefault(rank[p], []).append(p)
            by_suit.setdefault(suit[p], []).append(p)
        return by_rank, by_suit

    def cores(self, groups: _Groups, category: int, size: int) -> list[tuple[int, ...]]:
        """Return the cores of ``category`` among the grouped cards."""
        by_rank, by_suit = groups
        if category == _HIGH:
            return [()]
        if category == _PAIR:
            return [c for r, ps in by_rank.items() if len(ps) >= 2 for c in self.choose(ps, 2)]
        if category == _TRIPS:
            return [c for r, ps in by_rank.items() if len(ps) >= 3 for c in self.choose(ps, 3)]
        if size == 3:
            return []
        if category == _TWO_PAIR:
            pairs = [r for r, ps in by_rank.items() if len(ps) >= 2]
            return [a + b for hi, lo in combinations(pairs, 2)
                    for a in self.choose(by_rank[hi], 2) for b in self.choose(by_rank[lo], 2)]
        if category == _QUADS:
            return [c for r, ps in by_rank.items() if len(ps) >= 4 for c in self.choose(ps, 4)]
        if category == _FIVE:
            return [c for r, ps in by_rank.items() if len(ps) >= 5 for c in self.choose(ps, 5)]
        if category == _FULL:
            return [t + p for tr, tps in by_rank.items() if len(tps) >= 3
                    for pr, pps in by_rank.items() if pr != tr and len(pps) >= 2
                    for t in self.choose(tps, 3) for p in self.choose(pps, 2)]
        if category == _STRAIGHT:
            straights: list[tuple[int, ...]] = []
            for window in self.windows(by_rank):
                singles = [self.choose(by_rank[r], 1) for r in window]
                straights.extend(tuple(c[0] for c in combo) for combo in product(*singles))
            return self.exactly(straights, category)
        found: list[tuple[int, ...]] = []
        for ps in by_suit.values():
            if len(ps) < 5:
                continue
            if category == _FLUSH:
                found.extend(combinations(ps, 5))
            else:  # straight flush
                in_suit: dict[int, list[int]] = {}
                for p in ps:
                    in_suit.setdefault(self.rank[p], []).append(p)
                found.extend(tuple(in_suit[r][0] for r in w) for w in self.windows(in_suit))
        return self.exactly(found, category)

    def windows(self, by_rank: dict[int, list[int]]) -> Iterator[tuple[int, ...]]:
        """Yield the rank windows of every straight the ranks hold."""
        present = 0
        for r in by_rank:
            present |= 1 << r
        if present & _WHEEL_BITS == _WHEEL_BITS and self.ace_low is not AceLow.NONE:
            present |= 2  # the ace also counts as rank 1 here
        for top in range(14, 4, -1):
            if present >> (top - 4) & 31 == 31:
                yield _WINDOWS[top]

    def exactly(self, rows: list[tuple[int, ...]], category: int) -> list[tuple[int, ...]]:
        """Keep the distinct complete rows whose real category is ``category``."""
        seen: set[tuple[int, ...]] = set()
        kept = []
        for row in rows:
            orders = tuple(sorted(self.order[p] for p in row))
            if orders not in seen and self.scale.category[self.score(row)] == category:
                seen.add(orders)
                kept.append(row)
        return kept

    def core_key(self, core: tuple[int, ...]) -> tuple[int, ...]:
        """Return what a core alone decides of its row's key; kickers only come after it."""
        if len(core) == 5:
            return (self.score(core),)
        counts: dict[int, int] = {}
        for p in core:
            counts[self.rank[p]] = counts.get(self.rank[p], 0) + 1
        return tuple(sorted(counts, key=lambda r: (counts[r], r), reverse=True))

    # --- kickers ---------------------------------------------------------------------

    def complete(self, cores: tuple[tuple[int, ...], ...], rest: list[int],
                 categories: tuple[int, int, int]) -> _Found | None:
        """Fill the kickers of a core triple (back, middle, front) as well as possible.

        Kicker ranks are tried in descending order, back before middle (the front takes
        what is left), so the first choice that keeps each category and the row order is
        the strongest; suits are picked afterwards, best first, for the tie-break.
        """
        back, middle, front = cores
        scale = self.scale
        left: dict[int, int] = {}
        for p in rest:
            left[self.rank[p]] = left.get(self.rank[p], 0) + 1
        need_back, need_middle = 5 - len(back), 5 - len(middle)
        back_code = sum(self.enc[p] for p in back)
        middle_code = sum(self.enc[p] for p in middle)
        front_code = sum(self.enc[p] for p in front)
        back_ranks = {self.rank[p] for p in back}
        middle_ranks = {self.rank[p] for p in middle}
        cb, cm, cf = categories
        fixed_back = self.score(back) if not need_back else None
        fixed_middle = self.score(middle) if not need_middle else None
        for kb in combinations(sorted((r for r in left if r not in back_ranks), reverse=True),
                               need_back):
            if fixed_back is None:
                sb = scale.plain5[back_code + _code(kb)]
                if scale.category[sb] != cb:
                    continue
            else:
                sb = fixed_back
            after_back = dict(left)
            for r in kb:
                after_back[r] -= 1
            options = sorted((r for r, n in after_back.items() if n and r not in middle_ranks),
                             reverse=True)
            for km in combinations(options, need_middle):
                if fixed_middle is None:
                    sm = scale.plain5[middle_code + _code(km)]
                    if scale.category[sm] != cm or sm > sb:
                        continue
                else:
                    sm = fixed_middle
                    if sm > sb:
                        break
                kf = [r for r, n in after_back.items() for _ in range(n - km.count(r))]
                sf = scale.three[front_code + _code(kf)]
                if scale.category[sf] != cf or sf > sm:
                    continue
                found = self.suits(cores, rest, (kb, km, tuple(sorted(kf, reverse=True))),
                                   categories)
                if found is not None:
                    return found
        return None

    def suits(self, cores: tuple[tuple[int, ...], ...], rest: list[int],
              kickers: tuple[tuple[int, ...], ...],
              categories: tuple[int, int, int]) -> _Found | None:
        """Pick the kicker cards for the chosen ranks: best suits first, no accidental flush."""
        slots = [(row, r) for row, ranks in enumerate(kickers) for r in ranks]
        by_rank: dict[int, list[int]] = {}
        for p in rest:  # canonical order, so the best suit comes first
            by_rank.setdefault(self.rank[p], []).append(p)
        for picks in self.picks(slots, by_rank, 0, []):
            rows = [list(core) for core in cores]
            for (row, _), p in zip(slots, picks, strict=True):
                rows[row].append(p)
            found = self.found(rows[0], rows[1], rows[2])
            if found.rank[:3] == categories and found.rank[3] >= found.rank[4] >= found.rank[5]:
                return found
        return None

    def picks(self, slots: list[tuple[int, int]], by_rank: dict[int, list[int]], i: int,
              taken: list[int]) -> Iterator[list[int]]:
        """Yield the card choices for the kicker slots, best tie-break first."""
        if i == len(slots):
            yield list(taken)
            return
        tried: set[object] = set()
        for p in by_rank[slots[i][1]]:
            if p in taken or self.kind[p] in tried:
                continue
            tried.add(self.kind[p])
            taken.append(p)
            yield from self.picks(slots, by_rank, i + 1, taken)
            taken.pop()

    def found(self, back: Sequence[int], middle: Sequence[int],
              front: Sequence[int]) -> _Found:
        category = self.scale.category
        sb, sm, sf = self.score(back), self.score(middle), self.score(front)
        b, m, f = self.best_suits((back, middle, front))
        order = self.order
        return _Found((category[sb], category[sm], category[sf], sb, sm, sf,
                       tuple(-order[p] for p in b), tuple(-order[p] for p in m),
                       tuple(-order[p] for p in f)), b, m, f)

    def best_suits(self, rows: tuple[Sequence[int], ...]) -> list[tuple[int, ...]]:
        """Hand interchangeable copies of a rank to the back first, then middle, then front.

        Copies whose suit cannot make a flush change no strength, so the tie-break of §4
        decides alone which row gets which; cores and kickers were picked row by row.
        """
        kind, order = self.kind, self.order
        shared: dict[object, list[int]] = {}
        for row in rows:
            for p in row:
                if kind[p][1] is None:
                    shared.setdefault(kind[p], []).append(p)
        for copies in shared.values():
            copies.sort(key=order.__getitem__)
        result = []
        for row in rows:
            given = [shared[kind[p]].pop(0) if kind[p][1] is None else p for p in row]
            result.append(tuple(sorted(given, key=order.__getitem__)))
        return result

    # --- search ----------------------------------------------------------------------

    def search(self, every_triple: bool) -> dict[tuple[int, int, int], _Found]:
        """Return the best arrangement per category triple that can still matter.

        With ``every_triple`` false only the overall best survives, and bounds prune
        every core triple that cannot beat it.
        """
        best: dict[tuple[int, int, int], _Found] = {}
        top: _Found | None = None
        top_key: tuple[int, ...] = ()
        everything = list(range(13))
        groups = self.group(everything)
        for cb in range(_FIVE, _HIGH - 1, -1):
            backs = self.cores(groups, cb, 5)
            keyed = sorted(((self.core_key(c), c) for c in backs), reverse=True)
            for back_key, back in keyed:
                rest = [p for p in everything if p not in back]
                rest_groups = self.group(rest)
                # A weaker back core wins only with better middle or front categories.
                strict = top is not None and back_key < top_key
                for cm in range(cb, _HIGH - 1, -1):
                    if top is not None and not every_triple and (cm, 3) < top.rank[1:3]:
                        break
                    found_here = False
                    for middle in self.cores(rest_groups, cm, 5):
                        if cm == cb and self.core_key(middle) > back_key:
                            continue  # the middle would beat the back whatever the kickers
                        rest2 = [p for p in rest if p not in middle]
                        front_groups = self.group(rest2)
                        for cf in _FRONT_CATEGORIES:
                            if cf > cm:
                                continue
                            if top is not None and not every_triple:
                                floor = top.rank[1:3]
                                if (cm, cf) < floor or (strict and (cm, cf) == floor):
                                    break
                            done = False
                            for front in self.cores(front_groups, cf, 3):
                                if cf == cm and self.core_key(front) > self.core_key(middle):
                                    continue
                                rest3 = [p for p in rest2 if p not in front]
                                result = self.complete((back, middle, front), rest3,
                                                       (cb, cm, cf))
                                if result is None:
                                    continue
                                done = found_here = True
                                triple = result.rank[:3]
                                if triple not in best or result.rank > best[triple].rank:
                                    best[triple] = result
                                if top is None or result.rank > top.rank:
                                    top, top_key = result, back_key
                                    strict = back_key < top_key
                            if done and not every_triple:
                                break
                    if found_here and not every_triple:
                        break
            if top is not None and not every_triple:
                break
        if every_triple:
            return best
        return {} if top is None else {top.rank[:3]: top}

    def arrangement(self, found: _Found) -> Arrangement:
        return Arrangement(*(tuple(self.cards[p] for p in row)
                             for row in (found.front, found.middle, found.back)))


def _hand(cards: Sequence[Card], ace_low: AceLow, decks: int) -> _Hand:
    if len(cards) != 13:
        raise CardError(Problem("", f"a hand needs 13 cards, got {len(cards)}",
                                "wrong_hand_size"))
    copies = [0] * 52
    for card in cards:
        copies[card.order] += 1
    if max(copies) > decks:  # the quick count only finds out; check_copies says where
        check_copies([(f"[{i}]", c) for i, c in enumerate(cards)], decks)
    return _Hand(cards, AceLow(ace_low))


def keep_back(cards: Sequence[Card], ace_low: AceLow = AceLow.LOWEST, *,
              decks: int = 1) -> Arrangement:
    """Arrange 13 cards as 顧尾墩 (§4): best back, then middle, then front; never a foul."""
    hand = _hand(cards, ace_low, decks)
    (found,) = hand.search(every_triple=False).values()
    return hand.arrangement(found)


def suggest(cards: Sequence[Card], n: int, ace_low: AceLow = AceLow.LOWEST, *,
            decks: int = 1) -> tuple[Arrangement, ...]:
    """Return the 快速刁牌 list (§4): up to n valid arrangements, one per category triple."""
    if n < 1:
        raise CardError(Problem("n", f"the number of suggestions must be at least 1, got {n}",
                                "bad_suggestion_count"))
    hand = _hand(cards, ace_low, decks)
    ranked = sorted(hand.search(every_triple=True).values(), key=lambda f: f.rank,
                    reverse=True)
    return tuple(hand.arrangement(f) for f in ranked[:n])
