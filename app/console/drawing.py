"""What the console's pages draw: cards and tiles, money's sign, a player's balance chart."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

SUITS = {"s": ("♠", "black"), "h": ("♥", "red"), "d": ("♦", "red"), "c": ("♣", "black")}
TILES = {"wd": ("白板", "white")}


def card_parts(text: str) -> dict[str, str]:
    """Return how to draw a card (``Ts``) or tile (``5p``, ``wd``): its face, suit and colour."""
    if text in TILES:
        face, colour = TILES[text]
        return {"rank": face, "suit": "", "colour": colour, "label": "white dragon tile"}
    if len(text) == 2 and text[1] == "p":
        return {"rank": text[0], "suit": "筒", "colour": "tile", "label": f"{text[0]} dots tile"}
    rank, suit = text[:-1], text[-1:]
    symbol, colour = SUITS.get(suit, ("?", "black"))
    shown = "10" if rank == "T" else rank
    names = {"s": "spades", "h": "hearts", "d": "diamonds", "c": "clubs"}
    return {"rank": shown, "suit": symbol, "colour": colour,
            "label": f"{shown} of {names.get(suit, suit)}"}


def fmt(value: Any) -> str:
    return "—" if value is None else str(value)


def money_class(text: Any) -> str:
    if text is None:
        return ""
    try:
        value = Decimal(str(text))
    except ArithmeticError:
        return ""
    return "neg" if value < 0 else "pos" if value > 0 else ""


CHART_W, CHART_H, PAD = 640, 220, 40


def balance_chart(lines: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Return an SVG polyline per table of the player's running total after each line."""
    series: dict[str, list[tuple[int, Decimal]]] = {}
    for i, line in enumerate(lines):
        series.setdefault(line["table_id"], []).append((i, Decimal(line["running_total"])))
    if not series:
        return None
    values = [v for points in series.values() for _, v in points] + [Decimal(0)]
    low, high = min(values), max(values)
    span = high - low or Decimal(1)
    count = max(len(lines) - 1, 1)

    def x(i: int) -> float:
        return PAD + (CHART_W - 2 * PAD) * i / count

    def y(v: Decimal) -> float:
        return PAD / 2 + float((high - v) / span) * (CHART_H - PAD)

    colours = ("#1f5fbf", "#b8520a", "#2e7d32", "#8e24aa", "#c62828", "#00838f")
    return {
        "width": CHART_W, "height": CHART_H, "zero": round(y(Decimal(0)), 1),
        "low": str(low), "high": str(high), "left": PAD, "right": CHART_W - PAD,
        "top": round(y(high), 1), "bottom": round(y(low), 1),
        "series": [{"table_id": table, "colour": colours[n % len(colours)],
                    "points": " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in points),
                    "last": str(points[-1][1])}
                   for n, (table, points) in enumerate(series.items())],
    }
