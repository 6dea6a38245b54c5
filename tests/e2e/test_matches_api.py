"""Matches (將, matches.md §1) through HTTP: opening, rounds of a match, leaving, penalties."""

from __future__ import annotations

import base64
import threading
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import text

DECK = [r + s for s in "shdc" for r in "23456789TJQKA"]


def _key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def _table() -> str:
    return f"match-{uuid.uuid4().hex[:12]}"


def _open(api: Any, table: str, seats: list[str], ruleset: Any = "dagiang4",
          stake: str = "100", headers: dict[str, str] | None = None) -> Any:
    return api.post("/v1/matches", json={"ruleset": ruleset, "table_id": table,
                                          "stake": stake, "seats": seats},
                    headers=headers or _key())


def _opened(api: Any, table: str, seats: list[str], **kwargs: Any) -> dict[str, Any]:
    response = _open(api, table, seats, **kwargs)
    assert response.status_code == 201, response.get_json()
    body: dict[str, Any] = response.get_json()
    return body


def _round(match: dict[str, Any], players: list[str], balances: dict[str, str] | None = None,
           ruleset: Any = "dagiang4", stake: str | None = None,
           banker: str | None = None) -> dict[str, Any]:
    """A 十三支 round of ``players``, each 13 cards of a fixed deal, arranged by keep_back."""
    seats = []
    for i, player in enumerate(players):
        seat: dict[str, Any] = {"player_id": player,
                                "balance": (balances or {}).get(player, "10000"),
                                "cards": DECK[13 * i:13 * i + 13], "auto": "keep_back"}
        if banker is not None and player == banker:
            seat["banker"] = True
        seats.append(seat)
    return {"ruleset": ruleset, "table_id": match["table_id"],
            "stake": stake or match["stake"], "players": seats,
            "match_id": match["match_id"]}


def _play(api: Any, match: dict[str, Any], players: list[str], **kwargs: Any) -> Any:
    return api.post("/v1/rounds", json=_round(match, players, **kwargs), headers=_key())


def _leave(api: Any, match_id: str, player: str, reason: str, balance: str = "10000",
           headers: dict[str, str] | None = None) -> Any:
    return api.post(f"/v1/matches/{match_id}/leave",
                    json={"player_id": player, "reason": reason, "balance": balance},
                    headers=headers or _key())


def _paths(response: Any) -> set[str]:
    return {e["path"] for e in response.get_json()["errors"]}


def _codes(response: Any) -> set[str]:
    return {e["code"] for e in response.get_json()["errors"]}


SEATS = ["E", "S", "W", "N"]


def test_001_a_match_opens_with_the_seeds_defaults_16_rounds_and_a_stay_of_4(api):
    """001: 16盤完即完成一將; 每次進入遊戲最少要完成四盤; the penalty 1 x stake to the house."""
    table = _table()
    match = _opened(api, table, SEATS)
    assert match["status"] == "open"
    assert match["rounds_played"] == 0
    assert match["rounds_per_match"] == 16
    assert match["ruleset"]["match"] == {
        "rounds_per_match": 16, "min_rounds_before_leave": 4, "leave_penalty": "1",
        "leave_penalty_to": "house", "house_seat": False}
    assert [s["player_id"] for s in match["seats"]] == SEATS
    assert match["next_banker"] is None  # dagiang4 has no banker
    read = api.get(f"/v1/matches/{match['match_id']}")
    assert read.status_code == 200 and read.get_json() == match


def test_house_seat_defaults_to_true_for_bonus3_only(api):
    match = _opened(api, _table(), ["A", "B"], ruleset="bonus3", stake="200")
    assert match["ruleset"]["match"]["house_seat"] is True


def test_the_same_key_and_body_replay_the_match_and_another_body_is_refused(api):
    table, headers = _table(), _key()
    first = _open(api, table, SEATS, headers=headers)
    again = _open(api, table, SEATS, headers=headers)
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    other = _open(api, table, ["E", "S", "W"], headers=headers)
    assert other.status_code == 422
    assert _paths(other) == {"Idempotency-Key"}


