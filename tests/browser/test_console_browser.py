"""A person's walk through the console and the docs in headless Chromium.

Each page's numbers are read off the screen and compared with what the API answers for
the same key; every page is saved as a screenshot (see conftest.py).
"""

from __future__ import annotations

import re
import time
import uuid
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from flask import Flask

from tests.browser.conftest import DESK, PHONE, VIEWER_ZONE
from tests.e2e.test_access import round_request
from tests.worked_examples import EX_004
from tests.worked_examples import round_request as worked_request

pytest.importorskip("selenium", reason="selenium is not installed: pip install -e '.[dev]'")

from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT_S = 60  # an upper bound on a condition that normally holds in well under a second

QIANG21 = {"ruleset": "qiang21", "stake": "100", "players": [
    {"player_id": "B", "balance": "10000", "banker": True, "cards": ["Kh", "7d"]},
    {"player_id": "P1", "balance": "10000", "cards": ["As", "Kd"], "bet_multiple": 2},
    {"player_id": "P2", "balance": "10000", "cards": ["9c", "8s"], "bet_multiple": 3},
    {"player_id": "P3", "balance": "10000", "cards": ["5h", "9d", "Kc"], "bet_multiple": 1},
    {"player_id": "P4", "balance": "10000", "cards": ["2s", "3c", "4d", "5c", "6h"],
     "bet_multiple": 4}]}
ERBAGANG = {"ruleset": "erbagang", "stake": "10", "players": [
    {"player_id": "B", "balance": "1000", "banker": True, "tiles": ["3筒", "5筒"]},
    {"player_id": "P1", "balance": "1000", "tiles": ["白板", "9筒"], "bet_multiple": 1},
    {"player_id": "P2", "balance": "1000", "tiles": ["4p", "4p"], "bet_multiple": 2},
    {"player_id": "P3", "balance": "1000", "tiles": ["3p", "5p"], "bet_multiple": 1}]}


