"""Cursor walks that never skip, and cursors bound to their list.

A line id is drawn when its round is inserted, before the round's transaction commits. So
an append that is slow to commit (here: one held open on purpose, with its table's chain
lock as every append holds it) leaves a line with a lower id than lines committed after
it at other tables. A walk that read those later lines first used to pass the held
line's id, and no cursor ever returned it. Lists now page in commit order and stop
short of an append in progress; the walk below reads pages while the append is held,
then lets it commit, and must return every row exactly once.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest

from app.db.unit_of_work import UnitOfWork
from app.services import cursors
from tests.integration.ledger_rows import make_round
from tests.worked_examples import EX_000, round_request


def _settle(api: Any, table_id: str, player: str) -> dict[str, Any]:
    body = round_request(EX_000, table_id)
    body["players"][0]["player_id"] = player
    answer = api.post("/v1/rounds", json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert answer.status_code == 201, answer.get_json()
    settled: dict[str, Any] = answer.get_json()
    return settled


def _page(api: Any, path: str, cursor: str | None, **query: str) -> dict[str, Any]:
    params = {**query, "limit": "1", **({"cursor": cursor} if cursor else {})}
    answer = api.get(path, query_string=params)
    assert answer.status_code == 200, answer.get_json()
    page: dict[str, Any] = answer.get_json()
    return page


def _walk(api: Any, path: str, key: str, cursor: str | None, **query: str
          ) -> tuple[list[Any], str | None]:
    """Follow cursors to the end; return the keys of the items and the last cursor sent."""
    seen = []
    while True:
        page = _page(api, path, cursor, **query)
        seen.extend(item[key] for item in page["items"])
        if page["next_cursor"] is None:
            return seen, cursor
        cursor = page["next_cursor"]


@pytest.fixture
def held(owner_sessions):
    """An append held open: its chain's lock taken and its round inserted, not committed."""

    class Held:
        def __init__(self) -> None:
            self.uow = UnitOfWork(owner_sessions)

        def open(self, table_id: str, player: str) -> uuid.UUID:
            uow = self.uow.__enter__()
            start = uow.appends.start("default", table_id, uuid.uuid4().hex)
            assert start is not None
            round_ = make_round(table_id, players=(player, "H"))
            round_.ruleset = {"preset": "test", "precision": 0}  # lists show its money
            round_.created_at = start.created_at  # the take's time, as the service's
            return uow.rounds.add(round_).id

        def commit(self) -> None:
            self.uow.__exit__(None, None, None)

    holder = Held()
    yield holder
    if holder.uow.__dict__.get("session") is not None and holder.uow.session.in_transaction():
        holder.commit()


def test_a_ledger_walk_returns_a_line_that_commits_after_later_lines_were_served(api, held):
    player = f"P-{uuid.uuid4().hex[:8]}"
    first = _settle(api, f"t-{uuid.uuid4().hex[:8]}", player)
    slow = held.open(f"t-{uuid.uuid4().hex[:8]}", player)  # its line ids are drawn now
    later = _settle(api, f"t-{uuid.uuid4().hex[:8]}", player)
    path = f"/v1/players/{player}/ledger"
    page = _page(api, path, None)
    assert [i["round_id"] for i in page["items"]] == [first["round_id"]]
    # The later round is committed, but the held append is older: the walk waits for it.
    waiting = _page(api, path, page["next_cursor"])
    assert waiting["items"] == [] and waiting["next_cursor"] is not None
    held.commit()
    rest, _ = _walk(api, path, "round_id", waiting["next_cursor"])
    assert [first["round_id"], *rest] == [first["round_id"], str(slow), later["round_id"]]


def test_a_rounds_walk_returns_a_round_that_commits_after_later_rounds_were_served(api, held):
    player = f"P-{uuid.uuid4().hex[:8]}"
    first = _settle(api, f"t-{uuid.uuid4().hex[:8]}", player)
    slow_table = f"t-{uuid.uuid4().hex[:8]}"
    held_id = held.open(slow_table, player)
    later = _settle(api, f"t-{uuid.uuid4().hex[:8]}", player)
    # Newest first: the later round, then nothing below the held append while it is open.
    page = _page(api, "/v1/rounds", None, player_id=player)
    assert [i["round_id"] for i in page["items"]] == [later["round_id"]]
    waiting = _page(api, "/v1/rounds", page["next_cursor"], player_id=player)
    assert waiting["items"] == [] and waiting["next_cursor"] is not None
    held.commit()
    rest, _ = _walk(api, "/v1/rounds", "round_id", waiting["next_cursor"], player_id=player)
    assert rest == [str(held_id), first["round_id"]]


def _forged(list_name: str, filters: dict[str, Any], position: list[Any]) -> str:
    return cursors.encode(list_name, filters, position)


