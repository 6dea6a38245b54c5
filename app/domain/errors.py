"""One small tree of domain errors, rooted in ValueError.

Every error carries one or more problems, each naming where the bad value sits (a path
relative to the value the domain function was given, such as ``middle[4]``) and why.
The service layer prefixes those paths with where the value sat in the request.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a value was refused."""

    path: str
    message: str
    code: str

    def under(self, prefix: str) -> Problem:
        """Return this problem with its path placed under ``prefix``."""
        if not prefix:
            return self
        if not self.path:
            return replace(self, path=prefix)
        joiner = "" if self.path.startswith("[") else "."
        return replace(self, path=f"{prefix}{joiner}{self.path}")


class DomainError(ValueError):
    """A value the domain refuses, with every problem found in it."""

    def __init__(self, problems: Problem | Iterable[Problem]) -> None:
        found = (problems,) if isinstance(problems, Problem) else tuple(problems)
        if not found:
            raise ValueError("a DomainError needs at least one problem")
        self.problems: tuple[Problem, ...] = found
        super().__init__("; ".join(_describe(p) for p in found))

    def under(self, prefix: str) -> DomainError:
        """Return the same kind of error with every path placed under ``prefix``."""
        return type(self)(p.under(prefix) for p in self.problems)


def gather(errors: Sequence[DomainError]) -> DomainError:
    """Return one error holding every problem of ``errors``, in order, each once.

    Errors of one kind stay that kind; errors of several kinds become Refusals, whose
    problems each keep their own code. (Two checks may find the same fault: the stake is
    checked wherever money is.)
    """
    if not errors:
        raise ValueError("nothing to gather")
    if len(errors) == 1:
        return errors[0]
    kinds = {type(e) for e in errors}
    kind = kinds.pop() if len(kinds) == 1 else Refusals
    return kind(dict.fromkeys(p for e in errors for p in e.problems))


def _describe(problem: Problem) -> str:
    return f"{problem.path}: {problem.message}" if problem.path else problem.message


class Refusals(DomainError):
    """Problems of several kinds found together in one round (cards, money, the table)."""


class CardError(DomainError):
    """Unknown cards, wrong row sizes, duplicates."""


class RulesetError(DomainError):
    """Unknown presets, unknown or ill-typed parameters."""


class ClaimError(DomainError):
    """A special-hand claim the cards do not support, or that the ruleset gives no value."""


class RoundError(DomainError):
    """A round that cannot be scored: player counts, fouls under ``reject``, bets."""


class SettlementError(DomainError):
    """Money that cannot be settled: negative balances, limits, bad amounts."""