def settle(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post("/v1/rounds", json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.get_data(as_text=True)
    answer: dict[str, Any] = response.get_json()
    return answer


def wait(driver: Any) -> WebDriverWait:
    return WebDriverWait(driver, WAIT_S)


def sign_in(driver: Any, base: str, key: str) -> None:
    driver.get(f"{base}/console/sign-in")
    field = wait(driver).until(EC.presence_of_element_located((By.ID, "key")))
    field.send_keys(key)
    field.send_keys(Keys.ENTER)
    try:
        wait(driver).until(EC.presence_of_element_located((By.CSS_SELECTOR, "nav .who")))
    except TimeoutException:
        raise AssertionError(f"not signed in at {driver.current_url}: "
                             f"{driver.find_element(By.TAG_NAME, 'main').text[:300]}") from None


def cell_texts(driver: Any, selector: str) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]


@pytest.fixture(scope="module")
def example(api_module: Any) -> dict[str, Any]:
    """A table with the 000 worked example, a reversal of a copy, both banker games, the
    004 example (fees: a winner has two lines) and its reversal, and an override round."""
    table = f"browser-{uuid.uuid4().hex[:10]}"
    first = settle(api_module, round_request(table))
    second = settle(api_module, round_request(table))
    reversal = reverse(api_module, second["round_id"], "dealt twice")
    qiang = settle(api_module, {**QIANG21, "table_id": table})
    erba = settle(api_module, {**ERBAGANG, "table_id": table})
    names = {p["player_id"]: f"{p['player_id']}-{table[-4:]}" for p in EX_004["players"]}
    capped = settle(api_module, worked_request(EX_004, table, names=names))
    capped_reversal = reverse(api_module, capped["round_id"], "wrong stake")
    override = round_request(table)
    override["ruleset"] = {"preset": "bonus3", "overrides": {"fee_rate": "0.03"}}
    overridden = settle(api_module, override)
    return {"table": table, "round": first, "reversed": second, "reversal": reversal,
            "qiang21": qiang, "erbagang": erba, "capped": capped,
            "capped_reversal": capped_reversal, "winner": names["C"],
            "override": overridden}


def reverse(api: Any, round_id: str, reason: str) -> dict[str, Any]:
    response = api.post(f"/v1/rounds/{round_id}/reversal", json={"reason": reason},
                        headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.get_data(as_text=True)
    answer: dict[str, Any] = response.get_json()
    return answer


@pytest.fixture(scope="module")
def api_module(app: Flask) -> Any:
    from tests.e2e.conftest import ContractClient

    return ContractClient(app.test_client())


def test_sign_in_and_walk_every_page(browser, live_url, admin_key, api_module, example, shoot):
    table = example["table"]
    browser.get(f"{live_url}/console/sign-in")
    shoot(browser, "01-sign-in")
    sign_in(browser, live_url, admin_key)
    assert browser.current_url == f"{live_url}/console/tables"
    shoot(browser, "02-tables")

    browser.find_element(By.LINK_TEXT, table).click()
    wait(browser).until(EC.presence_of_element_located((By.ID, "rounds")))
    listed = api_module.get(f"/v1/rounds?table_id={table}").get_json()["items"]
    rows = browser.find_elements(By.CSS_SELECTOR, "#rounds tbody tr")
    assert len(rows) == len(listed) == 8
    head = api_module.get(f"/v1/rounds/{listed[0]['round_id']}").get_json()["chain"]
    chain_text = browser.find_element(By.ID, "head-h").find_element(By.XPATH, "..").text
    for value in head.values():
        assert str(value) in chain_text
    browser.find_element(By.CSS_SELECTOR, "#verify-h ~ form button").click()
    result = wait(browser).until(EC.presence_of_element_located((By.ID, "verify-result")))
    assert "Verified: no difference" in result.text and "8 rounds" in result.text
    shoot(browser, "03-table-verified")

    round_id = example["round"]["round_id"]
    browser.get(f"{live_url}/console/rounds/{round_id}")
    stored = api_module.get(f"/v1/rounds/{round_id}").get_json()
    amounts = cell_texts(browser, "#money td[data-field=amount]")
    assert amounts == [p["amount"] for p in stored["players"]] == ["8205", "-3205", "-5000"]
    # "Payable (scaled)" at the ruleset's precision (0), the exact value on hover.
    payable = browser.find_element(By.CSS_SELECTOR, "#money td[data-field=payable] .exact")
    assert payable.text == "8205"
    assert payable.get_attribute("title") == f"exactly {stored['players'][0]['payable']}"
    points = cell_texts(browser, "#players td[data-field=points]")
    assert points == [str(p["points"]) for p in stored["players"]]
    matrix = browser.find_element(By.ID, "matrix").text
    assert "25" in matrix and "-14" in matrix
    red = browser.find_elements(By.CSS_SELECTOR, "#players .card.red")
    assert red and red[0].value_of_css_property("color") == "rgba(192, 22, 44, 1)"
    bonuses = cell_texts(browser, "details.pair li.bonus")
    assert "row_bonus.middle.straight_flush: 5" in bonuses
    shoot(browser, "04-round-000")

    browser.get(f"{live_url}/console/rounds/{example['reversal']['round_id']}")
    browser.find_element(By.ID, "reverses").click()
    wait(browser).until(EC.presence_of_element_located((By.ID, "reversed-by")))
    shoot(browser, "05-round-reversed")

    for game in ("qiang21", "erbagang"):
        answered = example[game]
        browser.get(f"{live_url}/console/rounds/{answered['round_id']}")
        assert cell_texts(browser, "#money td[data-field=amount]") == [
            p["amount"] for p in answered["players"]]
        assert browser.find_elements(By.CSS_SELECTOR, "#comparisons tbody tr")
        shoot(browser, f"06-round-{game}")

    browser.get(f"{live_url}/console/players/A?table_id={table}")
    ledger = api_module.get(f"/v1/players/A/ledger?table_id={table}").get_json()["items"]
    assert cell_texts(browser, "#ledger td[data-field=running_total]") == [
        line["running_total"] for line in ledger]
    assert browser.find_element(By.ID, "balance-chart").is_displayed()
    shoot(browser, "07-player")

    browser.get(f"{live_url}/console/tables/{table}/reconciliation")
    assert browser.find_element(By.CSS_SELECTOR, "dd[data-field=rounds]").text == "8"
    shoot(browser, "08-reconciliation")


def test_a_wrong_key_stays_on_the_sign_in_page(browser, live_url, admin_key, shoot):
    browser.get(f"{live_url}/console/sign-in")
    field = browser.find_element(By.ID, "key")
    field.send_keys(admin_key[:-3] + "zzz")
    field.send_keys(Keys.ENTER)
    alert = wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".error")))
    assert "Not signed in" in alert.text
    assert "/console/sign-in" in browser.current_url and admin_key not in browser.current_url
    shoot(browser, "09-wrong-key")