@pytest.mark.parametrize(("path", "cursor"), [
    # a cursor of the player ledger given to the rounds list
    ("/v1/rounds", _forged("players.ledger", {"player": "A"}, [1, 1])),
    # the rounds list's own, issued with another filter (table_id=x)
    ("/v1/rounds", _forged("rounds", {"table_id": "x"}, [1, str(uuid.uuid4())])),
    # the rounds list's own filters, but a position whose id is not a UUID
    ("/v1/rounds", _forged("rounds", {}, [1, "not-a-uuid"])),
    ("/v1/rounds", _forged("rounds", {}, [True, str(uuid.uuid4())])),
    ("/v1/rounds", _forged("rounds", {}, ["1"])),
    ("/v1/players/A/ledger", _forged("rounds", {}, [1, str(uuid.uuid4())])),
    ("/v1/players/A/ledger", _forged("players.ledger", {"player": "B"}, [1, 1])),
    ("/v1/players/A/ledger", _forged("players.ledger", {"player": "A"}, [1, -1])),
    ("/v1/players/A/ledger", _forged("players.ledger", {"player": "A"}, [1, "1"])),
    # cursors of the earlier formats, and bytes that are no cursor at all
    ("/v1/rounds", base64.urlsafe_b64encode(json.dumps(
        ["2026-01-01T00:00:00+00:00", "not-a-uuid"]).encode()).decode().rstrip("=")),
    ("/v1/players/A/ledger", "eyJsaW5lIjoxfQ"),  # {"line":1}
    ("/v1/players/A/ledger", "%%%"),
    ("/v1/audit/checkpoints", _forged("checkpoints", {}, ["yesterday", "x"])),
], ids=["ledger-cursor-on-rounds", "other-filters", "id-not-a-uuid", "txid-boolean",
        "short-position", "rounds-cursor-on-ledger", "other-player", "negative-id",
        "id-a-string", "old-round-cursor", "old-line-cursor", "not-base64",
        "checkpoint-position"])
def test_every_cursor_fault_is_a_400_problem(api, path, cursor):
    answer = api.get(path, query_string={"cursor": cursor})
    assert answer.status_code == 400, answer.get_json()
    assert answer.mimetype == "application/problem+json"
    assert answer.get_json()["errors"][0]["path"] == "cursor"


def test_a_cursor_walks_on_under_the_filters_it_was_issued_with(api):
    player = f"P-{uuid.uuid4().hex[:8]}"
    table = f"t-{uuid.uuid4().hex[:8]}"
    played = [_settle(api, table, player)["round_id"] for _ in range(3)]
    walked, _ = _walk(api, "/v1/rounds", "round_id", None, table_id=table)
    assert walked == played[::-1]
    page = _page(api, "/v1/rounds", None, table_id=table)
    moved = api.get("/v1/rounds", query_string={"cursor": page["next_cursor"], "limit": "1",
                                                "table_id": f"{table}-other"})
    assert moved.status_code == 400


def test_a_stored_ruleset_without_its_precision_still_lists_with_the_amounts_as_stored(
        api, owner_sessions):
    table = f"noprec-{uuid.uuid4().hex[:10]}"
    with UnitOfWork(owner_sessions) as uow:
        round_id = uow.rounds.add(make_round(table)).id  # its ruleset names no precision
    answer = api.get(f"/v1/rounds?table_id={table}")
    assert answer.status_code == 200, answer.get_json()
    (item,) = answer.get_json()["items"]
    assert item["round_id"] == str(round_id)
    assert item["stake"] == "10"
    assert [p["amount"] for p in item["players"]] == ["95", "-100"]


def test_a_matches_walk_returns_a_match_whose_opening_commits_after_later_ones(api, sessions):
    from sqlalchemy import select

    from app.db.models import Match

    table = f"t-{uuid.uuid4().hex[:8]}"
    seats = ["A", "B", "C", "D"]

    def opened() -> str:
        answer = api.post("/v1/matches", json={"ruleset": "dagiang4", "table_id": table,
                                                "stake": "100", "seats": seats},
                          headers={"Idempotency-Key": uuid.uuid4().hex})
        assert answer.status_code == 201, answer.get_json()
        return str(answer.get_json()["match_id"])

    first = opened()
    # An opening held open: its key's lock taken and its match inserted, not committed.
    uow = UnitOfWork(sessions).__enter__()
    try:
        model = uow.session.scalars(select(Match).where(Match.id == uuid.UUID(first))).one()
        key = uuid.uuid4().hex
        assert uow.appends.try_lock_key(model.operator_id, key)  # as an opening does
        slow_id = uuid.uuid4()
        # Through the writer's function, as the service opens a match.
        uow.appends.open_match({
            "id": slow_id, "operator_id": model.operator_id, "table_id": table,
            "ruleset_name": model.ruleset_name, "ruleset": model.ruleset,
            "ruleset_hash": model.ruleset_hash, "match_rules": model.match_rules,
            "stake": model.stake, "seats": model.seats, "idempotency_key": key,
            "body_hash": model.body_hash})
        later = opened()
        # Newest first: the later match, then nothing below the held opening while it is open.
        page = _page(api, "/v1/matches", None, table_id=table)
        assert [i["match_id"] for i in page["items"]] == [later]
        waiting = _page(api, "/v1/matches", page["next_cursor"], table_id=table)
        assert waiting["items"] == [] and waiting["next_cursor"] is not None
    finally:
        uow.__exit__(None, None, None)
    rest, _ = _walk(api, "/v1/matches", "match_id", waiting["next_cursor"], table_id=table)
    assert rest == [str(slow_id), first]
