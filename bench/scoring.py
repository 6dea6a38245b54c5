"""Benchmark scoring in process: 十三支 swap3 rounds, and whole 搶莊21點 and 二八槓 rounds.

    .venv/bin/python bench/scoring.py [--rounds 10000] [--seed 1]

Deals are shuffled with a fixed seed before the clock starts. 十三支 hands are arranged
with keep_back first (keep_back never fouls, so every round is scored in full) and only
score_round is timed. The banker games have nothing to arrange, and their scoring is a
comparison with the banker, so play_banker_round is timed whole: table checks, hand
evaluation, comparisons and settlement to the ledger lines, five players (the default
max_players), proportional payout, pair fees. Prints rounds per second per game.
Target: at least 10,000 十三支 rounds per second on one core.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.domain.arrange import keep_back  # noqa: E402
from app.domain.banker_games import BankerSeat, play_banker_round  # noqa: E402
from app.domain.blackjack import hard_total  # noqa: E402
from app.domain.cards import DECK  # noqa: E402
from app.domain.games import BANKER_PRESETS  # noqa: E402
from app.domain.rulesets import PRESETS  # noqa: E402
from app.domain.scoring import PlayerHand, score_round  # noqa: E402
from app.domain.tiles import Tile  # noqa: E402

BANKER_PLAYERS = 5
STAKE = Decimal(10)
BALANCE = Decimal(1000)


def make_rounds(count: int, seed: int) -> list[list[PlayerHand]]:
    """Deal ``count`` rounds of four hands, each arranged with keep_back."""
    rng = random.Random(seed)
    rounds = []
    for _ in range(count):
        deck = list(DECK)
        rng.shuffle(deck)
        rounds.append([PlayerHand(f"p{i}", keep_back(deck[13 * i:13 * i + 13]))
                       for i in range(4)])
    return rounds


def make_banker_rounds(game: str, count: int, seed: int) -> list[list[BankerSeat]]:
    """Deal ``count`` banker rounds: 21點 hands drawing to 17 (at most five cards), or tiles."""
    rng = random.Random(seed)
    wall = [t for t in Tile for _ in range(4)]
    rounds = []
    for _ in range(count):
        hands: list[tuple[object, ...]] = []
        if game == "qiang21":
            deck = list(DECK)
            rng.shuffle(deck)
            for _ in range(BANKER_PLAYERS):
                hand = [deck.pop(), deck.pop()]
                while len(hand) < 5 and hard_total(hand) < 17:
                    hand.append(deck.pop())
                hands.append(tuple(hand))
        else:
            rng.shuffle(wall)
            hands = [tuple(wall[2 * i:2 * i + 2]) for i in range(BANKER_PLAYERS)]
        rounds.append([BankerSeat(f"p{i}", hands[i], banker=i == 0,  # type: ignore[arg-type]
                                  bet_multiple=None if i == 0 else rng.randint(1, 5))
                       for i in range(BANKER_PLAYERS)])
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    ruleset = PRESETS["swap3"]
    started = time.perf_counter()
    rounds = make_rounds(args.rounds, args.seed)
    prepared = time.perf_counter() - started
    start = time.perf_counter()
    specials = 0
    for players in rounds:
        result = score_round(players, ruleset)
        specials += sum(1 for p in result.players if p.special is not None)
    elapsed = time.perf_counter() - start
    print(f"arranged {args.rounds} rounds with keep_back in {prepared:.1f} s (not timed)")
    print(f"scored {args.rounds} swap3 rounds in {elapsed:.3f} s: "
          f"{args.rounds / elapsed:,.0f} rounds/s ({specials} special hands played)")
    for game, rules in BANKER_PRESETS.items():
        banker_rounds = make_banker_rounds(game, args.rounds, args.seed)
        balances = {f"p{i}": BALANCE for i in range(BANKER_PLAYERS)}
        start = time.perf_counter()
        fees = Decimal(0)
        for seats in banker_rounds:
            fees += play_banker_round(seats, rules, STAKE, balances).settlement.fees
        elapsed = time.perf_counter() - start
        print(f"played and settled {args.rounds} {game} rounds of {BANKER_PLAYERS} in "
              f"{elapsed:.3f} s: {args.rounds / elapsed:,.0f} rounds/s (house fees {fees})")


if __name__ == "__main__":
    main()