def test_an_expired_session_is_sent_to_sign_in(browser, live_url, admin_key, app, shoot):
    sign_in(browser, live_url, admin_key)
    cookie = browser.get_cookie("console_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    serializer = app.session_interface.get_signing_serializer(app)
    state = serializer.loads(cookie["value"])
    state["expires"] = int(time.time()) - 1
    browser.delete_cookie("console_session")
    browser.add_cookie({"name": "console_session", "value": serializer.dumps(state),
                        "path": "/console", "httpOnly": True, "sameSite": "Strict"})
    browser.get(f"{live_url}/console/tables")
    notice = wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".notice")))
    assert "expired" in notice.text and "/console/sign-in" in browser.current_url
    shoot(browser, "10-expired")


def test_another_operators_round_is_the_404_page(browser, live_url, make_key, app, shoot):
    from tests.e2e.conftest import ContractClient

    other = ContractClient(app.test_client()).with_key(
        make_key("admin", operator_id=f"other-{uuid.uuid4().hex[:6]}"))
    theirs = settle(other, round_request(f"theirs-{uuid.uuid4().hex[:6]}"))
    sign_in(browser, live_url, make_key("admin"))
    browser.get(f"{live_url}/console/rounds/{theirs['round_id']}")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
    assert theirs["table_id"] not in browser.page_source
    shoot(browser, "11-other-operator-404")


def test_a_key_without_reconcile_read_lands_on_a_page_it_may_see(browser, live_url, make_key,
                                                                  example, shoot):
    sign_in(browser, live_url, make_key("rounds:read"))
    assert browser.current_url == f"{live_url}/console/rounds"
    assert browser.find_element(By.TAG_NAME, "h1").text == "Rounds"
    assert example["round"]["round_id"][:8] in browser.find_element(By.ID, "rounds").text
    nav = browser.find_element(By.TAG_NAME, "nav").text
    assert "Tables" not in nav and "Audit" not in nav
    shoot(browser, "12-rounds-read-landing")
    # A page outside the key's scopes is a 403 whose way back is a page the key may see.
    browser.get(f"{live_url}/console/tables")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Forbidden"
    shoot(browser, "12-forbidden")
    browser.find_element(By.ID, "back").click()
    wait(browser).until(EC.url_to_be(f"{live_url}/console/rounds"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Rounds"


def test_a_key_with_only_ledger_read_lands_on_the_player_form(browser, live_url, make_key,
                                                                example, shoot):
    sign_in(browser, live_url, make_key("ledger:read"))
    assert browser.current_url == f"{live_url}/console/players"
    field = browser.find_element(By.ID, "player_id")
    field.send_keys("A" + Keys.ENTER)
    wait(browser).until(EC.presence_of_element_located((By.ID, "ledger")))
    assert browser.current_url.startswith(f"{live_url}/console/players/A")
    shoot(browser, "12-ledger-read-landing")


def test_keyboard_only(browser, live_url, admin_key, example):
    browser.get(f"{live_url}/console/sign-in")
    # The key field takes the focus (autofocus runs at a rendering update, which may come
    # after the load event): wait for it, then type, Enter.
    wait(browser).until(lambda b: b.switch_to.active_element.get_attribute("id") == "key",
                        "the key field never took the focus")
    active = browser.switch_to.active_element
    active.send_keys(admin_key + Keys.ENTER)
    wait(browser).until(EC.url_to_be(f"{live_url}/console/tables"))
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    skip = browser.switch_to.active_element
    assert skip.text == "Skip to content"
    skip.send_keys(Keys.ENTER)
    table = example["table"]
    for _ in range(60):  # tab through the page until the example's table link has the focus
        browser.switch_to.active_element.send_keys(Keys.TAB)
        if browser.switch_to.active_element.text == table:
            break
    else:
        raise AssertionError("tabbing never reached the table's link")
    outline = browser.switch_to.active_element.value_of_css_property("outline-style")
    assert outline != "none", "the focused link shows no focus ring"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait(browser).until(EC.url_contains(f"/console/tables/{table}"))
    for _ in range(80):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        if browser.switch_to.active_element.text == "Verify":
            break
    else:
        raise AssertionError("tabbing never reached the Verify button")
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    result = wait(browser).until(EC.presence_of_element_located((By.ID, "verify-result")))
    assert "Verified" in result.text


def test_docs_try_it_out_with_a_bearer_key(browser, live_url, admin_key, example, shoot):
    browser.get(f"{live_url}/docs")
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".swagger-ui .info")))
    shoot(browser, "13-docs")
    browser.find_element(By.CSS_SELECTOR, "button.authorize").click()
    field = wait(browser).until(EC.presence_of_element_located(
        (By.CSS_SELECTOR, ".auth-container input[type=text], .auth-container input")))
    field.send_keys(admin_key)
    browser.find_element(By.CSS_SELECTOR, ".auth-btn-wrapper button.authorize").click()
    browser.find_element(By.CSS_SELECTOR, ".auth-btn-wrapper button.btn-done").click()
    block = wait(browser).until(EC.presence_of_element_located(
        (By.CSS_SELECTOR, "[id$='-getRound']")))
    browser.execute_script("arguments[0].scrollIntoView()", block)
    block.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
    wait(browser).until(EC.element_to_be_clickable(
        (By.CSS_SELECTOR, "[id$='-getRound'] .try-out__btn"))).click()
    browser.find_element(By.CSS_SELECTOR, "[id$='-getRound'] input[placeholder='round_id']") \
        .send_keys(example["round"]["round_id"])
    browser.find_element(By.CSS_SELECTOR, "[id$='-getRound'] .execute").click()
    status = wait(browser).until(EC.presence_of_element_located(
        (By.CSS_SELECTOR,
         "[id$='-getRound'] .live-responses-table tbody .response-col_status")))
    assert status.text.startswith("200"), status.text
    body = browser.find_element(By.CSS_SELECTOR, "[id$='-getRound'] .live-responses-table")
    assert '"8205"' in body.text
    shoot(browser, "14-docs-try-it-out")


