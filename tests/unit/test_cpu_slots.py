"""The host-wide bound on CPU-heavy requests (app.api.cpu): slots shared by processes."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

from app.api.cpu import HostSlots, LocalSlots


def _hold_until_killed(directory: str, taken: multiprocessing.Event) -> None:
    held = HostSlots(Path(directory), 1).take(5)
    assert held is not None
    taken.set()
    signal.pause()


def test_a_slot_held_by_another_process_is_not_given_until_that_process_dies(tmp_path):
    context = multiprocessing.get_context("fork")
    taken = context.Event()
    holder = context.Process(target=_hold_until_killed, args=(str(tmp_path), taken))
    holder.start()
    try:
        assert taken.wait(60)
        slots = HostSlots(tmp_path, 1)
        assert slots.take(0.05) is None  # one slot on the host, and it is held
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # killed mid-request: no give_back
        holder.join(timeout=60)
    held = slots.take(5)
    assert held is not None  # the kernel took the dead process's lock back
    slots.give_back(held)


def test_slots_bound_the_work_at_once_and_come_back(tmp_path):
    slots = HostSlots(tmp_path, 2)
    first, second = slots.take(0), slots.take(0)
    assert first is not None and second is not None
    assert slots.take(0.02) is None
    slots.give_back(first)
    third = slots.take(0)
    assert third is not None
    slots.give_back(second)
    slots.give_back(third)


def test_local_slots_bound_this_process():
    slots = LocalSlots(1)
    held = slots.take(0)
    assert held is not None and slots.take(0.01) is None
    slots.give_back(held)
    assert slots.take(0) is not None
