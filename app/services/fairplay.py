"""Fair-play analytics: the job that prices each stored choice, and the figures read back.

The job (``run``) takes the settled 十三支 rounds of a period that no advisor version has
analysed yet, a batch at a time, and analyses each in a worker process
(``app.advisor.fairplay.analyse``: per ordered pair A→B, ``t`` what A's choice gave B
against the advisor's, ``d`` that less A's mean over the round's other opponents). One
process per core, each at a lower CPU priority (nice 10) than the service; each batch is
appended in one transaction, so a killed run loses at most the batch in flight and the
next run starts where it stopped (a round is analysed once per advisor version).

The figures (``pair_figures``, ``cases``): per ordered pair its hands, mean ``t`` and
``d`` with 95% intervals, and a permutation test: within each shared hand, which of A's
opponents is called B is exchangeable when A's mistakes land on everyone alike, so the
sum of A's ``t`` towards B is compared with its permutation distribution (its mean and
variance are exact; the tail is the normal one). The screen flags a pair whose ``z`` is
at least ``SCREEN_Z``; the case list keeps the pairs that pass Benjamini–Hochberg at
``FDR`` across every pair of the period, ordered by shrunken ``d`` (``d`` summed over
``n + SHRINK`` hands). Pairs that seldom scoop each other are tested against the scoop
rate of the period's other pairs (binomial tail, BH too); a player who plays the
advisor's choice in at least ``BOT_SHARE`` of ``BOT_HANDS`` or more hands is listed as a
possible bot.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any, Protocol

from app.advisor.fairplay import VERSION, analyse

__all__ = ["VERSION", "analyse_round", "cases", "cases_report", "pair_figures", "pairs_report",
           "run"]
from app.domain.games import AnyRules, rules_from_dict
from app.domain.rulesets import Ruleset

SCREEN_Z = 3.0
FDR = 0.01
MIN_HANDS = 20
SHRINK = 25
SCOOP_FDR = 0.01
MIN_SCOOP_HANDS = 10
BOT_HANDS = 50
BOT_SHARE = 0.9
EVIDENCE = 5
BATCH = 64
NICE = 10


class Store(Protocol):
    def count(self, start: datetime, end: datetime, operator_id: str | None) -> int: ...

    def pending(self, start: datetime, end: datetime, operator_id: str | None, version: str,
                limit: int, after: tuple[datetime, uuid.UUID] | None = None
                ) -> list[dict[str, Any]]: ...

    def add(self, rounds: Sequence[Mapping[str, Any]],
            pairs: Sequence[Mapping[str, Any]]) -> None: ...


# --------------------------------------------------------------------------- the job

def analyse_round(row: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Analyse one stored round: its ``fairplay_rounds`` row and its ``fairplay_pairs`` rows.

    A round of a banker game, or one that cannot be read again, is recorded with no pairs
    (and why, in its evidence), so it is not read again.
    """
    base = {"operator_id": row["operator_id"], "round_id": row["id"],
            "advisor_version": VERSION, "table_id": row["table_id"],
            "played_at": row["created_at"], "stake": row["stake"]}
    head = {**base, "ruleset_name": row["ruleset_name"], "pairs": 0}
    rules = _rules(json.dumps(row["ruleset"], sort_keys=True))
    if not isinstance(rules, Ruleset):
        return {**head, "evidence": {"skipped": "a banker game: no rows to choose"}}, []
    signals, evidence = analyse(row["result"], rules)
    pairs = [{**base, "player_a": s.player_a, "player_b": s.player_b, "seat_a": s.seat_a,
              "seat_b": s.seat_b, "t": s.t, "d": s.d, "scoop": s.scoop, "agreed": s.agreed,
              "moved": s.moved, "seed": s.seed} for s in signals]
    ev = {player: {"cards": list(e.cards), "played": e.played, "special": e.special,
                   "advised": e.advised, "advised_special": e.advised_special}
          for player, e in evidence.items()}
    return {**head, "pairs": len(pairs), "evidence": ev}, pairs


@lru_cache(maxsize=64)
def _rules(text: str) -> AnyRules:
    """The rules a stored round names, read once per process: a period's rounds share a
    few rulesets, and rules are immutable values."""
    return rules_from_dict(json.loads(text))


