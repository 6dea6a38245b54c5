"""二八槓 tiles and hands (games.md §3): 1筒 to 9筒 and 白板, four of each; two per player.

Values, highest first: 白板 pair (天王), 9筒 pair … 1筒 pair, then points 9½ … 1, 鱉十 (0).
Points are the sum's last digit with 白板 counting one half, so they are kept in halves
(0 to 19). Where 2筒 + 8筒 stands is the ruleset's ``two_eight``.
"""

from __future__ import annotations

import reprlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum

from app.domain.errors import CardError, Problem

TILES_PER_HAND = 2
COPIES = 4


class Tile(IntEnum):
    """A tile; its value is its worth in halves of a point (白板 is half a point)."""

    WHITE = 1  # 白板
    P1 = 2
    P2 = 4
    P3 = 6
    P4 = 8
    P5 = 10
    P6 = 12
    P7 = 14
    P8 = 16
    P9 = 18

    def __str__(self) -> str:
        return TILE_TEXT[self]


# Each tile's text, written once: "wd", "1p" … "9p".
TILE_TEXT: dict[Tile, str] = {t: "wd" if t is Tile.WHITE else f"{t.value // 2}p" for t in Tile}


_CHINESE = "一二三四五六七八九"
_BY_TEXT: dict[str, Tile] = {"wd": Tile.WHITE, "白板": Tile.WHITE}
for _n in range(1, 10):
    _BY_TEXT[f"{_n}p"] = Tile(2 * _n)
    _BY_TEXT[f"{_CHINESE[_n - 1]}筒"] = Tile(2 * _n)
    _BY_TEXT[f"{_n}筒"] = Tile(2 * _n)  # as games.md writes them: 3筒, 9筒


class TwoEight(StrEnum):
    """Where 2筒 + 8筒 (二八槓) stands: nowhere (鱉十), above every point, above every pair."""

    NONE = "none"
    ABOVE_POINTS = "above_points"
    ABOVE_PAIRS = "above_pairs"


class CategoryTiles(StrEnum):
    WHITE_PAIR = "white_pair"  # 天王
    PAIR = "pair"
    TWO_EIGHT = "two_eight"
    POINTS = "points"
    BIE_SHI = "bie_shi"  # 鱉十, 0 points


@dataclass(frozen=True, slots=True)
class TileHand:
    """An evaluated hand: its tiles (higher first), category, points in halves, strength."""

    tiles: tuple[Tile, Tile]
    category: CategoryTiles
    halves: int
    strength: tuple[int, int]

    @property
    def value_text(self) -> str:
        """Say the value as a player would: ``pair of 4``, ``9½``, ``鱉十``."""
        if self.category is CategoryTiles.WHITE_PAIR:
            return "white pair (天王)"
        if self.category is CategoryTiles.PAIR:
            return f"pair of {self.tiles[0].value // 2}"
        if self.category is CategoryTiles.TWO_EIGHT:
            return "two-eight (二八槓)"
        if self.category is CategoryTiles.BIE_SHI:
            return "0 (鱉十)"
        whole, half = divmod(self.halves, 2)
        return f"{whole}½" if half else f"{whole}"


def parse_tile(text: object, path: str = "") -> Tile:
    """Parse ``1p``…``9p``, ``wd``, or ``一筒``…``九筒`` (also ``1筒``…``9筒``), ``白板``."""
    if not isinstance(text, str):
        raise CardError(Problem(path, f"a tile is a string such as '5p', not "
                                f"{reprlib.repr(text)}", "not_a_tile"))
    tile = _BY_TEXT.get(text) or _BY_TEXT.get(text.strip().lower())
    if tile is None:
        raise CardError(Problem(path, f"unknown tile {reprlib.repr(text)}; tiles are 1p-9p "
                                "and wd (or 一筒-九筒 and 白板)", "unknown_tile"))
    return tile


def parse_tiles(texts: Sequence[object], path: str = "tiles") -> tuple[Tile, ...]:
    """Parse one hand's tiles, reporting every unknown tile and a wrong count."""
    problems: list[Problem] = []
    tiles: list[Tile] = []
    for i, text in enumerate(texts):
        try:
            tiles.append(parse_tile(text, f"{path}[{i}]"))
        except CardError as err:
            problems.extend(err.problems)
    if len(texts) != TILES_PER_HAND:
        problems.append(Problem(path, f"a hand holds {TILES_PER_HAND} tiles, not "
                                f"{len(texts)}", "wrong_hand_size"))
    if problems:
        raise CardError(problems)
    return tuple(tiles)


def check_tile_copies(located: Sequence[tuple[str, Tile]]) -> None:
    """Refuse a tile seen more than four times at the table, naming each extra copy."""
    seen: Counter[Tile] = Counter()
    problems: list[Problem] = []
    for path, tile in located:
        seen[tile] += 1
        if seen[tile] > COPIES:
            problems.append(Problem(path, f"tile {tile} appears more than {COPIES} times at "
                                    "the table", "too_many_copies"))
    if problems:
        raise CardError(problems)


# Strength tiers: points (鱉十 is 0 points), two-eight above points, pairs, two-eight on top.
_POINTS, _TWO_EIGHT_LOW, _PAIRS, _TWO_EIGHT_TOP = 0, 1, 2, 3
_TWO_EIGHT_TIER = {TwoEight.ABOVE_POINTS: _TWO_EIGHT_LOW, TwoEight.ABOVE_PAIRS: _TWO_EIGHT_TOP}


def evaluate_tiles(tiles: Sequence[Tile], two_eight: TwoEight) -> TileHand:
    """Return the hand's category, points and one comparable strength."""
    high, low = sorted(tiles, reverse=True)
    pair = (high, low)
    halves = (high + low) % 20
    if high == low:
        # A white pair is the top pair; pips pairs rank by their number.
        rank = 10 if high is Tile.WHITE else high.value // 2
        category = CategoryTiles.WHITE_PAIR if high is Tile.WHITE else CategoryTiles.PAIR
        return TileHand(pair, category, halves, (_PAIRS, rank))
    if (high, low) == (Tile.P8, Tile.P2) and two_eight is not TwoEight.NONE:
        return TileHand(pair, CategoryTiles.TWO_EIGHT, halves, (_TWO_EIGHT_TIER[two_eight], 0))
    category = CategoryTiles.BIE_SHI if halves == 0 else CategoryTiles.POINTS
    return TileHand(pair, category, halves, (_POINTS, halves))
