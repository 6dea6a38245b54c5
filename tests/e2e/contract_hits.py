"""Which operations of openapi.yaml the e2e tests reached, checked at the end of a full run.

The ``api`` fixture records the ``(METHOD, path template)`` of every answer it validated.
Under xdist each worker sends its hits to the controller, which merges them. When the run
selected every e2e test (no ``-k``, ``-m``, ``--lf`` or single files), a declared operation
that no test reached fails the run: the contract promises it, so a test must show it.

Registered from tests/conftest.py, because the xdist controller never loads
tests/e2e/conftest.py (it collects nothing itself).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

E2E = Path(__file__).resolve().parent
OPENAPI = E2E.parents[1] / "openapi.yaml"
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
KEY = "contract_hits"

Operation = tuple[str, str]

_hits: set[Operation] = set()
_reports: list[dict[str, Any]] = []
_local: dict[str, Any] = {}
_missing: list[Operation] = []


def record(method: str, template: str) -> None:
    """Note that a test got an answer from ``method template``."""
    _hits.add((method.upper(), template))


def declared_operations(contract: Mapping[str, Any]) -> set[Operation]:
    """Return every ``(METHOD, path template)`` the contract declares."""
    return {
        (method.upper(), template)
        for template, item in contract["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }


def missing_operations(declared: Iterable[Operation], hits: Iterable[Operation]) -> list[Operation]:
    """Return the declared operations no test reached, sorted by path then method."""
    return sorted(set(declared) - set(hits), key=lambda op: (op[1], op[0]))


def _e2e_files_on_disk() -> set[str]:
    return {path.name for path in E2E.glob("test_*.py")}


def _is_e2e(item: pytest.Item) -> bool:
    return Path(str(item.path)).parent == E2E


def pytest_deselected(items: list[pytest.Item]) -> None:
    if any(_is_e2e(item) for item in items):
        _local["deselected"] = True


def pytest_collection_finish(session: pytest.Session) -> None:
    collected = {Path(str(item.path)).name for item in session.items if _is_e2e(item)}
    _local["collected"] = bool(session.items)
    _local["complete"] = (bool(collected) and collected >= _e2e_files_on_disk()
                          and not _local.get("deselected", False))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: keep what a worker reached."""
    output = getattr(node, "workeroutput", {}).get(KEY)
    if output is not None:
        _reports.append(output)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    report = {"hits": sorted(_hits), "complete": bool(_local.get("complete"))}
    config: Any = session.config
    if hasattr(config, "workerinput"):  # an xdist worker: the controller judges
        config.workeroutput[KEY] = report
        return
    reports = list(_reports)
    if _local.get("collected"):
        reports.append(report)
    if not reports or not all(r["complete"] for r in reports) or exitstatus != 0:
        return
    hits = {(method, template) for r in reports for method, template in r["hits"]}
    contract = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
    _missing[:] = missing_operations(declared_operations(contract), hits)
    if _missing:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _missing:
        return
    terminalreporter.section("contract coverage", red=True)
    for method, template in _missing:
        terminalreporter.write_line(f"no e2e test reached {method} {template} of openapi.yaml",
                                    red=True)
