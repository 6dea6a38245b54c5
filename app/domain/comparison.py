"""One pair compared: rows, special hands and dragons; then the table's home run (§3, §5).

A comparison says who won which row and who scooped whom; it scores nothing itself, except
the fixed points of special hands and dragons, which no multiplier touches.
"""

from __future__ import annotations

from app.domain.errors import Problem, RoundError
from app.domain.hands import top_card_strength
from app.domain.pair_points import HomeRun, Item, Pair, score_pair
from app.domain.rulesets import (
    BothSpecial,
    Compare,
    DragonOthers,
    EffectKind,
    Ruleset,
    ScoopRequires,
    TieRule,
)
from app.domain.seats import Seat


def compare(a: Seat, b: Seat, r: Ruleset, banker: int | None) -> Pair:
    if a.dragon or b.dragon:
        other = b if a.dragon else a
        if other.dragon or other.special is None or _scooped_by_dragon(other, a, b, r):
            return _dragon_pair(a, b, r)
        # §5: the dragon policy settles only the players without a special hand; between
        # a dragon and another special hand the larger value wins, as special hands do.
        return _special_pair(a, b, r, banker)
    if a.special is not None or b.special is not None:
        return _special_pair(a, b, r, banker)
    if a.foul or b.foul:
        if a.foul and b.foul:
            return Pair(a.index, b.index, "rows", (0, 0, 0))
        res = (-1, -1, -1) if a.foul else (1, 1, 1)
        scooper = (b.index if a.foul else a.index) if r.foul_counts_as_scoop else None
        return Pair(a.index, b.index, "rows", res, scooper=scooper)
    side = 0  # who takes a row the rule gives to the banker
    if banker is not None:
        side = 1 if a.index == banker else -1 if b.index == banker else 0
    sa, sb = a.strengths, b.strengths
    if sa is None or sb is None:  # every row-playing seat is evaluated; narrows the type
        raise RoundError(Problem("players", "a hand was not evaluated", "internal"))
    top_card = r.compare is Compare.TOP_CARD
    if not top_card and r.tie_rule is TieRule.PUSH:
        fa, ma, ba = sa
        fb, mb, bb = sb
        res = ((fa > fb) - (fa < fb), (ma > mb) - (ma < mb), (ba > bb) - (ba < bb))
    else:
        res_list = []
        for x, y in zip(sa, sb, strict=True):
            if top_card:  # 食夾棍: the category, then only the highest card (002)
                x, y = top_card_strength(x), top_card_strength(y)
            # A row the rule gives to the banker: tie_rule banker_wins, or top_card ties.
            res_list.append(1 if x > y else -1 if x < y else side)
        res = (res_list[0], res_list[1], res_list[2])
    return Pair(a.index, b.index, "rows", res, scooper=_scooper(a.index, b.index, res, r))


def _scooper(a: int, b: int, res: tuple[int, int, int], r: Ruleset) -> int | None:
    if r.scoop_requires is ScoopRequires.ALL_WINS:
        if res == (1, 1, 1):
            return a
        if res == (-1, -1, -1):
            return b
        return None
    if -1 not in res and 1 in res:
        return a
    if 1 not in res and -1 in res:
        return b
    return None


def _special_pair(a: Seat, b: Seat, r: Ruleset, banker: int | None) -> Pair:
    """Instant mode: a special hand takes no part in row comparison (§5)."""
    va, vb = _worth(a, r), _worth(b, r)
    points = 0
    if a.special is not None and b.special is not None:
        if r.both_special is BothSpecial.BANKER_PAYS and banker in (a.index, b.index):
            # 002: 倘若莊家及閒家同時報到，由莊家賠閒家 - the player's value.
            points = -vb if a.index == banker else va
        elif va != vb:
            points = va if va > vb else -vb
    else:
        points = va or -vb
    items: tuple[Item, ...] = ()
    if points:
        winner = a if points > 0 else b
        items = (Item(f"special.{winner.special}", points),)
    return Pair(a.index, b.index, "special", None, fixed=items)


