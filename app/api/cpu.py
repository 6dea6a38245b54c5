"""A host-wide bound on CPU-heavy requests, so that settles and reads always find a core.

The advisor (``mode: best``), a verify, a reconciliation and a checkpoint spend their time
in Python, by the millisecond; the per-key limits bound each key, not all keys together.
Such a request takes one of CPU_HEAVY_SLOTS slots (default: one core fewer than the host
may use, at least one) before its view runs, and gives it back when it ends; while none is
free it waits, up to CPU_HEAVY_WAIT_S, and then answers 503 with Retry-After. Settles,
reads and small dry runs never wait here.

A slot is an exclusive ``flock`` on one of the files ``cpu-<n>`` in the folder the server
made for its workers (RUN_DIR): the kernel takes the lock back when its process dies, so a
worker killed mid-request frees its slot at once. Without that folder (one process alone:
the flask command, a test client) the slots are a semaphore of this process.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from pathlib import Path
from typing import Protocol, cast

from flask import Flask, Request
from flask.ctx import _AppCtxGlobals

from app.api.errors import ProblemError
from app.config import Settings

log = logging.getLogger(__name__)

EXTENSION = "cpu_slots"
TYPE_BUSY = "/problems/busy"
# How often a waiting request looks for a free slot.
POLL_S = 0.005
# Route templates whose work is CPU-heavy (besides the advisor, chosen by its body).
HEAVY_ROUTES = frozenset({
    ("GET", "/v1/audit/verify"),
    ("POST", "/v1/audit/verify"),
    ("POST", "/v1/audit/checkpoints"),
    ("GET", "/v1/reconciliation"),
})


class Slots(Protocol):
    def take(self, wait_s: float) -> object | None: ...

    def give_back(self, held: object) -> None: ...


class LocalSlots:
    """Slots of this process alone."""

    def __init__(self, count: int) -> None:
        self._free = threading.BoundedSemaphore(count)

    def take(self, wait_s: float) -> object | None:
        return self if self._free.acquire(timeout=wait_s) else None

    def give_back(self, held: object) -> None:
        self._free.release()


class HostSlots:
    """Slots shared by every process that opens the same folder: one locked file each."""

    def __init__(self, directory: Path, count: int) -> None:
        self.paths = [directory / f"cpu-{n}" for n in range(count)]

    def take(self, wait_s: float) -> object | None:
        ends = time.monotonic() + wait_s
        # Start at a different file in each thread, so waiters do not all try file 0 first.
        start = threading.get_ident() % len(self.paths)
        order = self.paths[start:] + self.paths[:start]
        while True:
            for path in order:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                return fd
            if time.monotonic() >= ends:
                return None
            time.sleep(POLL_S)

    def give_back(self, held: object) -> None:
        os.close(cast(int, held))  # closing the file drops its lock


def slots_for(settings: Settings) -> LocalSlots | HostSlots:
    """Return the host's slots (RUN_DIR set by the server), else this process's."""
    count = settings.cpu_heavy_slots
    if settings.run_dir is None:
        return LocalSlots(count)
    return HostSlots(settings.run_dir, count)


def init_cpu_slots(app: Flask, settings: Settings) -> None:
    """Keep ``app``'s host-wide slots, which app.api.edge makes CPU-heavy requests take
    (after the per-key limits, so a request over its key's limit is refused at once,
    without waiting)."""
    app.extensions[EXTENSION] = (slots_for(settings), settings.cpu_heavy_wait_s)


def is_heavy(method: str, template: str) -> bool:
    """Return whether a request to ``template`` is CPU-heavy work (the advisor's by body)."""
    if (method, template) in HEAVY_ROUTES:
        return True
    if (method, template) == ("POST", "/v1/hands/arrange"):
        from app.api.limits import asks_for_best

        return asks_for_best()
    return False


def take(request: Request, state: _AppCtxGlobals, app: Flask, template: str | None) -> None:
    """Take a slot for a CPU-heavy request, waiting up to CPU_HEAVY_WAIT_S; else raise the
    503 problem. ``template``: its route, None when none matched."""
    if template is None or not is_heavy(request.method, template):
        return
    slots, wait_s = app.extensions[EXTENSION]
    held = slots.take(wait_s)
    if held is None:
        log.warning("no CPU slot came free in %s s for %s %s", wait_s, request.method,
                    request.path)
        raise ProblemError(
            503, "Service Unavailable",
            f"the service's CPU-heavy work is at its bound; retry in {max(1, round(wait_s))} s",
            type_=TYPE_BUSY, headers={"Retry-After": str(max(1, round(wait_s)))})
    state.cpu_slot = held


def give_back(state: _AppCtxGlobals, app: Flask) -> None:
    """Give back the slot a CPU-heavy request took, as it ends."""
    held = state.__dict__.pop("cpu_slot", None)
    if held is not None:
        slots, _wait = app.extensions[EXTENSION]
        slots.give_back(held)
