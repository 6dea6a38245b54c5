"""One log record is one JSON line: what a client sent cannot forge another."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from app.logs import JsonFormatter

SCRIPT = """
import logging, sys
from app import configure_logging
configure_logging("INFO")
logging.getLogger("app.probe").warning("unhandled error on GET %s",
                                       sys.argv[1] + chr(0) + chr(0xD800))
"""


def test_configure_logging_writes_a_path_with_a_newline_as_one_json_line():
    forged = "/v1/x\n2026-12-01 00:00:00 ERROR [1] app: forged\r\u0085"
    done = subprocess.run([sys.executable, "-c", SCRIPT, forged], capture_output=True,
                          text=True, check=True)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    record = json.loads(lines[0])
    assert record["message"] == f"unhandled error on GET {forged}\x00\ud800"
    assert record["level"] == "WARNING" and record["logger"] == "app.probe"


@given(message=st.text(), error=st.text())
def test_any_message_and_traceback_format_as_one_line_that_reads_back(message, error):
    try:
        raise ValueError(error)
    except ValueError:
        record = logging.LogRecord("app.x", logging.ERROR, __file__, 1, "%s", (message,),
                                   sys.exc_info())
    line = JsonFormatter().format(record)
    assert "\n" not in line and "\r" not in line
    entry = json.loads(line)
    assert entry["message"] == message
    assert "ValueError" in entry["exception"]


ALEMBIC = """
import logging, sys
from app import configure_logging
configure_logging(sys.argv[1])
for name in ("alembic.runtime.migration", "alembic.runtime.plugins"):
    logging.getLogger(name).info("Running upgrade 0001 -> 0002")
logging.getLogger("alembic.runtime.migration").warning("a warning of alembic")
"""


def test_alembic_names_each_revision_only_at_debug_and_always_warns():
    def lines(level: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", ALEMBIC, level], capture_output=True,
                              text=True, check=True)
        return [json.loads(line)["message"] for line in done.stderr.splitlines()]

    assert lines("INFO") == ["a warning of alembic"]
    assert lines("DEBUG").count("Running upgrade 0001 -> 0002") == 2


def test_gunicorns_workers_keep_alembic_quiet_unless_debugging():
    from app.logs import gunicorn_logconfig

    assert gunicorn_logconfig("INFO")["loggers"]["alembic"]["level"] == "WARNING"
    assert gunicorn_logconfig("DEBUG")["loggers"]["alembic"]["level"] == "DEBUG"
