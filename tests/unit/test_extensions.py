"""app.extensions: what the app keeps, made at start or on first use."""

from __future__ import annotations

from flask import Flask

from app.extensions import extension


class Made:
    pass


def test_an_extension_held_as_its_maker_is_made_once_on_first_use_and_kept() -> None:
    app = Flask(__name__)
    calls: list[Made] = []

    def make() -> Made:
        calls.append(Made())
        return calls[-1]

    app.extensions["thing"] = make
    assert calls == []
    first = extension("thing", Made, app)
    with app.app_context():  # the current app when none is named
        assert extension("thing", Made) is first
    assert calls == [first] and app.extensions["thing"] is first


def test_an_extension_made_at_start_is_returned_as_it_is() -> None:
    app = Flask(__name__)
    made = Made()
    app.extensions["thing"] = made
    assert extension("thing", Made, app) is made
