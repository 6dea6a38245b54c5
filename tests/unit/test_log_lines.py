"""One log record is one line: what a client sent cannot forge another."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from app.text import escape_controls, text_fault

SCRIPT = """
import logging, sys
from app import configure_logging
configure_logging("INFO")
logging.getLogger("app.probe").warning("unhandled error on GET %s",
                                       sys.argv[1] + chr(0) + chr(0xD800))
"""


def test_configure_logging_writes_a_path_with_a_newline_as_one_line():
    forged = "/v1/x\n2026-12-01 00:00:00 ERROR [1] app: forged\r\u0085"
    done = subprocess.run([sys.executable, "-c", SCRIPT, forged], capture_output=True,
                          text=True, errors="backslashreplace", check=True)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].endswith(r"/v1/x\n2026-12-01 00:00:00 ERROR [1] app: forged\r\x85\x00\ud800")


@given(st.text())
def test_escaped_text_holds_no_character_the_text_rule_refuses(text):
    escaped = escape_controls(text)
    assert text_fault(escaped) is None
    if text_fault(text) is None:
        assert escaped == text