def _analyse_batch(rows: list[dict[str, Any]]
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rounds, pairs = [], []
    for row in rows:
        r, p = analyse_round(row)
        rounds.append(r)
        pairs += p
    return rounds, pairs


def _worker_start() -> None:
    """Each worker: below the service's CPU priority, one BLAS thread, tables loaded."""
    with contextlib.suppress(OSError):
        os.nice(NICE)
    from app.advisor.best import warm_up

    warm_up()


@dataclass
class RunReport:
    rounds: int = 0
    pairs: int = 0
    seconds: float = 0.0


def run(store: Store, start: datetime, end: datetime, operator_id: str | None,
        jobs: int | None = None, progress: Callable[[int], None] | None = None,
        batch: int = BATCH) -> RunReport:
    """Analyse every round of [start, end) not analysed yet; return what was appended."""
    import time

    began = time.monotonic()
    report = RunReport()
    workers = jobs or os.cpu_count() or 1
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    after: tuple[datetime, uuid.UUID] | None = None
    with ProcessPoolExecutor(workers, initializer=_worker_start) as pool:
        while True:
            rows = store.pending(start, end, operator_id, VERSION, batch * workers, after)
            if not rows:
                break
            after = (rows[-1]["created_at"], rows[-1]["id"])
            parts = [rows[k::workers] for k in range(workers)]
            for rounds, pairs in pool.map(_analyse_batch, [p for p in parts if p]):
                store.add(rounds, pairs)
                report.rounds += len(rounds)
                report.pairs += len(pairs)
                if progress is not None:
                    progress(len(rounds))
    report.seconds = time.monotonic() - began
    return report


# --------------------------------------------------------------------------- the figures

@dataclass
class PairFigures:
    player_a: str
    player_b: str
    hands: int
    mean_t: float
    t_half: float  # 95% half-width
    mean_d: float
    d_half: float
    z: float  # permutation z of A's t towards B
    p_value: float
    shrunk_d: float
    scoops: int  # hands where either scooped the other
    screened: bool
    q_value: float = 1.0
    rounds: list[Mapping[str, Any]] = field(default_factory=list, repr=False)
    # Per shared hand, the most A's choice gave any of A's other opponents (``t``); a hand
    # of two seats has none.
    others_max: dict[Any, int] = field(default_factory=dict, repr=False)


def _mean_half(xs: Sequence[float]) -> tuple[float, float]:
    n = len(xs)
    if n == 0:
        return 0.0, 0.0
    mean = sum(xs) / n
    if n < 2:
        return mean, 0.0
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, 1.96 * math.sqrt(var / n)


def _upper_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def bh(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), in the given order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    q = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        q[i] = running
    return q


def pair_figures(rows: Iterable[Mapping[str, Any]]) -> list[PairFigures]:
    """Every ordered pair's figures from ``fairplay_pairs`` rows of one period."""
    by_hand: dict[tuple[Any, str], dict[str, int]] = defaultdict(dict)
    by_pair: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        by_hand[(r["round_id"], r["player_a"])][r["player_b"]] = r["t"]
        by_pair[(r["player_a"], r["player_b"])].append(r)
    out = []
    for (a, b), hands in by_pair.items():
        ts = [float(h["t"]) for h in hands]
        ds = [float(h["d"]) for h in hands]
        s = e = v = 0.0
        for h in hands:
            row = list(by_hand[(h["round_id"], a)].values())
            k = len(row)
            mu = sum(row) / k
            s += h["t"]
            e += mu
            v += sum((x - mu) ** 2 for x in row) / k
        z = (s - e) / math.sqrt(v) if v > 0 else 0.0
        mean_t, t_half = _mean_half(ts)
        mean_d, d_half = _mean_half(ds)
        n = len(hands)
        others = {h["round_id"]: max(t for o, t in by_hand[(h["round_id"], a)].items()
                                     if o != b)
                  for h in hands if len(by_hand[(h["round_id"], a)]) > 1}
        out.append(PairFigures(a, b, n, mean_t, t_half, mean_d, d_half, z,
                               _upper_tail(z) if v > 0 else 1.0, sum(ds) / (n + SHRINK),
                               sum(1 for h in hands if h["scoop"] != 0),
                               z >= SCREEN_Z and n >= MIN_HANDS, rounds=list(hands),
                               others_max=others))
    q = bh([f.p_value if f.hands >= MIN_HANDS else 1.0 for f in out])
    for f, qv in zip(out, q, strict=True):
        f.q_value = qv
    return out


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(X ≤ k) for X ~ Binomial(n, p)."""
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if k >= n else 0.0
    total = 0.0
    for i in range(k + 1):
        total += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                          + i * math.log(p) + (n - i) * math.log1p(-p))
    return min(1.0, total)


@dataclass
class Case:
    kind: str  # dumping, no_scoop, bot
    player_a: str
    player_b: str | None
    hands: int
    p_value: float
    q_value: float
    figures: PairFigures | None
    mutual: bool = False
    scoop_rate: float | None = None
    expected_scoop_rate: float | None = None
    agreed_share: float | None = None


def cases(figures: Sequence[PairFigures]) -> list[Case]:
    """The case list: dumping pairs (BH over the permutation p-values), pairs that never
    scoop each other, players too close to the advisor."""
    by_key = {(f.player_a, f.player_b): f for f in figures}
    out: list[Case] = []
    for f in sorted(figures, key=lambda f: -f.shrunk_d):
        if f.q_value <= FDR and f.hands >= MIN_HANDS and f.mean_d > 0:
            back = by_key.get((f.player_b, f.player_a))
            mutual = back is not None and back.z >= 2.0 and back.mean_d > 0
            out.append(Case("dumping", f.player_a, f.player_b, f.hands, f.p_value, f.q_value,
                            f, mutual))
    # Scoops, per unordered pair, against the period's own rate.
    seen: dict[frozenset[str], tuple[int, int, str, str]] = {}
    for f in figures:
        key = frozenset((f.player_a, f.player_b))
        if key not in seen or seen[key][0] < f.hands:
            seen[key] = (f.hands, f.scoops, f.player_a, f.player_b)
    total_hands = sum(v[0] for v in seen.values())
    rate = sum(v[1] for v in seen.values()) / total_hands if total_hands else 0.0
    tested = [(v, _binom_cdf(v[1], v[0], rate)) for v in seen.values()
              if v[0] >= MIN_SCOOP_HANDS]
    qs = bh([p for _, p in tested])
    for ((n, k, a, b), p), q in sorted(zip(tested, qs, strict=True), key=lambda x: x[0][1]):
        if q <= SCOOP_FDR:
            out.append(Case("no_scoop", a, b, n, p, q, by_key.get((a, b)),
                            scoop_rate=k / n, expected_scoop_rate=rate))
    # Bots: how often a player plays exactly the advisor's choice.
    decided: dict[str, dict[Any, bool]] = defaultdict(dict)
    for f in figures:
        for r in f.rounds:
            decided[f.player_a][r["round_id"]] = bool(r["agreed"])
    for player, hands in decided.items():
        share = sum(hands.values()) / len(hands)
        if len(hands) >= BOT_HANDS and share >= BOT_SHARE:
            out.append(Case("bot", player, None, len(hands), 0.0, 0.0, None,
                            agreed_share=share))
    return out


def evidence_rounds(f: PairFigures, top: int = EVIDENCE) -> list[Mapping[str, Any]]:
    """The pair's hands that show a gift to B: first the hands where A's choice gave B
    points and gave none of A's other opponents any (a gift to B alone), most to B first;
    then the rest by ``d`` (what B got beyond the others' mean), then ``t``.

    An honest mistake costs A against everyone, so its ``t`` towards B is large too and its
    ``d`` now and then; a hand bent towards B while A plays normally against the others is
    what a dumper plays. On the simulated tables (bench/fairplay.py) ordering by ``t``
    alone put a third of the planted hands in a 0.5-point dumper's top five, by ``d``
    about 55%, this way nearly 90%.
    """
    def key(r: Mapping[str, Any]) -> tuple[int, float, float, str]:
        alone = r["t"] > 0 and f.others_max.get(r["round_id"], 0) <= 0
        return (0 if alone else 1, -r["t"] if alone else -float(r["d"]), -r["t"],
                str(r["round_id"]))

    return sorted(f.rounds, key=key)[:top]


def evidence_hands(f: PairFigures, evidence: Mapping[Any, Mapping[str, Any]],
                   top: int = EVIDENCE) -> list[dict[str, Any]]:
    """The pair's evidence hands (``evidence_rounds``), with what A held and played."""
    out = []
    for r in evidence_rounds(f, top):
        ev = (evidence.get(r["round_id"]) or {}).get(f.player_a) or {}
        out.append({"round_id": str(r["round_id"]), "table_id": r["table_id"],
                    "played_at": r["played_at"], "t": r["t"], "d": round(float(r["d"]), 4),
                    "cards": ev.get("cards"), "played": ev.get("played"),
                    "special": ev.get("special"), "advised": ev.get("advised"),
                    "advised_special": ev.get("advised_special"),
                    "points_moved": -r["moved"], "seed": r["seed"]})
    return out


def moved(f: PairFigures) -> tuple[list[dict[str, Any]], Decimal]:
    """Hand by hand, what A's choice moved to B beyond the advisor's (t > 0, × stake): what
    an operator refunds, and its total."""
    out = []
    total = Decimal(0)
    for r in sorted(f.rounds, key=lambda r: (r["played_at"], str(r["round_id"]))):
        if r["t"] <= 0:
            continue
        amount = Decimal(r["t"]) * Decimal(r["stake"])
        total += amount
        out.append({"round_id": str(r["round_id"]), "played_at": r["played_at"],
                    "points": r["t"], "amount": amount})
    return out, total


# --------------------------------------------------------------------------- the answers

MAX_ROWS = 200_000  # pair figures one answer reads (a request stays bounded in time)


class Reader(Protocol):
    def pairs(self, operator_id: str, version: str, start: datetime, end: datetime,
              table_id: str | None, limit: int) -> list[dict[str, Any]]: ...

    def evidence(self, operator_id: str, version: str, round_ids: Iterable[uuid.UUID]
                 ) -> dict[uuid.UUID, dict[str, Any]]: ...


def _r(x: float) -> float:
    return round(x, 4)


def _interval(mean: float, half: float) -> dict[str, float]:
    return {"mean": _r(mean), "low": _r(mean - half), "high": _r(mean + half)}


def _pair_json(f: PairFigures) -> dict[str, Any]:
    return {"from": f.player_a, "to": f.player_b, "hands": f.hands,
            "t": _interval(f.mean_t, f.t_half), "d": _interval(f.mean_d, f.d_half),
            "shrunk_d": _r(f.shrunk_d), "z": _r(f.z), "p_value": f.p_value,
            "q_value": f.q_value, "screened": f.screened, "scoops": f.scoops}


def _read(reader: Reader, operator_id: str, start: datetime, end: datetime,
          table_id: str | None) -> tuple[list[PairFigures], bool]:
    rows = reader.pairs(operator_id, VERSION, start, end, table_id, MAX_ROWS + 1)
    truncated = len(rows) > MAX_ROWS
    return pair_figures(rows[:MAX_ROWS]), truncated


def _when(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _meta(start: datetime, end: datetime, table_id: str | None, truncated: bool
          ) -> dict[str, Any]:
    return {"advisor_version": VERSION, "from": _when(start), "to": _when(end),
            "table_id": table_id, "truncated": truncated}


def pairs_report(reader: Reader, operator_id: str, start: datetime, end: datetime,
                 table_id: str | None, min_hands: int, limit: int) -> dict[str, Any]:
    """``GET /v1/fairplay/pairs``: every ordered pair with at least ``min_hands`` shared
    hands, most suspicious (shrunken d) first."""
    figures, truncated = _read(reader, operator_id, start, end, table_id)
    listed = sorted((f for f in figures if f.hands >= min_hands),
                    key=lambda f: (-f.shrunk_d, f.player_a, f.player_b))
    return {**_meta(start, end, table_id, truncated), "count": len(listed),
            "pairs": [_pair_json(f) for f in listed[:limit]]}


def cases_report(reader: Reader, operator_id: str, start: datetime, end: datetime,
                 table_id: str | None) -> dict[str, Any]:
    """``GET /v1/fairplay/cases``: the case list with each case's evidence and refund."""
    figures, truncated = _read(reader, operator_id, start, end, table_id)
    found = cases(figures)
    ids = {r["round_id"] for c in found if c.figures is not None
           for r in evidence_rounds(c.figures)}
    evidence = reader.evidence(operator_id, VERSION, ids)
    out = []
    for c in found:
        item: dict[str, Any] = {"kind": c.kind, "from": c.player_a, "to": c.player_b,
                                "hands": c.hands, "p_value": c.p_value, "q_value": c.q_value}
        if c.figures is not None:
            item |= {"t": _interval(c.figures.mean_t, c.figures.t_half),
                     "d": _interval(c.figures.mean_d, c.figures.d_half),
                     "shrunk_d": _r(c.figures.shrunk_d)}
        if c.kind == "dumping" and c.figures is not None:
            hands, total = moved(c.figures)
            item |= {"mutual": c.mutual, "evidence": [
                        {**e, "played_at": _when(e["played_at"])}
                        for e in evidence_hands(c.figures, evidence)],
                     "moved": [{**h, "played_at": _when(h["played_at"]),
                                "amount": str(h["amount"])} for h in hands],
                     "refund": str(total)}
        if c.kind == "no_scoop":
            item |= {"scoop_rate": _r(c.scoop_rate or 0.0),
                     "expected_scoop_rate": _r(c.expected_scoop_rate or 0.0)}
        if c.kind == "bot":
            item |= {"agreed_share": _r(c.agreed_share or 0.0)}
        out.append(item)
    return {**_meta(start, end, table_id, truncated), "count": len(out), "cases": out}