def pages(live_url: str, example: dict[str, Any]) -> list[tuple[str, str]]:
    table = example["table"]
    rounds = {name: f"/console/rounds/{example[name]['round_id']}" for name in (
        "round", "reversed", "reversal", "qiang21", "erbagang", "capped", "capped_reversal",
        "override")}
    return [("tables", "/console/tables"), ("table", f"/console/tables/{table}"),
            ("recent", "/console/rounds"),
            *((f"round-{name}", path) for name, path in rounds.items()),
            ("player", f"/console/players/{example['winner']}?table_id={table}"),
            ("reconciliation", f"/console/tables/{table}/reconciliation"),
            ("audit", "/console/audit")]


FITS = """
const page = document.documentElement.clientWidth;
const wide = [];
const whole = document.documentElement.scrollWidth;
if (whole > page) wide.push('page ' + whole);
for (const t of document.querySelectorAll('table')) {
  const box = t.parentElement.getBoundingClientRect();
  if (t.scrollWidth > Math.ceil(box.width) || t.getBoundingClientRect().right > page + 0.5)
    wide.push((t.id || t.className || 'table') + ' ' + t.scrollWidth + ' in ' + box.width);
}
return {page: page, wide: wide};
"""

AMOUNTS_SEEN = """
const page = document.documentElement.clientWidth;
const out = [];
for (const e of document.querySelectorAll('[data-field=amount]')) {
  const r = e.getBoundingClientRect();
  out.push({text: e.textContent.trim(), shown: r.width > 0 && r.left >= 0 && r.right <= page});
}
return out;
"""


def test_every_page_fits_1366_and_the_amount_shows_at_390(browser, live_url, admin_key,
                                                          example, shoot):
    sign_in(browser, live_url, admin_key)
    try:
        for name, path in pages(live_url, example):
            browser.set_window_size(*DESK)
            browser.get(f"{live_url}{path}")
            fits = browser.execute_script(FITS)
            assert fits["page"] >= 1300 and not fits["wide"], f"{path} at 1366: {fits}"
            shoot(browser, f"20-{name}", DESK[0])
            browser.set_window_size(*PHONE)
            browser.get(f"{live_url}{path}")
            width = browser.execute_script("return document.documentElement.clientWidth")
            page = browser.execute_script("return document.documentElement.scrollWidth")
            assert page <= width, f"{path} is {page}px wide in a {width}px window"
            amounts = browser.execute_script(AMOUNTS_SEEN)
            assert all(a["shown"] for a in amounts), f"{path} at 390 hides an amount: {amounts}"
            if name.startswith("round-") or name == "player":
                assert amounts, f"{path} shows no amount"
            shoot(browser, f"20-{name}", PHONE[0])
    finally:
        browser.set_window_size(*DESK)


def test_times_show_to_the_second_in_the_viewers_zone_with_the_iso_text_on_hover(
        browser, live_url, admin_key, api_module, example):
    sign_in(browser, live_url, admin_key)
    round_id = example["round"]["round_id"]
    browser.get(f"{live_url}/console/rounds/{round_id}")
    stored = api_module.get(f"/v1/rounds/{round_id}").get_json()["created_at"]
    shown = wait(browser).until(EC.presence_of_element_located(
        (By.CSS_SELECTOR, "time[data-local]")))
    assert shown.get_attribute("title") == stored
    local = datetime.fromisoformat(stored).astimezone(ZoneInfo(VIEWER_ZONE))
    assert shown.text == local.strftime("%Y-%m-%d %H:%M:%S GMT+8")
    browser.get(f"{live_url}/console/tables/{example['table']}")
    times = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#rounds time")]
    assert len(times) == 8 and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d GMT\+8", t)
                                   for t in times), times


