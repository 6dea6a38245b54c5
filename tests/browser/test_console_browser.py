"""A person's walk through the console and the docs in headless Chromium.

Each page's numbers are read off the screen and compared with what the API answers for
the same key; every page is saved as a screenshot (see conftest.py).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from flask import Flask

from tests.e2e.test_access import round_request

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
    """A table with the 000 worked example, a reversal of a copy, and both banker games."""
    table = f"browser-{uuid.uuid4().hex[:10]}"
    first = settle(api_module, round_request(table))
    second = settle(api_module, round_request(table))
    reversal = api_module.post(f"/v1/rounds/{second['round_id']}/reversal",
                               json={"reason": "dealt twice"},
                               headers={"Idempotency-Key": uuid.uuid4().hex}).get_json()
    qiang = settle(api_module, {**QIANG21, "table_id": table})
    erba = settle(api_module, {**ERBAGANG, "table_id": table})
    return {"table": table, "round": first, "reversal": reversal, "qiang21": qiang,
            "erbagang": erba}


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
    assert len(rows) == len(listed) == 5
    head = api_module.get(f"/v1/rounds/{listed[0]['round_id']}").get_json()["chain"]
    chain_text = browser.find_element(By.ID, "head-h").find_element(By.XPATH, "..").text
    for value in head.values():
        assert str(value) in chain_text
    browser.find_element(By.CSS_SELECTOR, "#verify-h ~ form button").click()
    result = wait(browser).until(EC.presence_of_element_located((By.ID, "verify-result")))
    assert "Verified: no difference" in result.text and "5 rounds" in result.text
    shoot(browser, "03-table-verified")

    round_id = example["round"]["round_id"]
    browser.get(f"{live_url}/console/rounds/{round_id}")
    stored = api_module.get(f"/v1/rounds/{round_id}").get_json()
    amounts = cell_texts(browser, "#money td[data-field=amount]")
    assert amounts == [p["amount"] for p in stored["players"]] == ["8205", "-3205", "-5000"]
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
    assert browser.find_element(By.CSS_SELECTOR, "dd[data-field=rounds]").text == "5"
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


def test_a_key_without_the_scope_sees_the_403_page(browser, live_url, make_key, shoot):
    sign_in(browser, live_url, make_key("rounds:read"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Forbidden"
    shoot(browser, "12-forbidden")


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


def test_a_phone_sized_window_scrolls_tables_not_the_page(browser, live_url, admin_key,
                                                          example, shoot):
    sign_in(browser, live_url, admin_key)
    browser.set_window_size(390, 844)
    try:
        for name, path in (("15-phone-round", f"/console/rounds/{example['round']['round_id']}"),
                           ("16-phone-table", f"/console/tables/{example['table']}")):
            browser.get(f"{live_url}{path}")
            width = browser.execute_script("return document.documentElement.clientWidth")
            page = browser.execute_script("return document.documentElement.scrollWidth")
            assert page <= width, f"{path} is {page}px wide in a {width}px window"
            browser.save_screenshot(str(shoot.folder / f"{name}.png"))
    finally:
        browser.set_window_size(1280, 1000)
