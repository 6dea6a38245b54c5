"""A refusal's constraint, as PostgreSQL reports it and as a Citus worker does."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from sqlalchemy.exc import IntegrityError

from app.db.driver import CONSTRAINTS, constraint_of


def _refusal(constraint_name: str | None, message_primary: str) -> IntegrityError:
    orig = SimpleNamespace(diag=SimpleNamespace(constraint_name=constraint_name,
                                                message_primary=message_primary),
                           sqlstate="23505")
    return IntegrityError("INSERT ...", {}, orig)  # type: ignore[arg-type]


def test_the_servers_constraint_name_is_taken_as_given():
    error = _refusal("pk_rounds", 'duplicate key value violates unique constraint "pk_rounds"')
    assert constraint_of(error) == "pk_rounds"


@pytest.mark.parametrize("name", ["pk_rounds", "uq_rounds_operator_id_idempotency_key",
                                  "uq_rounds_operator_id_table_id_chain_seq",
                                  "uq_rounds_operator_id_reverses_round_id", "pk_match_leaves"])
def test_a_shards_constraint_is_named_as_the_tables(name: str):
    error = _refusal(None, f'duplicate key value violates unique constraint "{name}_102008"')
    assert name in CONSTRAINTS
    assert constraint_of(error) == name


@pytest.mark.parametrize("name", ["pk_rounds", "uq_rounds_operator_id_idempotency_key"])
def test_a_shards_constraint_named_by_the_worker_that_wrote_it_is_the_tables(name: str):
    # The service entering by the worker that holds the shard: Citus writes it in process
    # and the refusal names the shard's constraint itself.
    error = _refusal(f"{name}_102033",
                     f'duplicate key value violates unique constraint "{name}_102033"')
    assert constraint_of(error) == name


def test_a_name_that_only_looks_like_a_shards_is_taken_as_given():
    error = _refusal("not_ours_102033", "")
    assert constraint_of(error) == "not_ours_102033"


@pytest.mark.parametrize("primary", [
    'duplicate key value violates unique constraint "not_ours_102008"',
    'duplicate key value violates unique constraint "pk_rounds"',  # no shard id, no name
    "la valeur d'une clé dupliquée rompt la contrainte unique",
    "",
])
def test_anything_else_names_no_constraint(primary: str):
    assert constraint_of(_refusal(None, primary)) is None