@pytest.mark.parametrize(("body", "path"), [
    ({"seats": ["E", "E", "W", "N"]}, "seats[1]"),
    ({"seats": ["E", "S", "W", "N", "X"]}, "seats"),
    ({"stake": "100.001"}, "stake"),
    ({"ruleset": {"preset": "dagiang4", "overrides": {"rounds_per_match": 0}}},
     "ruleset.overrides.rounds_per_match"),
    ({"ruleset": {"preset": "dagiang4", "overrides": {"min_rounds_before_leave": 17}}},
     "ruleset.overrides.min_rounds_before_leave"),
    ({"ruleset": {"preset": "dagiang4", "overrides": {"leave_penalty": "1.00001"}}},
     "ruleset.overrides.leave_penalty"),
    ({"ruleset": {"preset": "dagiang4", "overrides": {"leave_penalty": 1.5}}},
     "ruleset.overrides.leave_penalty"),
    ({"ruleset": {"preset": "dagiang4", "overrides": {"leave_penalty_to": "bank"}}},
     "ruleset.overrides.leave_penalty_to"),
    ({"ruleset": {"preset": "dagiang4", "overrides": {"house_seat": "yes"}}},
     "ruleset.overrides.house_seat"),
    ({"ruleset": {"preset": "dagiang4", "overrides": {"fee_rate": "x"}}},
     "ruleset.overrides.fee_rate"),
    ({"ruleset": "nope"}, "ruleset"),
    ({"seats": ["E"]}, "seats"),
    ({"seats": ["E", ""]}, "seats[1]"),
], ids=lambda v: str(v)[:40])
def test_a_bad_match_request_is_refused_naming_the_field(api, body, path):
    request = {"ruleset": "dagiang4", "table_id": _table(), "stake": "100", "seats": SEATS,
               **body}
    response = api.post("/v1/matches", json=request, headers=_key())
    assert response.status_code in (400, 422), response.get_json()
    assert any(p == path or p.startswith(path) for p in _paths(response)), _paths(response)


def test_rounds_of_a_match_are_counted_and_it_closes_after_rounds_per_match(api):
    match = _opened(api, _table(), SEATS, ruleset={
        "preset": "dagiang4", "overrides": {"rounds_per_match": 2,
                                            "min_rounds_before_leave": 1}})
    ruleset = {"preset": "dagiang4", "overrides": {}}
    first = _play(api, match, SEATS, ruleset=ruleset)
    assert first.status_code == 201, first.get_json()
    second = _play(api, match, ["N", "W", "S", "E"], ruleset=ruleset)  # any order of seats
    assert second.status_code == 201, second.get_json()
    read = api.get(f"/v1/matches/{match['match_id']}").get_json()
    assert read["rounds_played"] == 2 and read["status"] == "closed"
    assert [r["round_id"] for r in read["rounds"]] == [first.get_json()["round_id"],
                                                       second.get_json()["round_id"]]
    third = _play(api, match, SEATS, ruleset=ruleset)
    assert third.status_code == 422
    assert _codes(third) == {"match_closed"} and _paths(third) == {"match_id"}


@pytest.mark.parametrize(("change", "path", "code"), [
    ({"players": ["E", "S", "W"]}, "players", "seats_mismatch"),
    ({"players": ["E", "S", "W", "X"]}, "players[3].player_id", "not_seated"),
    ({"stake": "200"}, "stake", "match_stake"),
    ({"ruleset": "bonus3", "players": ["E", "S", "W"]}, "ruleset", "match_ruleset"),
])
def test_a_round_that_does_not_fit_its_match_is_refused_and_nothing_is_written(
        api, count_rows, change, path, code):
    match = _opened(api, _table(), SEATS)
    players = change.pop("players", SEATS)
    before = count_rows()
    response = _play(api, match, players, **change)
    assert response.status_code == 422, response.get_json()
    assert (path, code) in {(e["path"], e["code"]) for e in response.get_json()["errors"]}
    assert count_rows() == before


