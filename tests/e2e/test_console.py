"""The console (/console) and the docs (/docs) through Flask's test client, on PostgreSQL.

Browser-level checks (what a person sees, keyboard use, screenshots) are in
tests/browser/; these check the session, access, CSRF and that each page shows the
numbers the API answers.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from flask import Flask

from app.services.keys import parse_token, revoke_key
from app.services.signing import receipt_statement
from tests.e2e.test_access import round_request

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def new_table() -> str:
    return f"console-{uuid.uuid4().hex[:12]}"


def settle(api: Any, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    client = api if token is None else api.with_key(token)
    response = client.post("/v1/rounds", json=body,
                           headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.get_data(as_text=True)
    answer: dict[str, Any] = response.get_json()
    return answer


def browser(app: Flask) -> Any:
    """Return a test client that sends no Authorization header, as a browser would not."""
    client = app.test_client()
    client.environ_base.pop("HTTP_AUTHORIZATION", None)
    return client


def csrf_of(client: Any, path: str = "/console/sign-in") -> str:
    page = client.get(path)
    found = CSRF.search(page.get_data(as_text=True))
    assert found, page.get_data(as_text=True)
    return found.group(1)


def sign_in(client: Any, token: str, next_: str = "") -> Any:
    return client.post("/console/sign-in",
                       data={"key": token, "csrf": csrf_of(client), "next": next_})


def text(response: Any) -> str:
    body: str = response.get_data(as_text=True)
    return body


def test_docs_serve_swagger_ui_from_the_package_with_no_outside_url(app):
    client = browser(app)
    page = client.get("/docs")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = text(page)
    assert "/docs/assets/swagger-ui-bundle.js" in html and 'data-spec="/openapi.yaml"' in html
    assert not re.search(r'(src|href)="(https?:)?//', html), "the docs load nothing from outside"
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    bundle = client.get("/docs/assets/swagger-ui-bundle.js")
    assert bundle.status_code == 200 and b"SwaggerUIBundle" in bundle.get_data()
    assert client.get("/docs/assets/swagger-ui.css").status_code == 200
    init = client.get("/docs/assets/docs-init.js")
    assert init.status_code == 200 and b"requestInterceptor" in init.get_data()
    assert client.get("/docs/assets/index.html").status_code == 404


def test_pages_need_a_signed_in_session_and_send_you_back_after_sign_in(app, admin_key):
    client = browser(app)
    page = client.get("/console/tables?x=1")
    assert page.status_code == 302
    assert page.headers["Location"].startswith("/console/sign-in?next=")
    signed = sign_in(client, admin_key, next_="/console/tables?x=1")
    assert signed.status_code == 303 and signed.headers["Location"] == "/console/tables?x=1"


def test_sign_in_sets_a_strict_httponly_expiring_cookie_without_the_key(app, admin_key):
    client = browser(app)
    signed = sign_in(client, admin_key)
    assert signed.status_code == 303 and signed.headers["Location"] == "/console/tables"
    cookie = signed.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
    assert "Expires=" in cookie
    # The secret is URL-safe base64 and may itself hold "_": parse it as the service does.
    _, secret = parse_token(admin_key)
    assert secret not in cookie and admin_key not in signed.headers.get("Location", "")
    assert client.get("/console/tables").status_code == 200


@pytest.mark.parametrize(("path", "opened"), [
    ("/console/tables", True), ("/console", True), ("/console/", True),
    ("/console?next=/v1", True), ("/v1/rounds", False), ("/healthz", False),
    ("/consoled", False), ("/docs", False), ("/v1/console", False)])
def test_only_the_consoles_pages_open_its_session(app, admin_key, path, opened):
    from flask import session
    from flask.sessions import NullSession

    client = browser(app)
    sign_in(client, admin_key)
    cookie = client.get_cookie("console_session", path="/console")
    assert cookie is not None
    # Sent even where a browser would not (the cookie's path is /console): only the
    # console's pages read it; elsewhere the session is null and cannot be written.
    with app.test_request_context(path, headers={"Cookie": f"console_session={cookie.value}"}):
        assert isinstance(session, NullSession) is not opened
        if opened:
            assert session.get("key_id")
        else:
            with pytest.raises(RuntimeError):
                session["key_id"] = "x"


def test_the_api_sets_no_cookie_for_a_client_that_holds_the_consoles(app, api, admin_key):
    client = browser(app)
    sign_in(client, admin_key)
    cookie = client.get_cookie("console_session", path="/console")
    assert cookie is not None
    # Sent to the API too, as a client that ignores the cookie's path might.
    client.set_cookie("console_session", cookie.value, path="/")
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {admin_key}"
    answer = client.post("/v1/rounds", json=round_request(new_table()),
                         headers={"Idempotency-Key": uuid.uuid4().hex})
    assert answer.status_code == 201, answer.get_data(as_text=True)
    assert "Set-Cookie" not in answer.headers and "Cookie" not in answer.headers.get("Vary", "")


def test_a_wrong_key_is_refused_on_the_sign_in_page(app, admin_key):
    client = browser(app)
    wrong = admin_key[:-4] + ("aaaa" if not admin_key.endswith("aaaa") else "bbbb")
    page = sign_in(client, wrong)
    assert page.status_code == 401 and "Not signed in" in text(page)
    assert client.get("/console/tables").status_code == 302


def test_every_post_needs_the_sessions_csrf_token(app, admin_key):
    client = browser(app)
    csrf_of(client)
    refused = client.post("/console/sign-in", data={"key": admin_key, "csrf": "forged"})
    assert refused.status_code == 400 and "Form expired" in text(refused)
    assert client.post("/console/sign-in", data={"key": admin_key}).status_code == 400
    sign_in(client, admin_key)
    assert client.post("/console/sign-out", data={}).status_code == 400
    assert client.get("/console/tables").status_code == 200


def test_a_cookie_copied_before_sign_out_opens_nothing_after_it(app, admin_key):
    client = browser(app)
    sign_in(client, admin_key)
    assert client.get("/console/tables").status_code == 200
    copied = client.get_cookie("console_session", path="/console")
    assert copied is not None
    signed_out = client.post("/console/sign-out", data={"csrf": csrf_of(client, "/console/tables")})
    assert signed_out.status_code == 303
    thief = browser(app)
    thief.set_cookie("console_session", copied.value, path="/console")
    refused = thief.get("/console/tables")
    assert refused.status_code == 302 and "/console/sign-in" in refused.headers["Location"]
    # Signing in again opens a new session; the old one stays ended.
    sign_in(client, admin_key)
    assert client.get("/console/tables").status_code == 200
    assert thief.get("/console/tables").status_code == 302


def test_the_console_cookie_is_secure_unless_the_service_listens_on_loopback():
    from app.config import Settings

    assert Settings.from_env({}).console_cookie_secure is False
    assert Settings.from_env({"HOST": "0.0.0.0"}).console_cookie_secure is True
    assert Settings.from_env({"HOST": "0.0.0.0",
                              "CONSOLE_COOKIE_SECURE": "false"}).console_cookie_secure is False


def test_an_expired_session_goes_back_to_sign_in(app, admin_key):
    client = browser(app)
    sign_in(client, admin_key)
    with client.session_transaction("/console/tables") as session:
        assert session["key_id"]
        session["expires"] = int(time.time()) - 1
    page = client.get("/console/tables")
    assert page.status_code == 302 and "/console/sign-in" in page.headers["Location"]
    again = client.get(page.headers["Location"])
    assert "Your session has expired" in text(again)


def test_a_revoked_key_ends_its_console_sessions_at_once(app, make_key, owner_uows):
    token = make_key("admin")
    client = browser(app)
    sign_in(client, token)
    assert client.get("/console/tables").status_code == 200
    revoke_key(owner_uows, parse_token(token)[0])
    assert client.get("/console/tables").status_code == 302


def test_a_page_outside_the_keys_scopes_is_a_403_page(app, api, make_key):
    table = new_table()
    round_id = settle(api, round_request(table))["round_id"]
    client = browser(app)
    sign_in(client, make_key("rounds:read"))
    refused = client.get("/console/tables")
    assert refused.status_code == 403 and refused.mimetype == "text/html"
    assert "reconcile:read" in text(refused) and table not in text(refused)
    assert client.get(f"/console/rounds/{round_id}").status_code == 200
    assert client.get("/console/players/A").status_code == 403


@pytest.mark.parametrize(("scopes", "landing"), [
    (("admin",), "/console/tables"), (("reconcile:read",), "/console/tables"),
    (("rounds:read",), "/console/rounds"), (("ledger:read", "rounds:read"), "/console/rounds"),
    (("ledger:read",), "/console/players"), (("rounds:write",), "/console/no-pages")])
def test_a_key_lands_on_the_first_page_its_scopes_open(app, make_key, scopes, landing):
    client = browser(app)
    signed = sign_in(client, make_key(*scopes))
    assert signed.status_code == 303 and signed.headers["Location"] == landing
    assert client.get("/console").headers["Location"] == landing
    page = client.get(landing)
    assert page.status_code == (403 if landing.endswith("no-pages") else 200)
    refused = client.get("/console/audit")
    if refused.status_code == 403:  # its way back is a page the key may open
        back = re.search(r'<a href="([^"]+)" id="back">', text(refused))
        assert back is None or (back[1] == landing and back[1] != "/console/audit")


def test_a_player_form_opens_the_ledger_and_refuses_a_bad_id(app, make_key):
    client = browser(app)
    sign_in(client, make_key("ledger:read"))
    found = client.get("/console/players", query_string={"player_id": "A"})
    assert found.status_code == 302 and found.headers["Location"] == "/console/players/A"
    bad = client.get("/console/players", query_string={"player_id": "<b>"})
    assert bad.status_code == 422 and "&lt;b&gt;" in text(bad) and "<b>" not in text(bad)


def test_another_operators_round_is_a_404_page(app, api, make_key):
    other = f"other-{uuid.uuid4().hex[:8]}"
    theirs = settle(api, round_request(new_table()), make_key("admin", operator_id=other))
    client = browser(app)
    sign_in(client, make_key("admin"))
    page = client.get(f"/console/rounds/{theirs['round_id']}")
    assert page.status_code == 404 and page.mimetype == "text/html"
    assert theirs["table_id"] not in text(page)
    assert client.get("/console/rounds/not-a-uuid").status_code == 404


def shows(html: str, field: str, value: object) -> bool:
    """Say whether a cell marked ``data-field=field`` shows exactly ``value``."""
    return re.search(rf'data-field="{re.escape(field)}"[^>]*>{re.escape(str(value))}<',
                     html) is not None


def test_each_page_shows_what_the_api_answers(app, api, admin_key):
    table = new_table()
    first = settle(api, round_request(table))
    reversal = api.post(f"/v1/rounds/{first['round_id']}/reversal", json={"reason": "test"},
                        headers={"Idempotency-Key": uuid.uuid4().hex}).get_json()
    client = browser(app)
    sign_in(client, admin_key)

    tables = text(client.get("/console/tables"))
    assert f"/console/tables/{table}" in tables

    page = client.get(f"/console/tables/{table}")
    html = text(page)
    assert page.status_code == 200
    assert first["round_id"][:8] in html and reversal["round_id"][:8] in html
    listed = api.get(f"/v1/rounds?table_id={table}").get_json()["items"]
    assert html.count('<th scope="row" data-label="Round"><a href="/console/rounds/') == len(listed)
    head = listed[0]
    assert api.get(f"/v1/rounds/{head['round_id']}").get_json()["chain"]["content_hash"] in html

    only = text(client.get(f"/console/tables/{table}?kind=reversal"))
    assert reversal["round_id"][:8] in only and first["round_id"][:8] + "</a></th>" not in only
    bad = client.get(f"/console/tables/{table}?game=poker")
    assert bad.status_code == 422 and "game" in text(bad)

    round_page = text(client.get(f"/console/rounds/{first['round_id']}"))
    stored = api.get(f"/v1/rounds/{first['round_id']}").get_json()
    for player in stored["players"]:
        assert shows(round_page, "amount", player["amount"])
        assert shows(round_page, "points", player["points"])
    for pair in stored["pairs"]:
        for bonus in pair["bonuses"]:
            assert f'{bonus["name"]}: {bonus["points"]}' in round_page
    assert stored["chain"]["content_hash"] in round_page and stored["ruleset"]["hash"] in round_page
    # The receipt's signature, as the API signs it (Ed25519 is deterministic), and valid.
    chain = stored["chain"]
    assert f'<code class="hash">{chain["signature"]}</code>' in round_page
    assert f'<code class="hash">{chain["key_id"]}</code>' in round_page
    public = api.with_key(None).get("/v1/audit/public-key").get_json()
    statement = receipt_statement(stored["operator_id"], stored["table_id"], chain["seq"],
                                  chain["prev_hash"], chain["content_hash"])
    Ed25519PublicKey.from_public_bytes(base64.b64decode(public["public_key"])).verify(
        base64.b64decode(chain["signature"]), statement)
    assert f'/console/rounds/{reversal["round_id"]}' in round_page  # reversed by
    assert 'aria-label="A of hearts"' in round_page and 'class="card red"' in round_page
    back = text(client.get(f"/console/rounds/{reversal['round_id']}"))
    assert f'/console/rounds/{first["round_id"]}' in back  # reverses

    ledger = api.get(f"/v1/players/A/ledger?table_id={table}").get_json()["items"]
    player = text(client.get(f"/console/players/A?table_id={table}"))
    for line in ledger:
        assert shows(player, "running_total", line["running_total"])
    assert '<svg id="balance-chart"' in player and "<polyline" in player


def test_verify_and_reconciliation_of_a_table(app, api, admin_key):
    table = new_table()
    settle(api, round_request(table))
    client = browser(app)
    sign_in(client, admin_key)
    page = f"/console/tables/{table}"
    now = datetime.now(UTC)
    period = {"from": (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M"),
              "to": (now + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")}
    verified = client.post(f"{page}/verify", data={**period, "csrf": csrf_of(client, page)})
    assert verified.status_code == 200 and "Verified: no difference" in text(verified)
    assert "1 rounds in 1 chain(s)" in text(verified)
    too_long = client.post(f"{page}/verify", data={
        "from": "2020-01-01T00:00", "to": period["to"], "csrf": csrf_of(client, page)})
    assert too_long.status_code == 422 and "366 days" in text(too_long)

    report = text(client.get(f"{page}/reconciliation", query_string=period))
    iso = {k: v + ":00Z" for k, v in period.items()}
    expected = api.get("/v1/reconciliation", query_string={**iso, "table_id": table}).get_json()
    row = expected["tables"][0]
    for name in ("rounds", "won", "lost", "fees", "net"):
        assert shows(report, name, row[name])
    assert "0</strong> discrepancies" in report
    csv = client.get(f"{page}/reconciliation.csv", query_string=period)
    assert csv.mimetype == "text/csv" and "attachment" in csv.headers["Content-Disposition"]
    api_csv = api.get("/v1/reconciliation", query_string={**iso, "table_id": table},
                      headers={"Accept": "text/csv"})
    assert csv.get_data(as_text=True) == api_csv.get_data(as_text=True)


@pytest.mark.parametrize("target", ["//evil.example/console/", "https://evil.example/",
                                    "/console/\\evil"])
def test_sign_in_sends_you_only_to_console_pages(app, admin_key, target):
    client = browser(app)
    signed = sign_in(client, admin_key, next_=target)
    assert signed.headers["Location"] == "/console/tables"


@pytest.mark.parametrize("target", ["/console/\r\nSet-Cookie: a=b", "/console/\x00",
                                    "/console/\n", "/console/" + "a" * 3000])
def test_a_sign_in_link_with_a_control_character_or_too_long_is_refused(app, admin_key,
                                                                         target):
    client = browser(app)
    # In a URL, the service's own check of every query string answers first (422).
    shown = client.get("/console/sign-in", query_string={"next": target})
    assert shown.status_code in (400, 422) and "next" in text(shown)
    signed = sign_in(client, admin_key, next_=target)
    assert signed.status_code == 400 and "Location" not in signed.headers
    assert "Set-Cookie: a=b" not in str(signed.headers)


AUDIT = "/console/audit"


def take_and_download(client: Any) -> tuple[str, Any]:
    taken = client.post(f"{AUDIT}/checkpoints", data={"csrf": csrf_of(client, AUDIT)})
    assert taken.status_code == 303
    checkpoint_id = taken.headers["Location"].split("taken=")[1]
    page = text(client.get(taken.headers["Location"]))
    assert f"Checkpoint <code>{checkpoint_id}</code> taken" in page
    link = f"{AUDIT}/checkpoints/{checkpoint_id}.json"
    assert f'href="{link}"' in page
    return checkpoint_id, client.get(link)


def upload(client: Any, content: bytes, **fields: str) -> Any:
    return client.post(f"{AUDIT}/verify", content_type="multipart/form-data", data={
        "csrf": csrf_of(client, AUDIT), **fields,
        "checkpoint_file": (io.BytesIO(content), "checkpoint.json")})


def test_the_audit_page_takes_a_checkpoint_downloads_it_and_verifies_it_back(app, api,
                                                                            make_key):
    operator = f"audit-{uuid.uuid4().hex[:8]}"
    key = make_key("reconcile:read", operator_id=operator)
    tables = [new_table(), new_table()]
    for table in tables:
        settle(api, round_request(table), make_key("admin", operator_id=operator))
    client = browser(app)
    sign_in(client, key)
    checkpoint_id, download = take_and_download(client)
    assert download.status_code == 200 and download.mimetype == "application/json"
    assert "attachment" in download.headers["Content-Disposition"]
    kept = download.get_json()
    assert kept == api.with_key(key).get(f"/v1/audit/checkpoints/{checkpoint_id}").get_json()
    assert kept["tree_size"] == 2

    clean = upload(client, download.get_data())
    assert clean.status_code == 200, text(clean)
    assert (f"Checkpoint <code>{checkpoint_id}</code>: signature good, 2 rounds in 2 chain(s)"
            in text(clean))

    # One round per page: the page offers to go on, carrying the checkpoint and the cursor.
    paged = upload(client, download.get_data(), limit="1")
    assert "1 rounds in 1 chain(s)" in text(paged) and 'id="continue"' in text(paged)
    carried = {name: value for name, value in re.findall(
        r'<input type="hidden" name="(\w+)" value="([^"]*)">',
        text(paged).split('id="continue"')[1])}
    rest = client.post(f"{AUDIT}/verify", data={
        **{k: html.unescape(v) for k, v in carried.items()}})
    assert rest.status_code == 200 and "1 rounds in 1 chain(s)" in text(rest)
    assert 'id="continue"' not in text(rest)

    moved = {**kept, "heads": [{**kept["heads"][0], "seq": 2}, *kept["heads"][1:]]}
    forged = upload(client, json.dumps(moved).encode())
    assert forged.status_code == 200
    assert "1 finding(s)" in text(forged)
    assert "do not hash to the signed Merkle root" in text(forged)
    zeros = base64.b64encode(bytes(68)).decode()
    note = kept["note"].rstrip("\n").rsplit(" ", 1)[0] + f" {zeros}\n"
    unsigned = upload(client, json.dumps({**kept, "note": note}).encode())
    assert "not signed by any of the service&#39;s keys" in text(unsigned)


@pytest.mark.parametrize(("content", "named"), [
    (b"not json", "not valid JSON"),
    (b"[1]", "one JSON object"),
    (b"\xff{}", "not UTF-8"),
    (b'{"checkpoint_id": "x\\u0007"}', "checkpoint_id: "),
    (b'{"checkpoint_id": "x"}', "note: "),
    (b"", "choose the checkpoint file"),
])
def test_an_upload_that_is_not_a_checkpoint_is_a_422_naming_why(app, admin_key, content, named):
    client = browser(app)
    sign_in(client, admin_key)
    refused = upload(client, content)
    assert refused.status_code == 422 and named in text(refused)
    assert 'id="verify-error"' in text(refused)


@pytest.mark.parametrize("limit", ["0", "10001", "²", "1.5", "9" * 40])
def test_a_page_size_outside_1_to_10000_is_a_422_naming_limit(app, admin_key, limit):
    client = browser(app)
    sign_in(client, admin_key)
    _, download = take_and_download(client)
    refused = upload(client, download.get_data(), limit=limit)
    assert refused.status_code == 422 and "limit: must be a whole number from 1 to 10000" in text(
        refused)


def test_the_audit_page_needs_reconcile_read_and_shows_only_your_checkpoints(app, make_key):
    client = browser(app)
    sign_in(client, make_key("rounds:read"))
    assert client.get(AUDIT).status_code == 403
    other = browser(app)
    sign_in(other, make_key("admin", operator_id=f"other-{uuid.uuid4().hex[:8]}"))
    theirs, _ = take_and_download(other)
    mine = browser(app)
    sign_in(mine, make_key("admin"))
    assert theirs not in text(mine.get(AUDIT))
    assert mine.get(f"{AUDIT}/checkpoints/{theirs}.json").status_code == 404
    assert mine.get(f"{AUDIT}/checkpoints/not-a-uuid.json").status_code == 404
    assert mine.get(AUDIT, query_string={"cursor": "forged"}).status_code == 400


def test_a_reversals_round_page_shows_why_the_round_was_voided(app, api, admin_key):
    first = settle(api, round_request(new_table()))
    reason = f"dealt at the wrong table {uuid.uuid4().hex[:6]}"
    reversal = api.post(f"/v1/rounds/{first['round_id']}/reversal", json={"reason": reason},
                        headers={"Idempotency-Key": uuid.uuid4().hex}).get_json()
    assert reversal["reversal"]["reason"] == reason
    client = browser(app)
    sign_in(client, admin_key)
    page = text(client.get(f"/console/rounds/{reversal['round_id']}"))
    assert f'<span id="reversal-reason">{reason}</span>' in page
    assert 'id="reversal-reason"' not in text(client.get(f"/console/rounds/{first['round_id']}"))


def test_a_round_page_marks_its_breaks_and_a_players_table_history_holds_the_cash(
        app, api, admin_key):
    """Issue 41: the console marks a round's balance breaks and shows a player's history
    at a table as a running balance, rounds and cash movements in order."""
    table, tag = new_table(), uuid.uuid4().hex[:6]
    a, b = f"A-{tag}", f"B-{tag}"
    bought = api.post(f"/v1/tables/{table}/cash", headers={"Idempotency-Key": uuid.uuid4().hex},
                      json={"reason": "desk 3", "terms": {"ruleset": "bonus3", "stake": "100"},
                            "movements": [{"player_id": a, "kind": "buy_in", "amount": "900"},
                                          {"player_id": b, "kind": "buy_in", "amount": "1000"}]})
    assert bought.status_code == 201, bought.get_json()
    request = round_request(table)
    request["players"][0]["player_id"], request["players"][0]["balance"] = a, "1000"
    request["players"][1]["player_id"], request["players"][1]["balance"] = b, "1000"
    played = settle(api, request)
    assert [x["player_id"] for x in played["balance_breaks"]] == [a]
    client = browser(app)
    sign_in(client, admin_key)
    page = text(client.get(f"/console/rounds/{played['round_id']}"))
    assert 'id="balance-breaks"' in page and f'data-player="{a}"' in page
    cash_page = text(client.get(f"/console/rounds/{bought.get_json()['round_id']}"))
    assert '<p id="cash-reason">desk 3</p>' in cash_page
    assert 'id="balance-breaks"' not in cash_page
    history = text(client.get(f"/console/players/{b}?table_id={table}"))
    kinds = re.findall(r'<td data-label="Kind">(cash_in|win|loss|fee)</td>', history)
    assert kinds[0] == "cash_in" and len(kinds) >= 2
    totals = re.findall(r'data-field="running_total"[^>]*>([^<]+)<', history)
    assert totals[0] == "1000" and totals[-1] == played_balance(played, b)


def played_balance(played: dict[str, Any], player: str) -> str:
    return next(p["balance_after"] for p in played["players"] if p["player_id"] == player)
