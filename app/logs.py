"""Logs as one JSON object per line, for the app and for gunicorn alike.

Every record carries ``time`` (UTC, ISO 8601), ``level``, ``logger`` and ``message``; a
record logged while a request is handled also carries that request's ``request_id``,
``method`` and ``route`` (app.api.requestlog puts them on ``flask.g``), and the one line per
request adds ``status``, ``duration_ms`` and ``operator``. JSON escapes every control
character, so nothing a client sends can start a line of its own; tracebacks go in
``exception``. Secrets are never put on a record (keys are only ever named by their id).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from gunicorn import glogging  # type: ignore[import-untyped]  # no stubs

# Attributes a record may carry (``extra=``) that the line shows, in this order.
FIELDS = ("request_id", "method", "route", "path", "status", "duration_ms", "operator")
FORMAT_NAME = "json"


class JsonFormatter(logging.Formatter):
    """Format a record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        # ensure_ascii: a lone surrogate a client sent stays an escape, never a broken line.
        return json.dumps(entry, ensure_ascii=True, default=str)


class RequestContext(logging.Filter):
    """Add the current request's id, method and route to records logged while handling it."""

    def filter(self, record: logging.LogRecord) -> bool:
        from flask import g, has_request_context, request

        # The one line per request carries its own (app.api.requestlog): nothing to look up.
        if (getattr(record, "request_id", None) is None or getattr(record, "method", None)
                is None or getattr(record, "route", None) is None) and has_request_context():
            for name, value in (("request_id", g.get("request_id")),
                                ("method", request.method),
                                ("route", request.url_rule.rule if request.url_rule else None)):
                if getattr(record, name, None) is None and value is not None:
                    setattr(record, name, value)
        return True


def lean_records() -> None:
    """Leave out of every log record what no line shows: the caller's file and line (a walk
    up the stack for each record), the thread's and the process's names. The logging
    HOWTO's "Optimization" section names these three switches; ``process`` (the pid) stays.
    """
    logging._srcfile = None  # the HOWTO's documented switch
    logging.logThreads = False
    logging.logMultiprocessing = False


def json_handler(stream: Any = None) -> logging.Handler:
    """Return a stderr (or ``stream``) handler that writes JSON lines with request context."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestContext())
    return handler


class GunicornLogger(glogging.Logger):  # type: ignore[misc]  # gunicorn has no stubs
    """gunicorn's logger, writing its access lines only when ACCESS_LOG asks for them.

    gunicorn turns its access log on whenever a ``logconfig_dict`` is given, as ours always
    is (for JSON lines), and then built and wrote a line per request with no ACCESS_LOG
    set: lines nobody asked for, and a measured share of a request's CPU.
    """

    @property
    def access_log_enabled(self) -> bool:
        return bool(self.cfg.accesslog)


def gunicorn_logconfig(level: str) -> dict[str, Any]:
    """Return gunicorn's ``logconfig_dict``: its error and access logs as JSON lines too."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {FORMAT_NAME: {"()": "app.logs.JsonFormatter"}},
        "filters": {"request": {"()": "app.logs.RequestContext"}},
        "handlers": {
            "stderr": {"class": "logging.StreamHandler", "formatter": FORMAT_NAME,
                       "filters": ["request"], "stream": "ext://sys.stderr"},
            "stdout": {"class": "logging.StreamHandler", "formatter": FORMAT_NAME,
                       "stream": "ext://sys.stdout"},
        },
        "root": {"level": level, "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["stdout"], "propagate": False},
            # A worker that migrates on start (MIGRATE_ON_START) names each revision at
            # INFO: detail for LOG_LEVEL=DEBUG, as app.quiet_alembic keeps it.
            "alembic": {"level": "DEBUG" if level == "DEBUG" else "WARNING"},
        },
    }