def test_a_round_at_another_table_or_of_an_unknown_match_is_refused(api):
    match = _opened(api, _table(), SEATS)
    elsewhere = {**_round(match, SEATS), "table_id": _table()}
    response = api.post("/v1/rounds", json=elsewhere, headers=_key())
    assert response.status_code == 422 and _codes(response) == {"match_table"}
    unknown = {**_round(match, SEATS), "match_id": str(uuid.uuid4())}
    response = api.post("/v1/rounds", json=unknown, headers=_key())
    assert response.status_code == 422 and _codes(response) == {"unknown_match"}


def test_the_banker_turn_rotates_in_seat_order(api):
    """001: 第一次由東風位玩家當莊 ... 之後每盤莊家輪流當."""
    match = _opened(api, _table(), ["E", "S", "W"], ruleset="banker", stake="10")
    assert match["next_banker"] == "E"
    wrong = _play(api, match, ["E", "S", "W"], banker="S", ruleset="banker")
    assert wrong.status_code == 422 and _codes(wrong) == {"banker_turn"}
    assert _paths(wrong) == {"players[1].banker"}
    for banker in ("E", "S", "W", "E"):
        response = _play(api, match, ["E", "S", "W"], banker=banker, ruleset="banker")
        assert response.status_code == 201, response.get_json()
    read = api.get(f"/v1/matches/{match['match_id']}").get_json()
    assert [r["banker"] for r in read["rounds"]] == ["E", "S", "W", "E"]
    assert read["next_banker"] == "S"


def test_001_quitting_before_the_minimum_costs_one_stake_to_the_house(api):
    """001: 四人當中的一個中途離開會處以斷線扣點 (the penalty in the table's chain)."""
    match = _opened(api, _table(), SEATS)
    played = _play(api, match, SEATS).get_json()
    response = _leave(api, match["match_id"], "W", "quit", balance="5000.00")
    assert response.status_code == 201, response.get_json()
    leave = response.get_json()
    assert leave["penalty_amount"] == "100.00" and leave["rounds_played"] == 1
    penalty = leave["penalty"]
    assert penalty["kind"] == "penalty"
    assert penalty["chain"]["seq"] == played["chain"]["seq"] + 1
    assert penalty["chain"]["prev_hash"] == played["chain"]["content_hash"]
    assert [(line["account"], line["kind"], line["amount"], line["balance_before"],
             line["balance_after"]) for line in penalty["lines"]] == [
        ("W", "penalty", "-100.00", "5000.00", "4900.00"),
        ("house", "penalty", "100.00", None, None)]
    assert penalty["penalty"]["to"] == "house"
    stored = api.get(f"/v1/rounds/{penalty['round_id']}").get_json()
    assert stored["lines"] == penalty["lines"]
    read = api.get(f"/v1/matches/{match['match_id']}").get_json()
    assert read["leaves"][0]["penalty_round_id"] == penalty["round_id"]
    assert [s["left"] for s in read["seats"]] == [False, False, True, False]
    # The player who left plays no more; the others play on without it.
    refused = _play(api, match, SEATS)
    assert refused.status_code == 422 and _codes(refused) == {"player_left"}
    assert _play(api, match, ["E", "S", "N"]).status_code == 201
    ledger = api.get("/v1/players/W/ledger").get_json()["items"]
    assert any(item["kind"] == "penalty" and item["amount"] == "-100.00" for item in ledger)


def test_a_penalty_round_carries_a_signed_receipt_like_a_settle(api):
    match = _opened(api, _table(), SEATS)
    headers = _key()
    penalty = _leave(api, match["match_id"], "E", "quit", balance="800.00",
                     headers=headers).get_json()["penalty"]
    raw = base64.b64decode(api.with_key(None).get("/v1/audit/public-key").get_json()["public_key"])
    key = Ed25519PublicKey.from_public_bytes(raw)
    chain = penalty["chain"]
    statement = (f"thirteen-receipt/v1\noperator {penalty['operator_id']}\n"
                 f"table {penalty['table_id']}\nseq {chain['seq']}\n"
                 f"prev {chain['prev_hash'] or '-'}\ncontent {chain['content_hash']}\n")
    key.verify(base64.b64decode(chain["signature"]), statement.encode())
    replayed = _leave(api, match["match_id"], "E", "quit", balance="800.00", headers=headers)
    assert replayed.status_code == 200
    assert replayed.get_json()["penalty"]["chain"] == chain
    assert api.get(f"/v1/rounds/{penalty['round_id']}").get_json()["chain"] == chain


