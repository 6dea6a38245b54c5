"""Two database roles: the owner migrates, the service runs as a role that can only append.

The migrations create the NOLOGIN role ``thirteen_runtime`` (DB_RUNTIME_ROLE) and grant it
SELECT on the ledger and keys, EXECUTE on the append functions (which run as the NOLOGIN
role ``<runtime>_writer``) and what matches and checkpoints need. An operator
grants that role to the service's login role; the service then cannot ALTER, DROP or
TRUNCATE a table, disable or drop a trigger, or replace the trigger's function, because
only a table's owner (or a superuser) may.

On start the service checks the role it connected as (``check_runtime_role``): a
superuser, a role that may create roles (and so grant itself the owner's), or a member of
a ledger table's owner is refused, unless ALLOW_OWNER_RUNTIME=true (development only).
"""

from __future__ import annotations

import re

import psycopg
from sqlalchemy import Engine, make_url, text

from app.config import DEFAULT_RUNTIME_ROLE, libpq_url
from app.db.models import OWNED_TABLES

# The login role the embedded default creates for the service (a member of the runtime role).
EMBEDDED_LOGIN = "thirteen_service"
_ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

# Exit status of a start-up the role check refused (as for a configuration error).
REFUSED_EXIT = 2


class RuntimeRoleError(RuntimeError):
    """The service connected as a role that could rewrite the ledger."""


_POWERS = text("""
SELECT r.rolname, r.rolsuper, r.rolcreaterole,
    ARRAY(SELECT c.relname::text FROM pg_class c
          WHERE c.relnamespace = 'public'::regnamespace AND c.relname = ANY(:tables)
              AND pg_has_role(current_user, c.relowner, 'MEMBER')
          ORDER BY c.relname) AS owned,
    has_database_privilege(current_database(), 'TEMPORARY') AS temporary,
    has_schema_privilege('public', 'CREATE') AS creates,
    ARRAY(SELECT t::text FROM unnest(CAST(:money AS text[])) AS t
          WHERE to_regclass(t) IS NOT NULL
              AND has_table_privilege(t, 'INSERT, UPDATE, DELETE')
          ORDER BY t) AS writes,
    EXISTS (SELECT FROM pg_proc p WHERE p.proname = 'ledger_append'
                AND p.prosecdef AND pg_has_role(current_user, p.proowner, 'MEMBER')) AS writer
FROM pg_roles r WHERE r.rolname = current_user
""")
# Written only by the append functions (rows) and the command line (keys), never directly.
SEALED_TABLES = ("rounds", "round_players", "ledger_lines", "round_rulesets", "chains", "api_keys",
                 "api_key_revocations")


def runtime_powers(engine: Engine) -> tuple[str, list[str]]:
    """Return the role ``engine`` connects as and what it may do beyond appending."""
    with engine.connect() as connection:
        row = connection.execute(_POWERS, {"tables": list(OWNED_TABLES),
                                           "money": list(SEALED_TABLES)}).one()
    powers = []
    if row.rolsuper:
        powers.append("is a superuser")
    if row.rolcreaterole:
        powers.append("may create roles (and so grant itself the owner's)")
    if row.owned:
        powers.append(f"owns (or is a member of the owner of) {', '.join(row.owned)}")
    if row.temporary:
        powers.append("may create temporary tables, which would take the place of the "
                      "ledger's tables on its connection (revoke TEMPORARY on the database "
                      "from PUBLIC, as migration 0015 does)")
    if row.creates:
        powers.append("may create objects in schema public, such as an overload of the "
                      "append functions that makes every call of them ambiguous (revoke "
                      "CREATE on schema public from PUBLIC, as PostgreSQL 15 does by default)")
    if row.writes:
        powers.append(f"may write {', '.join(row.writes)} directly, outside the append "
                      "functions and the command line (migration 0019 revokes that)")
    if row.writer:
        powers.append("is a member of the writer role that owns the append functions, so "
                      "it could write any row they write")
    return row.rolname, powers


_MEMBERSHIP = text("""
SELECT current_user AS role,
    (SELECT pg_has_role(current_user, r.oid, 'USAGE') FROM pg_roles r
     WHERE r.rolname = :runtime) AS member
""")


def check_runtime_role(engine: Engine, *, allow_owner: bool,
                       runtime_role: str = DEFAULT_RUNTIME_ROLE) -> None:
    """Raise RuntimeRoleError if the service's role could alter the ledger behind its back,
    or lacks the runtime role's rights (every request would fail on "permission denied")."""
    role, powers = runtime_powers(engine)
    if allow_owner:
        return
    if not powers:
        _check_membership(engine, runtime_role)
        return
    raise RuntimeRoleError(
        f"refusing to run as database role {role!r}: it {'; it '.join(powers)}, so it could "
        "get around the ledger (disable its triggers, rewrite rounds, or shadow its "
        "tables). Run the service as a login role granted the runtime role the "
        "migrations create (DB_RUNTIME_ROLE, default thirteen_runtime), with the owner's "
        "URL in MIGRATIONS_DATABASE_URL; or set ALLOW_OWNER_RUNTIME=true on a development "
        "machine (unsafe)")


def _check_membership(engine: Engine, runtime_role: str) -> None:
    # A login outside the runtime role may read nothing: refuse it here, by name, rather
    # than answer every request with a permission error.
    with engine.connect() as connection:
        row = connection.execute(_MEMBERSHIP, {"runtime": runtime_role}).one()
    if row.member is None:
        raise RuntimeRoleError(
            f"the runtime role {runtime_role!r} (DB_RUNTIME_ROLE) does not exist in this "
            "database's server: run the migrations (they create it) or set DB_RUNTIME_ROLE "
            "to the role they created")
    if not row.member:
        raise RuntimeRoleError(
            f"refusing to run as database role {row.role!r}: it is not a member of the "
            f"runtime role {runtime_role!r} (DB_RUNTIME_ROLE), so it may not read the keys "
            f"or call the append functions. Grant it: GRANT {runtime_role} TO {row.role}")


def ensure_login(owner_url: str, login: str, runtime_role: str) -> str:
    """Make ``login`` a LOGIN role that is a member of ``runtime_role``; return its URL.

    ``owner_url`` must reach the server as a role that may create roles. Roles belong to the
    whole server, so a login that exists already (made by another process) is reused. The
    URL is ``owner_url`` with the user changed and no password: for servers with trust or
    peer authentication (the embedded one, tests); elsewhere an operator creates the login.
    """
    for name in (login, runtime_role):
        if not _ROLE_NAME.match(name):
            raise ValueError(f"{name!r} is not a role name this service uses")
    with psycopg.connect(libpq_url(owner_url), autocommit=True) as connection:
        connection.execute(f"""
            DO $$ BEGIN
                CREATE ROLE {login} LOGIN;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
            END $$""")
        connection.execute(f"GRANT {runtime_role} TO {login}")
    return make_url(owner_url).set(username=login, password=None).render_as_string(
        hide_password=False)


def drop_login(owner_url: str, login: str) -> None:
    """Drop a login made by ``ensure_login`` (tests and benchmarks clean up with this)."""
    if not _ROLE_NAME.match(login):
        raise ValueError(f"{login!r} is not a role name this service uses")
    with psycopg.connect(libpq_url(owner_url), autocommit=True) as connection:
        connection.execute(f"DROP ROLE IF EXISTS {login}")
