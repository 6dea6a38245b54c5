"""The command line's period bounds: Z and offsets accepted; a refusal quotes the text given
and shows what is needed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import click
import pytest

from app.cli import _moment_option


@pytest.mark.parametrize(("text", "moment"), [
    ("2026-01-01T00:00:00Z", datetime(2026, 1, 1, tzinfo=UTC)),
    ("2026-01-01T08:00:00+08:00", datetime(2026, 1, 1, 8, tzinfo=timezone(timedelta(hours=8)))),
    (" 2026-01-01T00:00:00.5-05:30 ", datetime(2026, 1, 1, 0, 0, 0, 500000,
                                               tzinfo=timezone(-timedelta(hours=5, minutes=30)))),
])
def test_a_bound_takes_z_and_offsets(text: str, moment: datetime) -> None:
    assert _moment_option(text, "--from") == moment


@pytest.mark.parametrize("text", ["2026-01-01T00:00:00", "2026-01-01", "yesterday", ""])
def test_a_refused_bound_says_what_came_and_what_is_needed(text: str) -> None:
    with pytest.raises(click.BadParameter) as refused:
        _moment_option(text, "--to")
    message = refused.value.format_message()
    assert repr(text) in message
    assert "2026-01-01T00:00:00Z" in message and "+08:00" in message