def test_001_continue_limit_never_costs_and_after_the_minimum_nothing_is_charged(api):
    """001: 強制選擇離開(不扣罰點)."""
    match = _opened(api, _table(), SEATS, ruleset={
        "preset": "dagiang4", "overrides": {"min_rounds_before_leave": 1}})
    free = _leave(api, match["match_id"], "E", "continue_limit")
    assert free.status_code == 201
    assert free.get_json()["penalty"] is None and free.get_json()["penalty_amount"] == "0.00"
    assert "continue_limit" in free.get_json()["why"]
    assert _play(api, match, ["S", "W", "N"]).status_code == 201
    late = _leave(api, match["match_id"], "S", "disconnect")
    assert late.status_code == 201 and late.get_json()["penalty"] is None


def test_the_penalty_is_capped_at_the_balance_and_shared_by_the_seats(api):
    """The remainder of an uneven split goes to the house's rounding line."""
    match = _opened(api, _table(), SEATS, stake="100", ruleset={
        "preset": "dagiang4", "overrides": {"leave_penalty_to": "seats"}})
    _play(api, match, SEATS, balances={p: "1000.00" for p in SEATS})
    response = _leave(api, match["match_id"], "E", "disconnect", balance="50.00")
    assert response.status_code == 201, response.get_json()
    penalty = response.get_json()["penalty"]
    assert penalty["penalty"]["due"] == "100.00" and penalty["penalty"]["amount"] == "50.00"
    lines = [(line["account"], line["kind"], line["amount"]) for line in penalty["lines"]]
    assert lines == [("E", "penalty", "-50.00"), ("S", "penalty", "16.66"),
                     ("W", "penalty", "16.66"), ("N", "penalty", "16.66"),
                     ("house", "rounding", "0.02")]
    assert sum(Decimal(line["amount"]) for line in penalty["lines"]) == 0
    stayer = next(line for line in penalty["lines"] if line["account"] == "S")
    assert stayer["balance_after"] == str(Decimal(stayer["balance_before"]) + Decimal("16.66"))


@pytest.mark.parametrize(("body", "path"), [
    ({"player_id": "X", "reason": "quit", "balance": "1"}, "player_id"),
    ({"player_id": "E", "reason": "bored", "balance": "1"}, "reason"),
    ({"player_id": "E", "reason": "quit", "balance": "1.001"}, "balance"),
    ({"player_id": "E", "reason": "quit", "balance": "-1"}, "balance"),
    ({"player_id": "E", "reason": "quit", "balance": 1}, "balance"),
    ({"player_id": "E", "reason": "quit"}, "balance"),
], ids=lambda v: str(v)[:40])
def test_a_bad_leave_is_refused_naming_the_field(api, count_rows, body, path):
    match = _opened(api, _table(), SEATS)
    before = count_rows()
    response = api.post(f"/v1/matches/{match['match_id']}/leave", json=body, headers=_key())
    assert response.status_code == 422, response.get_json()
    assert path in _paths(response)
    assert count_rows() == before


def test_a_player_leaves_once_and_an_unknown_match_is_404(api):
    match = _opened(api, _table(), SEATS)
    headers = _key()
    assert _leave(api, match["match_id"], "E", "quit", headers=headers).status_code == 201
    again = _leave(api, match["match_id"], "E", "quit", headers=headers)
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    other_key = _leave(api, match["match_id"], "E", "quit")
    assert other_key.status_code == 409 and _codes(other_key) == {"already_left"}
    assert other_key.get_json()["detail"] == f"player 'E' already left match {match['match_id']}"
    other_body = _leave(api, match["match_id"], "E", "disconnect", headers=headers)
    assert other_body.status_code == 422
    assert _leave(api, str(uuid.uuid4()), "E", "quit").status_code == 404


