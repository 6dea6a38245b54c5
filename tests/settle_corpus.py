"""A corpus of settle requests and the exact bytes of their answers, to hold speed work to
today's answers (tests/data/settle_corpus.json, tests/unit/test_settle_corpus.py).

Each request is settled through the service (``app.api.rounds.round_request``, then
``rounds.settle``) on a unit of work in memory whose clock starts at a fixed moment, with
a fixed Ed25519 key, so a round's id, times, content hash and receipt are the same on
every run. What is compared is the answer as ``POST /v1/rounds`` writes it (the bytes of
``json_response``) and the rows handed to the append: the round's columns (the request
and result as their canonical text), its seats and its ledger lines, each value with its
Python type; and the round read back as ``GET /v1/rounds/{id}`` writes it, before and after
it is reversed, with its reversal read too. The requests are dealt here from fixed seeds
and stored with their digests, so the corpus does not move if the dealing code does.

    .venv/bin/python -m tests.settle_corpus     # write the corpus again (from today's code)
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest.mock import patch

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flask import Flask

from app.api.responses import json_response, json_text_response
from app.api.rounds import round_request
from app.domain.arrange import keep_back
from app.domain.cards import DECK, format_cards, parse_cards
from app.domain.rulesets import PRESETS
from app.services import round_reads, rounds
from app.services.receipts import ReceiptCache
from app.services.signing import Signer
from tests.fakes import FakeUnitOfWorks
from tests.worked_examples import CASES
from tests.worked_examples import round_request as worked_request

CORPUS = Path(__file__).resolve().parent / "data" / "settle_corpus.json"
OPERATOR = "corpus-op"
# A fixed key: Ed25519 is deterministic, so the receipts are the same bytes on every run.
SIGNER = Signer(Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"settle corpus").digest()))
# As app.create_app sets its JSON provider: keys in the order the service builds them.
_APP = Flask(__name__)
_APP.json.sort_keys = False  # type: ignore[attr-defined]

_RANKS = "23456789TJQKA"
_SUITS = "shdc"


def _round_id(n: int) -> str:
    return str(uuid.UUID(int=0xC0FFEE << 96 | n))


def _deal(rng: random.Random, decks: int) -> list[str]:
    cards = [str(c) for c in DECK] * decks
    rng.shuffle(cards)
    return cards


def _special_hand(rng: random.Random, kind: str) -> list[str]:
    """Thirteen cards that hold ``kind`` (one deck's worth, no card twice)."""
    if kind == "dragon":
        suits = [rng.choice(_SUITS) for _ in _RANKS]
        return [r + s for r, s in zip(_RANKS, suits, strict=True)]
    if kind == "flush_dragon":
        suit = rng.choice(_SUITS)
        return [r + suit for r in _RANKS]
    if kind == "six_pairs":
        ranks = rng.sample(_RANKS, 7)
        cards = [r + s for r in ranks[:6] for s in rng.sample(_SUITS, 2)]
        return [*cards, ranks[6] + rng.choice(_SUITS)]
    # three flushes: 3 + 5 + 5 of three suits
    suits = rng.sample(_SUITS, 3)
    return ([r + suits[0] for r in rng.sample(_RANKS, 3)]
            + [r + suits[1] for r in rng.sample(_RANKS, 5)]
            + [r + suits[2] for r in rng.sample(_RANKS, 5)])


def _thirteen_player(rng: random.Random, preset: str, cards: list[str], seat: int,
                     rules: Any) -> dict[str, Any]:
    player: dict[str, Any] = {"player_id": f"p{rng.randrange(1000)}-{seat}",
                              "balance": str(rng.choice((rng.randrange(100, 2000),
                                                         rng.randrange(10_000, 10_000_000))))}
    style = rng.random()
    if style < 0.2:
        player.update(cards=cards, auto="keep_back")
    elif style < 0.3:
        # An arrangement as dealt: often a foul.
        player.update(front=cards[:3], middle=cards[3:8], back=cards[8:])
    else:
        rows = keep_back(parse_cards(cards), rules.ace_low_straight,
                         decks=rules.decks)
        player.update(front=format_cards(rows.front), middle=format_cards(rows.middle),
                      back=format_cards(rows.back))
    if preset == "monster4" and rng.random() < 0.6:
        player["row_bet"] = rng.choice(("front", "middle", "back"))
    return player


def thirteen_request(rng: random.Random, preset: str, n: int) -> dict[str, Any]:
    rules = PRESETS[preset]
    count = rng.randint(rules.min_players, rules.max_players)
    precise = rules.money.precision >= 2
    deck = _deal(rng, rules.decks)
    hands = [deck[13 * seat:13 * seat + 13] for seat in range(count)]
    if rng.random() < 0.15 and rules.decks == 1:
        special = _special_hand(rng, rng.choice(("dragon", "flush_dragon", "six_pairs",
                                                 "three_flushes")))
        others = [c for c in deck if c not in special]
        hands = [special] + [others[13 * seat:13 * seat + 13] for seat in range(count - 1)]
    players = [_thirteen_player(rng, preset, cards, seat, rules)
               for seat, cards in enumerate(hands)]
    if rules.topology.value == "banker":
        players[0]["banker"] = True
    body: dict[str, Any] = {"ruleset": preset, "table_id": f"corpus-t{n}",
                            "stake": rng.choice(("1", "10", "25", "100")
                                                + (("0.5", "3.75") if precise else ())),
                            "players": players, "round_id": _round_id(n)}
    if rng.random() < 0.2:
        body["limits_enforced"] = True
    if rng.random() < 0.15:
        overrides = rng.choice(({"fee_rate": "0.03"}, {"ace_low_straight": "second"},
                                {"ace_low_straight": "none"}, {"precision": 0},
                                {"payout": "capped"}))
        body["ruleset"] = {"preset": preset, "overrides": overrides}
    return body


def banker_request(rng: random.Random, preset: str, n: int) -> dict[str, Any]:
    from app.domain.blackjack import hard_total
    from app.domain.tiles import Tile

    deck = _deal(rng, 1)
    wall = [str(t) for t in Tile for _ in range(4)]
    rng.shuffle(wall)
    players: list[dict[str, Any]] = []
    grabs = rng.random() < 0.3
    for seat in range(rng.randint(2, 5)):
        player: dict[str, Any] = {"player_id": f"b{rng.randrange(1000)}-{seat}",
                                  "balance": str(rng.choice((rng.randrange(50, 500),
                                                             rng.randrange(10_000, 1_000_000))))}
        if seat == 0:
            player["banker"] = True
            if grabs:
                player["grab_multiple"] = rng.randint(1, 3)
        else:
            player["bet_multiple"] = rng.randint(1, 5)
        if preset == "qiang21":
            hand = [deck.pop(), deck.pop()]
            stop = rng.choice((15, 17, 19))
            while len(hand) < 5 and hard_total(parse_cards(hand)) < stop:
                hand.append(deck.pop())
            player["cards"] = hand
            if seat and rng.random() < 0.05:
                player["timed_out"] = True
        else:
            player["tiles"] = [wall.pop(), wall.pop()]
        players.append(player)
    body: dict[str, Any] = {"ruleset": preset, "table_id": f"corpus-t{n}",
                            "stake": rng.choice(("1", "10", "50", "2.5")), "players": players,
                            "round_id": _round_id(n)}
    overrides: dict[str, Any] = {}
    if grabs:
        overrides["grab_multiples"] = [1, 2, 3]
    if rng.random() < 0.2:
        overrides["fee_rate"] = rng.choice(("0.05", "0.333"))
    if overrides:
        body["ruleset"] = {"preset": preset, "overrides": overrides}
    return body


def house_request(rng: random.Random, preset: str, n: int) -> dict[str, Any]:
    """A round with the house seat (matches.md §2): 13 loose cards, or rows, no balance."""
    body = thirteen_request(rng, preset, n)
    players = body["players"][:rng.randint(1, 2)]
    taken = {c for p in players for row in ("front", "middle", "back", "cards")
             for c in p.get(row, ())}
    cards = [c for c in _deal(rng, 1) if c not in taken][:13]
    house: dict[str, Any] = {"player_id": "H", "house": True}
    if rng.random() < 0.5:
        house["cards"] = cards
    else:
        rows = keep_back(parse_cards(cards))
        house.update(front=format_cards(rows.front), middle=format_cards(rows.middle),
                     back=format_cards(rows.back))
    for player in players:
        player.pop("banker", None)
    body["players"] = [*players, house]
    body["ruleset"] = preset
    return body


def dealt_request(rng: random.Random, preset: str, n: int) -> dict[str, Any]:
    """A round with its deal record: the hands as dealt, played as they were (no exchange)."""
    rules = PRESETS[preset]
    deck = _deal(rng, rules.decks)
    count = rules.max_players
    hands = {f"d{seat}": deck[13 * seat:13 * seat + 13] for seat in range(count)}
    body: dict[str, Any] = {
        "ruleset": preset, "table_id": f"corpus-t{n}", "stake": "10", "round_id": _round_id(n),
        "players": [{"player_id": p, "balance": "100000", "cards": list(reversed(cards)),
                     "auto": "keep_back"} for p, cards in hands.items()],
        "deal": {"hands": hands}}
    pile = deck[13 * count:]
    if pile:
        body["deal"]["pile"] = pile
    return body


def requests() -> Iterator[tuple[str, dict[str, Any]]]:
    """Deal the corpus's requests (with fixed seeds) and add the spec's worked examples."""
    rng = random.Random(20261204)
    n = 0
    for preset in PRESETS:
        for _ in range(36):
            n += 1
            yield f"{preset}-{n}", thirteen_request(rng, preset, n)
    for preset in ("qiang21", "erbagang"):
        for _ in range(40):
            n += 1
            yield f"{preset}-{n}", banker_request(rng, preset, n)
    for _ in range(16):  # bonus3 alone has the house seat
        n += 1
        yield f"house-bonus3-{n}", house_request(rng, "bonus3", n)
    for preset in ("swap3", "classic4", "bonus3"):
        for _ in range(6):
            n += 1
            yield f"deal-{preset}-{n}", dealt_request(rng, preset, n)
    for name, case in CASES.items():
        n += 1
        yield f"worked-{name}", {**worked_request(case, f"corpus-t{n}"),
                                 "round_id": _round_id(n)}


def answer_bytes(raw: dict[str, Any], uows: Any, *, operator_id: str = OPERATOR,
                 key: str = "corpus-key", signer: Signer = SIGNER) -> bytes:
    """Settle ``raw`` on ``uows``; return the answer's bytes as ``POST /v1/rounds`` writes
    them (the request loaded as the route loads it)."""
    data = round_request(json.loads(json.dumps(raw)))
    settled = rounds.settle(data, raw, operator_id=operator_id, idempotency_key=key,
                            uows=uows, signer=signer)
    with _APP.app_context():
        return json_response(settled.body).get_data()


def settle_bytes(raw: dict[str, Any]) -> tuple[bytes, bytes]:
    """Settle ``raw`` twice on a chain in memory (so the second has a previous hash); return
    the second answer's bytes and the bytes of the rows it appended."""
    answer, rows, _ = settled_and_read(raw)
    return answer, rows


def settled_and_read(raw: dict[str, Any]) -> tuple[bytes, bytes, tuple[bytes, ...]]:
    """As ``settle_bytes``, with the reads of the second round: as settled, then reversed,
    and its reversal's."""
    uows = FakeUnitOfWorks()
    answer = b""
    for attempt in range(2):
        body = {**raw, "round_id": raw["round_id"][:-1] + str(attempt)}
        answer = answer_bytes(body, uows, key=f"corpus-key-{attempt}")
    rows = orjson.dumps(sorted(vars(uows.ledger.rounds[-1]).items()), default=_typed_row,
                        option=orjson.OPT_PASSTHROUGH_DATETIME)
    round_id = uuid.UUID(json.loads(answer)["round_id"])
    read = read_bytes(round_id, uows)
    # A reversal's id is drawn at random: here a fixed one, so its receipt is the same.
    with patch.object(uuid, "uuid4", return_value=uuid.UUID(int=round_id.int ^ 0xFF << 64)):
        reversal = rounds.reverse(round_id, "corpus reversal", {"reason": "corpus reversal"},
                                  operator_id=OPERATOR, idempotency_key="corpus-reversal",
                                  uows=uows, signer=SIGNER)
    reversed_ = read_bytes(round_id, uows) + read_bytes(
        uuid.UUID(reversal.body["round_id"]), uows)
    return answer, rows, (read, reversed_)


def read_bytes(round_id: uuid.UUID, uows: Any, *, operator_id: str = OPERATOR,
               signer: Signer = SIGNER) -> bytes:
    """Return the bytes ``GET /v1/rounds/{round_id}`` answers for a round stored in ``uows``."""
    stored = round_reads.get_round(round_id, operator_id=operator_id, uows=uows,
                              keys=signer.keys, checked=ReceiptCache())
    if stored is None:
        raise LookupError(f"no round {round_id}")
    with _APP.app_context():
        return json_text_response(stored.text, lambda: stored.body).get_data()


def _typed_row(value: Any) -> Any:
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return sorted(vars(value).items())
    if isinstance(value, Decimal | uuid.UUID | datetime | tuple):
        return f"{type(value).__name__}:{value}"
    raise TypeError(f"{type(value).__name__} in a row")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build() -> dict[str, Any]:
    cases = []
    skipped = 0
    for name, raw in requests():
        try:
            answer, rows, (read, reversed_) = settled_and_read(raw)
        except Exception as error:  # noqa: BLE001 - a dealt request the rules refuse
            if type(error).__name__ in {"ProblemError", "RoundError", "RulesetError",
                                        "DomainError", "LimitError", "ValidationError"} or \
                    isinstance(error, ValueError):
                skipped += 1
                continue
            raise
        cases.append({"id": name, "request": raw, "answer_sha256": digest(answer),
                      "rows_sha256": digest(rows), "answer_bytes": len(answer),
                      "read_sha256": digest(read), "reversed_read_sha256": digest(reversed_)})
    return {"source": "tests/settle_corpus.py on the code before issue 43's speed work",
            "skipped": skipped, "cases": cases}


if __name__ == "__main__":
    corpus = build()
    CORPUS.write_text(json.dumps(corpus, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"{len(corpus['cases'])} cases ({corpus['skipped']} dealt requests refused)")
