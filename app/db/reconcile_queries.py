"""The SQL of a reconciliation: set-based passes over the ledger, and the scope they read.

Written as SQL text because they are window and FILTER aggregates the ORM would only
obscure. Each reads :from and :to, and :operator / :table when the report is limited to
them; the filters are left out otherwise, so the planner sees the real query. Their money
columns are derived from ``MoneyTotals``'s declaration of what each figure sums. Every
join between the operator-keyed tables names ``operator_id``, so a statement stays on one
node of a database distributed by operator.
"""

from __future__ import annotations

import re

from app.services.reconcile_records import MONEY_FIGURES, Accounts, Sums

# The condition on an account column that selects each ``Accounts``; None: every account.
_ACCOUNTS: dict[Accounts, str | None] = {
    Accounts.EVERY: None,
    Accounts.PLAYERS: "{} NOT IN (:house, :house_game, :cashier)",
    Accounts.NOT_HOUSE: "{} NOT IN (:house, :cashier)",
    Accounts.HOUSE: "{} = :house",
    Accounts.HOUSE_SEAT: "{} = :house_game",
}
_KIND = re.compile(r"[a-z_]+")


def same_operator(operator_id: str | None) -> dict[str, str]:
    """Return, for each alias a statement joins, the filter on the report's operator (or
    nothing): on Citus a statement whose every table names its operator runs on the
    operator's node alone, where one naming it through a join runs on every node."""
    return {f"{alias}_operator": "" if operator_id is None
            else f" AND {alias}.operator_id = :operator" for alias in ("r", "l", "c", "p")}


def scope_filter(alias: str, operator_id: str | None, table_id: str | None) -> str:
    """Return the period (and operator, table) filter on the table aliased ``alias``."""
    parts = [f"{alias}.created_at >= :from", f"{alias}.created_at < :to"]
    if operator_id is not None:
        parts.append(f"{alias}.operator_id = :operator")
    if table_id is not None:
        parts.append(f"{alias}.table_id = :table")
    return " AND ".join(parts)


def _kind(sums: Sums) -> str:
    """Return the figure's line kind, checked to be safe to write into SQL as a literal."""
    if sums.kind is None or not _KIND.fullmatch(sums.kind):
        raise ValueError(f"not a ledger line kind: {sums.kind!r}")
    return sums.kind


def _filtered(aggregate: str, conditions: list[str]) -> str:
    where = " AND ".join(conditions)
    return f"coalesce({aggregate}{f' FILTER (WHERE {where})' if where else ''}, 0)"


def _account_sums() -> str:
    """The line pass's sums per account: one for each line kind a figure names."""
    kinds = dict.fromkeys(_kind(s) for s in MONEY_FIGURES.values() if s.kind is not None)
    return ",\n        ".join(
        f"sum(l.amount) FILTER (WHERE l.kind = '{kind}') AS sum_{kind}" for kind in kinds)


def _table_figures() -> str:
    """The line pass's money of a table, each figure from its accounts' sums."""
    figures = ["sum(lines) AS lines"]
    for name, sums in MONEY_FIGURES.items():
        column = "net" if sums.kind is None else f"sum_{_kind(sums)}"
        account = _ACCOUNTS[sums.accounts]
        conditions = [] if account is None else [account.format("account")]
        figures.append(f"{_filtered(f'sum({column})', conditions)} AS {name}")
    return ",\n    ".join(figures)


def _line_figures() -> str:
    """The game pass's money, each figure straight from the lines ``l``."""
    figures = ["count(l.id) AS lines"]
    for name, sums in MONEY_FIGURES.items():
        account = _ACCOUNTS[sums.accounts]
        conditions = [*([] if sums.kind is None else [f"l.kind = '{_kind(sums)}'"]),
                      *([] if account is None else [account.format("l.account")])]
        figures.append(f"{_filtered('sum(l.amount)', conditions)} AS {name}")
    return ",\n    ".join(figures)


# A player account that moved cash at the table: its sums are its row of cash_by_player.
_CASH_OF_PLAYER = ("account <> :cashier AND (sum_cash_in IS NOT NULL "
                   "OR sum_cash_out IS NOT NULL)")

