"""The service entering a Citus cluster by a worker as well as by the coordinator.

Runs when ``TEST_DATABASE_URL`` names a Citus coordinator with workers (as
docs/operations/scaling.md sets one up); skipped on one server. The session's database
is on every node (bench/cluster.py); an app pointed at a worker reaches it at the
worker's address in the coordinator's node list, as the runtime login.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

import pytest
from flask import Flask
from sqlalchemy import make_url

from app.db.schema import CitusWorker, migrate_unless_worker, upgrade
from bench.cluster import nodes
from tests.worked_examples import EX_000, round_request

# Wide bounds: settles wait for one chain in turn, and a loaded machine should slow the
# test down rather than turn a wait into a 503.
PATIENT = {"db_lock_timeout_ms": 120_000, "db_statement_timeout_ms": 120_000,
           "db_pool_timeout_s": 120, "db_deadline_s": 300}


@pytest.fixture(scope="module")
def on_worker(citus: bool, database_server: str) -> Callable[[str], str]:
    """Return a function moving a URL of the session's database to the first worker."""
    if not citus:
        pytest.skip("needs a Citus coordinator with workers as TEST_DATABASE_URL")
    _, workers = nodes(database_server)
    if not workers:
        pytest.skip("the Citus coordinator has no worker")
    host, port = workers[0]

    def move(url: str) -> str:
        return make_url(url).set(host=host, port=port).render_as_string(hide_password=False)

    return move


