"""Failing cases grouped by cause, so that a reason is said once, not once per shape.

A kernel with one mistake fails most shapes of the suite for the same reason,
and each case words it with its own numbers (its shape, the first wrong
element's value). A report, a grade cell and a feedback file each show one
line per cause instead: how many cases fail that way, the first of them, and
the cause. The cause is the case's diagnosis (CaseResult.cause, made with the
report's other cases by autograder.judge.diagnosis); a case without one (its
report was not diagnosed) is grouped by its message, the numbers and the first
wrong element left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The tail that names the first wrong element: " (first: (0, 7) is 1.5, should be 2)".
_FIRST_ELEMENT = re.compile(r" \(first: \(\d+, \d+\)[^)]*\)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def cause_of(message: str) -> str:
    """The cause a case's message gives, without the numbers that are the case's own."""
    return _NUMBER.sub("#", _FIRST_ELEMENT.sub("", message))


@dataclass(frozen=True)
class Cause:
    """The failing cases that fail for one reason, in the order they ran.

    cases: CaseResults (autograder.judge.checker); of: how many cases were judged."""

    cases: tuple
    of: int

    @property
    def diagnosis(self):
        """The cases' Diagnosis, or None when they were grouped by their words."""
        return self.cases[0].cause

    def __str__(self) -> str:
        first, more = self.cases[0], len(self.cases) - 1
        which = f"{len(self.cases)} of {self.of} cases ({first.label} and {more} more)"
        said = str(first.cause) if first.cause is not None else first.message
        return f"{which if more else first.label}: {said}"


def by_cause(cases) -> list[Cause]:
    """The failing cases among `cases`, one Cause per reason, the most frequent first
    (ties in the order they ran)."""
    groups: dict[object, list] = {}
    for case in cases:
        if not case.ok:
            key = case.cause if case.cause is not None else cause_of(case.message)
            groups.setdefault(key, []).append(case)
    ordered = sorted(groups.values(), key=len, reverse=True)  # stable: ties keep their order
    return [Cause(tuple(group), len(cases)) for group in ordered]


def listed(causes: list[Cause], limit: int) -> list[str]:
    """The first `limit` causes, one line each, and a last line saying how many failing
    cases the others hold."""
    left_out = sum(len(c.cases) for c in causes[limit:])
    more = f"… and {left_out} more failing case{'s' * (left_out != 1)}"
    return [str(c) for c in causes[:limit]] + [more] * bool(left_out)