# One pass over the period's lines in (operator, table, account, created_at, id) order,
# each account's chain order, which the covering index
# ix_ledger_lines_operator_id_table_id_account_created_at_id gives without a sort or a heap
# visit: the totals of each account at a table (and each player's cash movements),
# and whether its balance chain needs a closer look. An account's chain holds when each
# line's balance before equals the previous line's balance after, i.e. when its balances
# before (from the second line) equal its balances after (up to the last but one) as
# arrays in line order; one array comparison per account instead of a window over every
# line. Both come from one array of
# (before, after) pairs, so each account's lines are put in order once, not twice.
# Accounts whose arrays differ, or with a reversal line in the period, are suspects:
# BREAKS_IN finds their breaks exactly.
LINE_PASS = f"""
WITH accounts AS (
    SELECT l.operator_id, l.table_id, l.account, count(*) AS lines, sum(l.amount) AS net,
        {_account_sums()},
        (array_agg(ARRAY[l.balance_before, l.balance_after] ORDER BY l.created_at, l.id)
            FILTER (WHERE l.account <> :house))[2:][1:1]
            IS DISTINCT FROM (array_agg(ARRAY[l.balance_before, l.balance_after]
                                        ORDER BY l.created_at, l.id)
                              FILTER (WHERE l.account <> :house))[1:(count(*) - 1)][2:2]
            OR bool_or(l.kind = 'reversal') AS suspect
    FROM ledger_lines l
    WHERE {{scope}}
    GROUP BY l.operator_id, l.table_id, l.account
)
SELECT operator_id, table_id,
    {_table_figures()},
    array_agg(account) FILTER (WHERE account <> :house AND suspect) AS suspects,
    array_agg(account ORDER BY account) FILTER (WHERE {_CASH_OF_PLAYER}) AS cash_players,
    array_agg(coalesce(sum_cash_in, 0) ORDER BY account) FILTER (WHERE {_CASH_OF_PLAYER})
        AS cash_ins,
    array_agg(coalesce(sum_cash_out, 0) ORDER BY account) FILTER (WHERE {_CASH_OF_PLAYER})
        AS cash_outs
FROM accounts
GROUP BY operator_id, table_id
"""

# The breaks of the suspect accounts, line by line in chain order (created_at, id).
# ``rev`` is the running sum of the account's reversal lines, so the balance expected
# before a line is the balance after the previous non-reversal line plus the reversals
# posted between them.
# Consecutive lines of one round (a result line, then its fee line) chain too, so a break
# inside a round shows.
BREAKS_IN = """
WITH player_lines AS (
    SELECT l.created_at, l.id, l.operator_id, l.table_id, l.account, l.round_id, l.kind,
        l.balance_before, l.balance_after,
        sum(CASE WHEN l.kind = 'reversal' THEN l.amount ELSE 0 END)
            OVER (PARTITION BY l.operator_id, l.table_id, l.account
                  ORDER BY l.created_at, l.id) AS rev
    FROM unnest(CAST(:operators AS text[]), CAST(:tables AS text[]),
                CAST(:accounts AS text[])) AS s(operator_id, table_id, account)
    JOIN ledger_lines l ON l.operator_id = s.operator_id AND l.table_id = s.table_id
        AND l.account = s.account
    WHERE {scope}
), chained AS (
    SELECT created_at, id, operator_id, table_id, account, round_id, balance_before, rev,
        lag(balance_after) OVER w AS prev_after, lag(rev) OVER w AS prev_rev,
        lag(round_id) OVER w AS prev_round
    FROM player_lines
    WHERE kind <> 'reversal'
    WINDOW w AS (PARTITION BY operator_id, table_id, account ORDER BY created_at, id)
)
SELECT operator_id, table_id, account, prev_round::text AS prev_round, round_id::text AS round_id,
    prev_after + (rev - prev_rev) AS expected, balance_before AS found
FROM chained
WHERE prev_round IS NOT NULL AND balance_before <> prev_after + (rev - prev_rev)
ORDER BY operator_id, table_id, account, created_at, id
"""

# The zero-sum check: each round of the period whose lines do not sum to zero. The lines
# are grouped by round, which ix_ledger_lines_round_id_operator_id (migration 0011) gives
# in order and index-only, so each round's sum streams out of a GroupAggregate instead of a
# hash table of every round of the period; the few unbalanced rounds then take their
# operator and table from the round itself.
UNBALANCED = """
SELECT r.operator_id, r.table_id, r.id::text AS round_id
FROM (
    SELECT l.round_id, l.operator_id
    FROM ledger_lines l
    WHERE {scope}
    GROUP BY l.round_id, l.operator_id
    HAVING sum(l.amount) <> 0
) u
JOIN rounds r ON r.operator_id = u.operator_id AND r.id = u.round_id{r_operator}
ORDER BY r.operator_id, r.table_id, r.id
"""

