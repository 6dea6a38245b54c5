"""The database deadline's watchdog shuts the socket it armed, and only that one."""

from __future__ import annotations

import os
import socket

from app.db.deadline import Watchdog, _identity


class Record:
    """Stands for a pool's ConnectionPoolEntry: the watchdog keys on its identity."""


def test_a_connection_past_its_deadline_has_its_socket_shut() -> None:
    ours, peer = socket.socketpair()
    with ours, peer:
        watchdog = Watchdog(deadline_s=5.0)
        watchdog._armed[id(Record())] = (0.0, ours.fileno(), _identity(ours.fileno()))
        watchdog._cut_due()
        assert watchdog.cut == 1
        assert peer.recv(1) == b""  # the other end sees the connection end


def test_a_number_taken_by_another_socket_is_left_alone() -> None:
    """The driver closes a connection itself (a FATAL, an answer cut short) before the pool
    disarms it: the number may then be another socket's, which must go on working."""
    closed, _ = socket.socketpair()
    fileno = closed.fileno()
    inode = _identity(fileno)
    closed.close()
    _.close()
    other, peer = socket.socketpair()
    with other, peer:
        # The same number for the other socket, as the next open takes the lowest free.
        taken = other.fileno() != fileno
        if taken:
            os.dup2(other.fileno(), fileno)
        try:
            watchdog = Watchdog(deadline_s=5.0)
            watchdog._armed[id(Record())] = (0.0, fileno, inode)
            watchdog._cut_due()
            assert watchdog.cut == 0
            assert not watchdog._armed
            other.sendall(b"x")
            assert peer.recv(1) == b"x"
        finally:
            if taken:
                os.close(fileno)


def test_arm_keeps_the_socket_it_was_given() -> None:
    ours, peer = socket.socketpair()
    with ours, peer:
        watchdog = Watchdog(deadline_s=60.0)
        record = Record()
        watchdog.arm(record, ours.fileno(), now=0.0)  # type: ignore[arg-type]
        assert watchdog._armed[id(record)] == (60.0, ours.fileno(),
                                               _identity(ours.fileno()))
        watchdog.disarm(record)  # type: ignore[arg-type]
        assert not watchdog._armed