def test_concurrent_settles_through_the_coordinator_and_a_worker_form_one_chain(
        make_app: Callable[..., Flask], make_key: Callable[..., str], runtime_url: str,
        database_url: str, on_worker: Callable[[str], str],
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="app.services.uow")
    # The coordinator's address even where TEST_ENTRY_NODE moves the suite's apps.
    entries = [make_app(**PATIENT, database_url=runtime_url),
               make_app(**PATIENT, database_url=on_worker(runtime_url),
                        migrations_database_url=on_worker(database_url))]
    token = make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}")
    headers = {"Authorization": f"Bearer {token}"}
    table = f"nodes-{uuid.uuid4().hex[:10]}"
    threads_per_node, rounds_per_thread = 2, 5
    start = threading.Barrier(len(entries) * threads_per_node)
    answers: list[tuple[int, Any]] = []
    lock = threading.Lock()

    def settle(app: Flask, node: int) -> None:
        client = app.test_client()
        # Released together: the table's first round is raced through both nodes.
        start.wait()
        for _ in range(rounds_per_thread):
            answer = client.post("/v1/rounds", json=round_request(EX_000, table),
                                 headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
            with lock:
                answers.append((node, answer))

    threads = [threading.Thread(target=settle, args=(app, node))
               for node, app in enumerate(entries) for _ in range(threads_per_node)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = len(entries) * threads_per_node * rounds_per_thread
    assert [a.status_code for _, a in answers] == [201] * total, [
        a.get_json() for _, a in answers if a.status_code != 201]
    assert {node for node, _ in answers} == {0, 1}
    chains = sorted((a.get_json()["chain"] for _, a in answers), key=lambda c: c["seq"])
    assert [c["seq"] for c in chains] == list(range(1, total + 1))
    assert [c["prev_hash"] for c in chains[1:]] == [c["content_hash"] for c in chains[:-1]]
    # The chain's lock held across nodes: the only append refused as not at the head
    # (and run again) is a first round, which had no chain row to lock.
    refused = [r.getMessage() for r in caplog.records if "not at the head" in r.getMessage()]
    assert all("(seq 1, prev_hash <NULL>" in message for message in refused), refused
    now = datetime.now(UTC)
    query = urlencode({"from": (now - timedelta(hours=1)).isoformat(),
                       "to": (now + timedelta(hours=1)).isoformat(), "table_id": table})
    for app in entries:
        verified = app.test_client().get(f"/v1/audit/verify?{query}",
                                         headers=headers).get_json()
        assert verified["ok"] is True and verified["findings"] == [], verified
        # Listed through either node, newest first, a page at a time: the whole chain.
        listed = _walk(app, "/v1/rounds", headers, table_id=table)
        assert [r["round_id"] for r in listed] == [b["round_id"] for b in sorted(
            (a.get_json() for _, a in answers), key=lambda b: -b["chain"]["seq"])]


def _walk(app: Flask, path: str, headers: dict[str, str], **query: str) -> list[Any]:
    """Follow a list's cursors one item a page, to the end; return the items."""
    client, seen, cursor = app.test_client(), [], None
    while True:
        answer = client.get(path, headers=headers, query_string={
            **query, "limit": "1", **({} if cursor is None else {"cursor": cursor})})
        assert answer.status_code == 200, answer.get_json()
        seen.extend(answer.get_json()["items"])
        cursor = answer.get_json()["next_cursor"]
        if cursor is None:
            return seen


def test_rounds_settled_through_each_node_in_turn_chain_the_balances_and_list_everywhere(
        make_app: Callable[..., Flask], make_key: Callable[..., str], runtime_url: str,
        database_url: str, on_worker: Callable[[str], str]) -> None:
    """A worker draws a table's line ids in a range of its own, above the coordinator's:
    read in id order, the balances after a round settled through the worker outlived
    every later round's settled through the coordinator, and the next settle named
    breaks that were none (migration 0035). Lists read through one node missed rounds
    settled through another, until its own transaction count passed theirs."""
    # The coordinator's address even where TEST_ENTRY_NODE moves the suite's apps.
    entries = [make_app(**PATIENT, database_url=runtime_url),
               make_app(**PATIENT, database_url=on_worker(runtime_url),
                        migrations_database_url=on_worker(database_url))]
    operator = f"op-{uuid.uuid4().hex[:10]}"
    headers = {"Authorization": f"Bearer {make_key('admin', operator_id=operator)}"}
    table = f"turns-{uuid.uuid4().hex[:10]}"
    balances = {p["player_id"]: "100000" for p in EX_000["players"]}
    settled = []
    for turn in range(6):
        answer = entries[turn % 2].test_client().post(
            "/v1/rounds", json=round_request(EX_000, table, balances=balances),
            headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
        assert answer.status_code == 201, answer.get_json()
        body = answer.get_json()
        assert body["balance_breaks"] == [], (turn, body["balance_breaks"])
        balances = {p["player_id"]: p["balance_after"] for p in body["players"]}
        settled.append(body)
    player = EX_000["players"][0]["player_id"]
    amounts = [Decimal(line["amount"]) for body in settled for line in body["lines"]
               if line["account"] == player]
    for app in entries:
        assert [r["round_id"] for r in _walk(app, "/v1/rounds", headers, table_id=table)] \
            == [body["round_id"] for body in reversed(settled)]
        # The player's lines oldest first, each round's in turn, the total running on.
        lines = _walk(app, f"/v1/players/{player}/ledger", headers, table_id=table)
        assert [line["round_id"] for line in lines] == [
            body["round_id"] for body in settled for line in body["lines"]
            if line["account"] == player]
        assert [Decimal(line["running_total"]) for line in lines] == [
            sum(amounts[:n + 1]) for n in range(len(amounts))]


def test_a_worker_reads_the_schemas_revision_and_answers_ready(
        make_app: Callable[..., Flask], runtime_url: str, database_url: str,
        on_worker: Callable[[str], str]) -> None:
    app = make_app(database_url=on_worker(runtime_url),
                   migrations_database_url=on_worker(database_url), migrate_on_start=True)
    answer = app.test_client().get("/readyz")
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["schema"] == sorted(app.config["SCHEMA_HEADS"])


def test_a_workers_database_is_never_migrated(database_url: str,
                                              on_worker: Callable[[str], str]) -> None:
    with pytest.raises(CitusWorker, match="migrate the coordinator"):
        upgrade(on_worker(database_url))
    assert migrate_unless_worker(on_worker(database_url)) is False