# A round's game is its preset's, and its ruleset name is its preset's name (a hashed
# column), so the game needs no column of its own: :qiang21 and :erbagang list the presets
# of each, anything else is 十三支.
GAME = """CASE WHEN r.ruleset_name = ANY(CAST(:qiang21 AS text[])) THEN 'qiang21'
         WHEN r.ruleset_name = ANY(CAST(:erbagang AS text[])) THEN 'erbagang'
         ELSE 'thirteen' END"""

# One pass over the period's rounds in chain order (index-only on the chain's unique index,
# uq_rounds_operator_id_table_id_chain_seq, migration 0013): the counts per table, its game
# (``mixed`` when its rounds are of more than one), and the chain positions whose link to
# the round before is not proven inside the period: the first of each table in the
# period, and any after a gap or with a prev_hash that does not match.
ROUND_PASS = f"""
WITH chained AS (
    SELECT r.operator_id, r.table_id, r.kind, r.chain_seq, r.prev_hash,
        lag(r.chain_seq) OVER w AS prev_seq, lag(r.content_hash) OVER w AS prev_content,
        {GAME} AS game
    FROM rounds r
    WHERE {{scope}}
    WINDOW w AS (PARTITION BY r.operator_id, r.table_id ORDER BY r.chain_seq)
)
SELECT operator_id, table_id, count(*) AS rounds,
    count(*) FILTER (WHERE kind = 'reversal') AS reversals,
    min(game) AS game, min(game) <> max(game) AS mixed,
    array_agg(chain_seq) FILTER (WHERE chain_seq > 1 AND (
        prev_seq IS DISTINCT FROM chain_seq - 1 OR prev_hash IS DISTINCT FROM prev_content))
        AS suspects
FROM chained
GROUP BY operator_id, table_id
"""

# Each suspect link against the real predecessor, wherever it lies in time; chain order.
LINKS_AT = """
SELECT s.operator_id, s.table_id, s.chain_seq, c.id::text AS round_id, c.prev_hash,
    p.content_hash AS prev_content
FROM unnest(CAST(:operators AS text[]), CAST(:tables AS text[]), CAST(:seqs AS bigint[]))
    AS s(operator_id, table_id, chain_seq)
JOIN rounds c ON c.operator_id = s.operator_id AND c.table_id = s.table_id
    AND c.chain_seq = s.chain_seq{c_operator}
LEFT JOIN rounds p ON p.operator_id = c.operator_id AND p.table_id = c.table_id
    AND p.chain_seq = c.chain_seq - 1{p_operator}
ORDER BY s.operator_id, s.table_id, s.chain_seq
"""

# Settled rounds whose stored request has no ``deal``, counted from the partial index
# ix_rounds_without_deal (its predicate is this WHERE), never opening a request.
WITHOUT_DEAL = """
SELECT r.operator_id, r.table_id, count(*) AS rounds_without_deal
FROM rounds r
WHERE r.kind = 'settlement' AND NOT (r.request ? 'deal') AND {scope}
GROUP BY r.operator_id, r.table_id
"""

# The money of the tables that ran more than one game in the period, by game. A table
# that ran one game (the usual case) needs no statement: its game's money is its own,
# from the line pass, because a round's lines carry its created_at (the append writes
# both), so a table's lines of the period are its rounds' lines.
GAME_PASS = f"""
SELECT r.operator_id, {GAME} AS game,
    count(DISTINCT r.id) AS rounds,
    count(DISTINCT r.id) FILTER (WHERE r.kind = 'reversal') AS reversals,
    {_line_figures()}
FROM unnest(CAST(:operators AS text[]), CAST(:tables AS text[])) AS s(operator_id, table_id)
JOIN rounds r ON r.operator_id = s.operator_id AND r.table_id = s.table_id
LEFT JOIN ledger_lines l ON l.operator_id = r.operator_id AND l.round_id = r.id{{l_operator}}
WHERE {{scope}}
GROUP BY 1, 2
"""

# A sample of the (operator, table) keys and round ids to cut the passes at: a few hundred
# rounds from about one page in a thousand; the same pages each time, so the cuts repeat.
TABLE_SAMPLE = """
SELECT r.operator_id, r.table_id, r.id
FROM rounds r TABLESAMPLE SYSTEM (0.1) REPEATABLE (13)
{where}
"""
