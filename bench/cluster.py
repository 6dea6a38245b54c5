"""Scratch databases on a Citus cluster: made and registered on every node, dropped from each.

The benchmarks and the test suite make a database of their own on the server they are
given. When that server is a Citus coordinator, its maintenance database holds the
cluster's node list (``citus_add_node`` there). That list is a database's own, so a new
database gets the extension on every node and the coordinator's host and the workers
registered in it, as docs/operations/scaling.md tells an operator to do. A drop is sent
to the coordinator (Citus passes it on) and then to each worker, so that none is left
behind on a node. On a plain PostgreSQL these only create and drop the database.
"""

from __future__ import annotations

import time

import psycopg
from psycopg import sql
from sqlalchemy import make_url

from app.config import libpq_url, normalize_database_url

Node = tuple[str, int]
# The advisory lock that registers the nodes in one new database at a time.
REGISTERING = 0x7468697274_00001

_NODES = ("SELECT nodename, nodeport, groupid = 0 FROM pg_dist_node "
          "WHERE noderole = 'primary' AND isactive ORDER BY groupid")


def nodes(server_url: str) -> tuple[Node | None, list[Node]]:
    """Return the coordinator and the workers registered in the maintenance database of
    ``server_url`` (a libpq URL): (None, []) when it is no Citus coordinator with workers."""
    with psycopg.connect(server_url, autocommit=True) as connection:
        if connection.execute("SELECT to_regclass('pg_dist_node')").fetchone() == (None,):
            return None, []
        rows = connection.execute(_NODES).fetchall()
    coordinator = next(((host, port) for host, port, first in rows if first), None)
    workers = [(host, port) for host, port, first in rows if not first]
    if not workers:
        return None, []
    return coordinator, workers


def _maintenance(server_url: str) -> str:
    return make_url(normalize_database_url(server_url)).database or "postgres"


def on_node(server_url: str, node: Node, database: str) -> str:
    """Return the libpq URL of ``database`` on ``node``, as ``server_url``'s user."""
    url = make_url(normalize_database_url(server_url)).set(
        host=node[0], port=node[1], database=database)
    return libpq_url(url.render_as_string(hide_password=False))


def create_database(server_url: str, name: str) -> None:
    """Create database ``name`` on the server of ``server_url``; on a Citus coordinator,
    on every worker too, with the extension on each node and the nodes registered."""
    coordinator, workers = nodes(server_url)
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    if coordinator is None:
        return
    for worker in workers:
        # Citus makes it there when citus.enable_create_database_propagation is on.
        with psycopg.connect(on_node(server_url, worker, _maintenance(server_url)),
                             autocommit=True) as connection:
            if connection.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                  (name,)).fetchone() is None:
                connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        with psycopg.connect(on_node(server_url, worker, name), autocommit=True) as connection:
            connection.execute("CREATE EXTENSION IF NOT EXISTS citus")
    # Registering a node makes the cluster's roles on it, and roles are the server's, not
    # a database's: two databases registered at once update the same role's row there
    # ("tuple concurrently updated", seen with two test sessions starting together). One
    # at a time, by a lock of the coordinator's maintenance database.
    with psycopg.connect(server_url, autocommit=True) as guard, \
            psycopg.connect(on_node(server_url, coordinator, name),
                            autocommit=True) as connection:
        guard.execute("SELECT pg_advisory_lock(%s)", (REGISTERING,))
        connection.execute("CREATE EXTENSION IF NOT EXISTS citus")
        connection.execute("SELECT citus_set_coordinator_host(%s, %s)", coordinator)
        for worker in workers:
            connection.execute("SELECT citus_add_node(%s, %s)", worker)


def drop_database(server_url: str, name: str, attempts: int = 20) -> None:
    """Drop database ``name`` everywhere ``create_database`` made it: on the coordinator
    (Citus passes the drop on), then on each worker where it is left.

    Each node's Citus maintenance daemon keeps connections to the database open on the
    others (deadlock detection, two-phase commit recovery) and makes them again within
    seconds, so a drop WITH (FORCE) may still find one: it is tried again, up to
    ``attempts`` times, after the connections it ended. A drop passed on to a worker that
    has no such database fails, and is then made on the coordinator alone."""
    _, workers = nodes(server_url)
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    _drop(server_url, drop, attempts)
    for worker in workers:
        _drop(on_node(server_url, worker, _maintenance(server_url)), drop, attempts)


def _drop(url: str, drop: sql.Composed, attempts: int) -> None:
    here_alone = False
    for attempt in range(1, attempts + 1):
        with psycopg.connect(url, autocommit=True) as connection:
            if here_alone:
                connection.execute("SET citus.enable_create_database_propagation = off")
            try:
                connection.execute(drop)
                return
            except psycopg.errors.InvalidCatalogName:  # gone from a worker already
                here_alone = True
            except psycopg.errors.ObjectInUse:
                if attempt == attempts:
                    raise
                time.sleep(0.25 * attempt)
    raise RuntimeError(f"could not drop a test database at {url}: {drop!r}")


def remaining(server_url: str, prefix: str) -> dict[Node, list[str]]:
    """Return, for each worker of the cluster, its databases whose name starts with
    ``prefix``."""
    _, workers = nodes(server_url)
    found: dict[Node, list[str]] = {}
    for worker in workers:
        with psycopg.connect(on_node(server_url, worker, _maintenance(server_url)),
                             autocommit=True) as connection:
            found[worker] = [row[0] for row in connection.execute(
                "SELECT datname FROM pg_database WHERE starts_with(datname, %s)",
                (prefix,))]
    return found