def _scooped_by_dragon(other: Seat, a: Seat, b: Seat, r: Ruleset) -> bool:
    """Say whether a dragon that scoops takes its run from ``other``'s special hand too.

    rules.md du4 (002 a): a dragon counted as a scoop stands over "never scooped": a
    special hand valued at most what a lone dragon takes from one player (du4: scoop 6,
    home run 6 and its 13, so 25) is scooped with the rest; only one valued above it
    beats the dragon, by §5's larger-value rule.
    """
    if not r.dragon.counts_as_scoop or other.special is None:
        return False
    holder, plain = (a, b) if a.dragon else (b, a)
    lone = _dragon_pair(holder, plain, r)
    if r.dragon.home_run and r.home_run.kind is not EffectKind.NONE:
        lone.home_run_by = holder.index
    return _worth(other, r) <= score_pair(holder, plain, lone, r)[1]


def _worth(s: Seat, r: Ruleset) -> int:
    """The points a seat's special hand is worth against another special hand (§5)."""
    return 0 if s.special is None else r.hand_value(s.special)


def _dragon_pair(a: Seat, b: Seat, r: Ruleset) -> Pair:
    if a.dragon and b.dragon:
        return Pair(a.index, b.index, "dragon", None)
    sign = 1 if a.dragon else -1
    holder = a if a.dragon else b
    items = (Item(f"dragon.{holder.special}", sign * r.dragon.points),) if r.dragon.points else ()
    if r.dragon.counts_as_scoop:
        virtual = (sign, sign, sign)
        return Pair(a.index, b.index, "dragon", None, virtual, holder.index, items)
    return Pair(a.index, b.index, "dragon", None, fixed=items)


def find_home_run(seats: list[Seat], pairs: list[Pair], r: Ruleset) -> HomeRun | None:
    """Find the player who scoops every other player (at least two), or the dragon's run."""
    dragons = [s for s in seats if s.dragon]
    if r.dragon.enabled and dragons:
        return _dragon_table(seats, dragons, pairs, r)
    if r.home_run.kind is EffectKind.NONE or len(seats) < 3:
        return None
    scooped: dict[int, list[int]] = {}
    met: dict[int, int] = {}
    for p in pairs:
        if p.kind != "rows":
            continue
        met[p.a] = met.get(p.a, 0) + 1
        met[p.b] = met.get(p.b, 0) + 1
        if p.scooper is not None:
            loser = p.b if p.scooper == p.a else p.a
            scooped.setdefault(p.scooper, []).append(loser)
    for player, losers in scooped.items():
        if len(losers) == len(seats) - 1 and met.get(player) == len(losers):
            return _mark(HomeRun(player, sorted(losers)), pairs)
    return None


def _dragon_table(seats: list[Seat], dragons: list[Seat], pairs: list[Pair],
                  r: Ruleset) -> HomeRun | None:
    """Apply the dragon policy to the whole table: who is still compared, who runs home."""
    if r.dragon.void_from is not None and len(dragons) >= r.dragon.void_from:
        for p in pairs:
            p.kind, p.rows, p.virtual, p.scooper, p.fixed = "not_compared", None, None, None, ()
        return None
    others = [s.index for s in seats if not s.dragon]
    hr = None
    best = max(s.dragon for s in dragons)
    leaders = [s for s in dragons if s.dragon == best]
    # A player playing a special hand is never scooped (§5), so with one among the others
    # the dragon makes no home run, unless the dragon scooped that hand too (du4).
    scooped = {p.b if p.a == leaders[0].index else p.a for p in pairs
               if p.scooper == leaders[0].index}
    # The home run's "at least two" (§3.5) counts every player the lone best dragon beats,
    # the lesser dragons too, so one flush dragon over two plain ones runs home against a
    # single player without a dragon (rules.md §6 du4).
    if (r.dragon.home_run and r.home_run.kind is not EffectKind.NONE and len(leaders) == 1
            and others and len(seats) - 1 >= 2
            and all(seats[i].special is None or i in scooped for i in others)):
        hr = _mark(HomeRun(leaders[0].index, others), pairs)
    compare_others = (r.dragon.others is DragonOthers.ALWAYS
                      or (r.dragon.others is DragonOthers.WITHOUT_HOME_RUN and hr is None))
    if not compare_others:
        for p in pairs:
            if not seats[p.a].dragon and not seats[p.b].dragon:
                p.kind, p.rows, p.virtual, p.scooper, p.fixed = "not_compared", None, None, None, ()
    return hr


def _mark(hr: HomeRun, pairs: list[Pair]) -> HomeRun:
    losers = set(hr.losers)
    for p in pairs:
        if (p.a == hr.player and p.b in losers) or (p.b == hr.player and p.a in losers):
            p.home_run_by = hr.player
    return hr