def test_concurrent_leaves_with_one_key_make_one_penalty(api, count_rows):
    """Real commits: several threads send the same leave; one penalty round is written."""
    match = _opened(api, _table(), SEATS)
    before = count_rows()
    headers = _key()
    answers: list[int] = []
    ready = threading.Barrier(4)

    def send() -> None:
        client = api.fresh()
        ready.wait()
        for _ in range(50):  # a 409 in flight is retried, as a client would
            status = _leave(client, match["match_id"], "N", "quit", headers=headers).status_code
            if status != 409:
                answers.append(status)
                return

    threads = [threading.Thread(target=send) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [200, 200, 200, 201]
    after = count_rows()
    assert after["rounds"] == before["rounds"] + 1
    assert after["match_leaves"] == before["match_leaves"] + 1
    assert after["ledger_lines"] == before["ledger_lines"] + 2


def test_matches_list_by_table_with_cursor_paging(api):
    table = _table()
    ids = [_opened(api, table, SEATS)["match_id"] for _ in range(3)]
    _opened(api, _table(), SEATS)
    first = api.get(f"/v1/matches?table_id={table}&limit=2").get_json()
    assert len(first["items"]) == 2 and first["next_cursor"]
    second = api.get(f"/v1/matches?table_id={table}&limit=2&cursor={first['next_cursor']}")
    rest = second.get_json()
    assert rest["next_cursor"] is None
    seen = [m["match_id"] for m in first["items"] + rest["items"]]
    assert sorted(seen) == sorted(ids)
    bad = api.get("/v1/matches?cursor=nonsense")
    assert bad.status_code == 400
    # A cursor is bound to its list and filters (app.services.cursors): elsewhere it is 400.
    other_filters = api.get(f"/v1/matches?table_id={_table()}&cursor={first['next_cursor']}")
    assert other_filters.status_code == 400
    assert {e["code"] for e in other_filters.get_json()["errors"]} == {"invalid_cursor"}
    other_list = api.get(f"/v1/rounds?table_id={table}&cursor={first['next_cursor']}")
    assert other_list.status_code == 400


def _period(start: datetime, table: str) -> str:
    return urlencode({"from": start.isoformat(),
                      "to": (datetime.now(UTC) + timedelta(seconds=1)).isoformat(),
                      "table_id": table})


def test_reconciliation_counts_the_penalty_and_its_totals_equal_the_lines(api, engine):
    start = datetime.now(UTC) - timedelta(seconds=1)
    table = _table()
    to_house = _opened(api, table, SEATS)
    _play(api, to_house, SEATS, balances={p: "1000.00" for p in SEATS})
    assert _leave(api, to_house["match_id"], "W", "quit", balance="1000.00").status_code == 201
    to_seats = _opened(api, table, SEATS, ruleset={
        "preset": "dagiang4", "overrides": {"leave_penalty_to": "seats"}})
    assert _leave(api, to_seats["match_id"], "E", "disconnect",
                  balance="50.00").status_code == 201
    report = api.get("/v1/reconciliation?" + _period(start, table)).get_json()
    row = report["tables"][0]
    # W paid 100 to the house; E paid 50: 16.66 to each of three, 0.02 house rounding.
    assert row["penalties"] == "-100.02"
    assert row["house_penalties"] == "100.00"
    assert row["net"] == "0.00" and row["zero_sum"]["ok"]
    assert row["hash_chain"]["status"] == "ok"
    with engine.connect() as connection:
        sums = connection.execute(text(
            "SELECT kind, account = 'house' AS house, sum(amount) FROM ledger_lines "
            "WHERE table_id = :t GROUP BY 1, 2"), {"t": table}).all()
    by = {(kind, house): amount for kind, house, amount in sums}
    assert Decimal(row["penalties"]) == by.get(("penalty", False), 0)
    assert Decimal(row["house_penalties"]) == by.get(("penalty", True), 0)
    assert Decimal(row["rounding"]) == by.get(("rounding", True), 0)
    assert Decimal(row["net"]) == sum(by.values())
    games = {g["game"]: g for g in report["games"]}
    assert games["thirteen"]["penalties"] == "-100.02"
    csv = api.get("/v1/reconciliation?" + _period(start, table),
                  headers={"Accept": "text/csv"}).get_data(as_text=True)
    header, line = csv.splitlines()[:2]
    assert dict(zip(header.split(","), line.split(","), strict=True))["penalties"] == "-100.02"


def test_verify_recomputes_a_penalty_and_names_one_whose_amount_was_changed(api, owner_engine):
    start = datetime.now(UTC) - timedelta(seconds=1)
    table = _table()
    match = _opened(api, table, SEATS)
    penalty = _leave(api, match["match_id"], "S", "quit", balance="1000.00").get_json()["penalty"]
    clean = api.get("/v1/audit/verify?" + _period(start, table)).get_json()
    assert clean["ok"] and clean["checked"]["rounds"] == 1
    # Only a superuser owner can turn the trigger off: the service's runtime login cannot.
    with owner_engine.begin() as connection:
        connection.exec_driver_sql("SET LOCAL citus.propagate_set_commands = 'local'; "
                                   "SET LOCAL session_replication_role = replica")
        connection.execute(text("UPDATE ledger_lines SET amount = amount - 1 "
                                "WHERE round_id = :r AND line_no = 1"), {"r": penalty["round_id"]})
    found = api.get("/v1/audit/verify?" + _period(start, table)).get_json()
    assert not found["ok"]
    # The lines are in the round's content (version 2): its hash no longer matches either.
    assert {(d["round_id"], d["what"]) for d in found["findings"]} == {
        (penalty["round_id"], "lines_changed"), (penalty["round_id"], "content_hash")}


def test_a_penalty_round_can_be_reversed_like_any_round(api):
    match = _opened(api, _table(), SEATS)
    penalty = _leave(api, match["match_id"], "N", "quit", balance="500.00").get_json()["penalty"]
    response = api.post(f"/v1/rounds/{penalty['round_id']}/reversal",
                        json={"reason": "disconnect was the server's fault"}, headers=_key())
    assert response.status_code == 201, response.get_json()
    assert [line["amount"] for line in response.get_json()["lines"]] == ["100.00", "-100.00"]


# service.md's player A and openapi.yaml's player B: no special hand between them.
PLAYER_CARDS = ["Ah", "Ad", "Ac", "4h", "5h", "6h", "7h", "8h", "9s", "Ts", "Js", "Qs", "Ks"]
HOUSE_CARDS = ["Qh", "Qd", "Jh", "2s", "2h", "2d", "2c", "4s", "3s", "3h", "3d", "3c", "5s"]


def _house_round(table: str, *, match_id: str | None = None, ruleset: str = "bonus3",
                 house_rows: bool = False) -> dict[str, Any]:
    house: dict[str, Any] = {"player_id": "H", "house": True}
    if house_rows:
        house.update({"front": HOUSE_CARDS[:3], "middle": HOUSE_CARDS[3:8],
                      "back": HOUSE_CARDS[8:]})
    else:
        house["cards"] = HOUSE_CARDS
    body: dict[str, Any] = {
        "ruleset": ruleset, "table_id": table, "stake": "200",
        "players": [{"player_id": "A", "balance": "20000", "cards": PLAYER_CARDS,
                     "auto": "keep_back"}, house]}
    if match_id is not None:
        body["match_id"] = match_id
    return body


def test_000_a_player_alone_plays_the_house_seat_whose_money_goes_to_house_game(api):
    """000: 與莊家對賭; the house seat has no balance and sends 13 cards (keep_back)."""
    table = _table()
    response = api.post("/v1/rounds", json=_house_round(table), headers=_key())
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    house = next(p for p in body["players"] if p["player_id"] == "H")
    assert house["house"] is True and house["arrangement"] is not None
    assert house["balance_before"] == "0" and house["balance_after"] == house["amount"]
    accounts = {line["account"] for line in body["lines"]}
    assert "house_game" in accounts and "H" not in accounts
    game_lines = [line for line in body["lines"] if line["account"] == "house_game"]
    assert all(line["balance_before"] is None for line in game_lines)
    assert sum(Decimal(line["amount"]) for line in game_lines) == Decimal(house["amount"])
    assert sum(Decimal(line["amount"]) for line in body["lines"]) == 0
    start = datetime.now(UTC) - timedelta(minutes=5)
    verify = api.get("/v1/audit/verify?" + _period(start, table)).get_json()
    assert verify["ok"], verify
    row = api.get("/v1/reconciliation?" + _period(start, table)).get_json()["tables"][0]
    assert row["house_game"] == house["amount"] and row["net"] == "0"


@pytest.mark.parametrize(("change", "path", "code"), [
    ({"ruleset": "dagiang4"}, "players[1].house", "no_house_seat"),
])
def test_a_house_seat_where_the_ruleset_has_none_is_refused(api, change, path, code):
    body = {**_house_round(_table()), **change}
    body["players"] = body["players"] + [
        {"player_id": "C", "balance": "20000", "auto": "keep_back",
         "cards": [c for c in DECK if c not in PLAYER_CARDS + HOUSE_CARDS][:13]}]
    response = api.post("/v1/rounds", json=body, headers=_key())
    assert response.status_code == 422, response.get_json()
    assert (path, code) in {(e["path"], e["code"]) for e in response.get_json()["errors"]}


def test_a_house_seat_with_a_balance_or_a_player_without_one_is_refused(api):
    body = _house_round(_table())
    body["players"][1]["balance"] = "100"
    response = api.post("/v1/rounds", json=body, headers=_key())
    assert response.status_code == 422 and "players[1].balance" in _paths(response)
    body = _house_round(_table())
    del body["players"][0]["balance"]
    response = api.post("/v1/rounds", json=body, headers=_key())
    assert response.status_code == 422 and "players[0].balance" in _paths(response)


def test_a_match_seats_the_house_where_allowed_and_its_rounds_must_too(api):
    table = _table()
    refused = api.post("/v1/matches", json={
        "ruleset": "dagiang4", "table_id": table, "stake": "100",
        "seats": ["A", {"player_id": "H", "house": True}]}, headers=_key())
    assert refused.status_code == 422 and "seats[1].house" in _paths(refused)
    match = _opened(api, table, ["A", {"player_id": "H", "house": True}], ruleset="bonus3",
                    stake="200")
    assert [s["house"] for s in match["seats"]] == [False, True]
    played = api.post("/v1/rounds", json=_house_round(table, match_id=match["match_id"],
                                                      house_rows=True), headers=_key())
    assert played.status_code == 201, played.get_json()
    plain = _house_round(table, match_id=match["match_id"])
    plain["players"][1] = {"player_id": "H", "balance": "20000", "cards": HOUSE_CARDS,
                           "auto": "keep_back"}
    response = api.post("/v1/rounds", json=plain, headers=_key())
    assert response.status_code == 422 and _codes(response) == {"match_house_seat"}
    leave = _leave(api, match["match_id"], "H", "quit")
    assert leave.status_code == 422 and _codes(leave) == {"house_seat_leaves"}


def test_concurrent_leaves_of_one_player_with_different_keys_make_one_leave(api, count_rows):
    """Real commits: under the table's chain lock the second leave finds the first (409)."""
    match = _opened(api, _table(), SEATS)
    before = count_rows()
    answers: list[int] = []
    ready = threading.Barrier(3)

    def send() -> None:
        client = api.fresh()
        ready.wait()
        answers.append(_leave(client, match["match_id"], "S", "disconnect").status_code)

    threads = [threading.Thread(target=send) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [201, 409, 409]
    after = count_rows()
    assert after["rounds"] == before["rounds"] + 1
    assert after["match_leaves"] == before["match_leaves"] + 1


def _qiang21_round(match: dict[str, Any], banker: str) -> dict[str, Any]:
    hands = {"E": ["Kh", "7d"], "S": ["As", "Kd"], "W": ["9c", "8s"], "N": ["2s", "3c"]}
    players = []
    for player in SEATS:
        seat: dict[str, Any] = {"player_id": player, "balance": "10000", "cards": hands[player]}
        if player == banker:
            seat["banker"] = True
        else:
            seat["bet_multiple"] = 1
        players.append(seat)
    return {"ruleset": "qiang21", "table_id": match["table_id"], "stake": match["stake"],
            "players": players, "match_id": match["match_id"]}


def test_matches_md_in_the_banker_games_the_banker_is_grabbed_not_rotated(api):
    match = _opened(api, _table(), SEATS, ruleset="qiang21")
    assert match["next_banker"] is None  # grabbed each round: nobody's turn
    # W grabs round 1 (E's turn had the banker rotated), then W again, then N.
    for banker in ("W", "W", "N"):
        response = api.post("/v1/rounds", json=_qiang21_round(match, banker), headers=_key())
        assert response.status_code == 201, response.get_json()
    read = api.get(f"/v1/matches/{match['match_id']}").get_json()
    assert [r["banker"] for r in read["rounds"]] == ["W", "W", "N"]
    assert read["next_banker"] is None


def test_matches_md_a_round_may_send_the_ruleset_as_the_match_resolved_it(api):
    ruleset = {"preset": "dagiang4", "overrides": {"rounds_per_match": 8,
                                                   "leave_penalty": "2"}}
    match = _opened(api, _table(), SEATS, ruleset=ruleset)
    played = _play(api, match, SEATS, ruleset=ruleset)
    assert played.status_code == 201, played.get_json()
    assert "rounds_per_match" not in played.get_json()["ruleset"]["parameters"]
    now = datetime.now(UTC)
    verified = api.get("/v1/audit/verify", query_string={
        "from": (now - timedelta(hours=1)).isoformat(),
        "to": (now + timedelta(hours=1)).isoformat(), "table_id": match["table_id"]})
    assert verified.status_code == 200, verified.get_json()
    report = verified.get_json()  # re-scored from what was stored
    assert (report["ok"], report["findings"], report["checked"]["rounds"]) == (True, [], 1)
    # Some of them, or none, also do; one that differs from the match's is refused.
    assert _play(api, match, SEATS, ruleset={"preset": "dagiang4", "overrides": {
        "rounds_per_match": 8}}).status_code == 201
    assert _play(api, match, SEATS, ruleset="dagiang4").status_code == 201
    other = _play(api, match, SEATS, ruleset={"preset": "dagiang4", "overrides": {
        "rounds_per_match": 8, "leave_penalty": "3"}})
    assert other.status_code == 422, other.get_json()
    assert _paths(other) == {"ruleset.overrides.leave_penalty"}
    assert api.get(f"/v1/matches/{match['match_id']}").get_json()["rounds_played"] == 3


def test_matches_md_the_house_seat_takes_no_share_of_a_penalty_paid_to_the_seats(api):
    match = _opened(api, _table(), ["A", "B", {"player_id": "H", "house": True}],
                    ruleset={"preset": "bonus3", "overrides": {"leave_penalty_to": "seats"}},
                    stake="200")
    response = _leave(api, match["match_id"], "A", "quit", balance="1000")
    assert response.status_code == 201, response.get_json()
    penalty = response.get_json()["penalty"]
    lines = [(line["account"], line["kind"], line["amount"]) for line in penalty["lines"]]
    assert lines == [("A", "penalty", "-200"), ("B", "penalty", "200")]


def test_matches_md_a_leave_may_carry_the_staying_seats_balances_for_the_penalty_lines(api):
    match = _opened(api, _table(), SEATS, stake="100", ruleset={
        "preset": "dagiang4", "overrides": {"leave_penalty_to": "seats"}})
    stranger = _leave(api, match["match_id"], "E", "quit")
    assert stranger.status_code == 201  # no round yet: the stayers' lines carry no balance
    assert all(line["balance_before"] is None for line in stranger.get_json()["penalty"]["lines"]
               if line["account"] != "E")
    refused = api.post(f"/v1/matches/{match['match_id']}/leave", json={
        "player_id": "S", "reason": "quit", "balance": "1000",
        "balances": {"W": "500", "E": "10"}}, headers=_key())
    assert refused.status_code == 422 and _paths(refused) == {"balances.E"}
    response = api.post(f"/v1/matches/{match['match_id']}/leave", json={
        "player_id": "S", "reason": "quit", "balance": "1000",
        "balances": {"W": "500", "N": "20.5"}}, headers=_key())
    assert response.status_code == 201, response.get_json()
    lines = {line["account"]: (line["balance_before"], line["balance_after"])
             for line in response.get_json()["penalty"]["lines"] if line["account"] != "S"}
    assert lines == {"W": ("500.00", "550.00"), "N": ("20.50", "70.50")}