def test_a_reversal_reads_top_down_and_its_reason_shows_on_the_original(
        browser, live_url, admin_key, api_module, example, shoot):
    sign_in(browser, live_url, admin_key)
    browser.get(f"{live_url}/console/rounds/{example['reversed']['round_id']}")
    assert browser.find_element(By.ID, "reversed-reason").text == "dealt twice"
    browser.get(f"{live_url}/console/rounds/{example['capped_reversal']['round_id']}")
    rows = browser.find_elements(By.CSS_SELECTOR, "#lines tbody tr")
    seen: dict[str, str] = {}
    for row in rows:
        account = row.find_element(By.CSS_SELECTOR, "td:nth-child(2)").text
        before = row.find_element(By.CSS_SELECTOR, "[data-field=balance_before]").text
        after = row.find_element(By.CSS_SELECTOR, "[data-field=balance_after]").text
        if account in seen:
            assert before == seen[account], f"{account}'s balance jumps: {seen[account]} → {before}"
        if after != "—":
            seen[account] = after
    winner = example["winner"]
    assert [r.find_element(By.CSS_SELECTOR, "td:nth-child(2)").text for r in rows].count(
        winner) == 2, "the winner's win and fee lines are both mirrored"
    shoot(browser, "21-reversal-top-down")
    browser.get(f"{live_url}/console/players/{winner}?table_id={example['table']}")
    ledger = browser.find_elements(By.CSS_SELECTOR, "#ledger tbody tr")
    chain = [(r.find_element(By.CSS_SELECTOR, "[data-field=balance_before]").text,
              r.find_element(By.CSS_SELECTOR, "[data-field=balance_after]").text) for r in ledger]
    assert all(chain[i][1] == chain[i + 1][0] for i in range(len(chain) - 1)), chain
    api = api_module.get(f"/v1/players/{winner}/ledger?table_id={example['table']}").get_json()
    assert cell_texts(browser, "#ledger td[data-field=running_total]")[-1] == \
        api["items"][-1]["running_total"]


def test_money_keeps_one_precision_per_page_and_reconciliation_defines_every_figure(
        browser, live_url, admin_key, example, shoot):
    sign_in(browser, live_url, admin_key)
    browser.get(f"{live_url}/console/rounds/{example['capped']['round_id']}")
    # Every money figure at precision 2 (points, in the second column, are whole).
    figures = cell_texts(browser, "#money td.num:not(:nth-child(2)), #lines td[data-field=amount],"
                                  " #lines td[data-field^=balance], [data-field^=house-]")
    money = [f for f in figures if f != "—"]
    assert money and all(re.fullmatch(r"-?\d+\.\d\d", f) for f in money), figures
    assert browser.find_element(By.CSS_SELECTOR, "[data-field=house-fees]").text == "6.00"
    browser.get(f"{live_url}/console/tables/{example['table']}/reconciliation")
    shown = cell_texts(browser, "#figures dd.num-left")
    assert len({len(t.partition(".")[2]) for t in shown}) == 1, shown
    for link in browser.find_elements(By.CSS_SELECTOR, "#figures dt a, #games th a"):
        target = link.get_attribute("href").partition("#")[2]
        definition = browser.find_element(By.ID, target)
        assert definition.tag_name == "dt" and definition.text, target
    assert browser.find_element(By.ID, "def-reversal_total").text == "reversal total"
    tables = browser.find_elements(By.CSS_SELECTOR, "#games thead th")
    assert len(tables) == len(browser.find_elements(By.CSS_SELECTOR, "#games th a"))


def test_an_override_round_names_its_preset_and_overrides(browser, live_url, admin_key,
                                                          example, shoot):
    answer = example["override"]["ruleset"]
    assert (answer["preset"], answer["overrides"]) == ("bonus3", {"fee_rate": "0.03"})
    sign_in(browser, live_url, admin_key)
    browser.get(f"{live_url}/console/rounds/{example['override']['round_id']}")
    assert browser.find_element(By.CSS_SELECTOR, "dd[data-field=ruleset]").text == \
        "bonus3 + fee_rate 0.03"
    shoot(browser, "22-override-round")
