"""One cause per bug: the failing cases of a report diagnosed together, from the evidence.

Each failing case says what went wrong in it (its `message`: a bad access with its
thread, block and line, or where C is wrong). A learner needs the cause, once. So
the report's failing cases are diagnosed together, from the strongest evidence
there is, and every case the cause explains is grouped under it:

1. the CPU backend's diagnostic build running the kernel as written
   (autograder.judge.localize): a race between two named accesses, a thread's own
   float read before it had a value, a shared tile not fully loaded;
2. a repair one change away that makes every case pass (localize), which confirms
   the line and, by the rule that repaired it, what kind of mistake it is there;
3. the cases' own evidence: an access outside A, B or C, a pattern over beta (every
   case with beta = 0 passes), an index mistake that reproduces C exactly
   (autograder.judge.mapping), C right but for alpha or beta.

Repairs on several lines, each making every case pass alone, are one cause too:
the message lists their lines, but names none as the mistake's.

A line is named only when a repair confirmed it, or when the evidence itself is
about that line (where the bad access was made, where the variable read before it
had a value was declared).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..run import contract
from .causes import cause_of
from .localize import Finding, Repair


@dataclass(frozen=True)
class Diagnosis:
    """A cause of failure: what kind of mistake (KINDS), in words, the learner's line
    (only when the evidence confirms it), and how it was established."""

    kind: str
    message: str
    line: int | None = None
    evidence: str = ""
    # Where no one line is confirmed: the lines a repair each made every case pass on,
    # in the order tried (the message lists them; it names none as the mistake's).
    among: tuple[int, ...] = ()
    # The rule of the repair that confirmed the line (autograder.judge.edits's operator:
    # "relational", "drop term", ...), where one did: what kind of change the mistake is.
    rule: str = ""

    def __str__(self) -> str:
        return self.message


KINDS = {
    "uninitialised": "a thread's own variable read before it had a value",
    "race": "threads race on shared memory",
    "unloaded": "shared memory read that no thread wrote",
    "outside": "an access outside A, B or C",
    "array": "an index outside an array of the kernel's own",
    "misaligned": "a misaligned float4 access",
    "old C": "C's old value used wrongly",
    "formula": "C right but for alpha, beta or its layout",
    "index": "an index mistake that reproduces C exactly",
    "line": "a mistake one change on a line repairs",
    "wrong": "wrong elements, with no cause established",
}
REPAIRED = "one change there makes every case pass"


def diagnose(cases: list, finding: Finding | None, filename: str) -> list[tuple[Diagnosis, list]]:
    """The causes of the failing cases among `cases` (CaseResults), each with the cases
    it explains, strongest evidence first."""
    failing = [c for c in cases if not c.ok]
    if not failing:
        return []
    confirmed = _confirmed(finding)
    where = lambda line: f"{filename}:{line}"  # noqa: E731
    evidence = finding.evidence if finding else ""
    found = _from_evidence(evidence, confirmed, where) if evidence else None
    if found is None and confirmed:
        found = _from_repair(confirmed, cases, failing, where)
    if found is not None and confirmed:
        found = replace(
            found, evidence=f"{found.evidence}; {_search_words(finding)}", rule=confirmed[0].operator
        )
    if found is not None:
        # One change makes every case pass: every failing case is this cause's.
        if confirmed or _explains_all(found, failing):
            return [(found, failing)]
        return _grouped(failing, found, where)
    if finding is not None and finding.repairs:
        return [(_on_several_lines(finding, failing, where), failing)]
    return _grouped(failing, None, where)


def _on_several_lines(finding: Finding, failing: list, where) -> Diagnosis:
    """Repairs on several lines, each making every case pass alone (a factor alpha
    belongs in the sum or in each of its terms): one bug, on one of them; the evidence
    cannot tell which, so none is named as the mistake's."""
    message = f"{_sentence(failing[0].message)}; {_several_words(finding, where)}"
    evidence = f"{REPAIRED}, on each of several lines; {_search_words(finding)}"
    return Diagnosis("line", message, None, evidence, among=_repaired_lines(finding))


def _repaired_lines(finding: Finding) -> tuple[int, ...]:
    return tuple(dict.fromkeys(r.line for r in finding.repairs))  # in the order tried


def _several_words(finding: Finding, where) -> str:
    lines = _repaired_lines(finding)
    listed = ", or at ".join(where(n) for n in lines[:3])
    more = f" (or at {len(lines) - 3} more lines)" if len(lines) > 3 else ""
    return f"one change at {listed}{more}, makes every case pass"


def _confirmed(finding: Finding | None) -> tuple[Repair, ...]:
    """The repairs that confirm where the mistake is: all of them, when they lie on one
    line; or when each adds a barrier (a barrier missing, which several places would
    fix: the message lists them); or those of the one line, or of the one statement
    written over several lines (a loop's bound and its step), where a repair is no
    guard, when every repair elsewhere only adds a guard (a condition added around an
    index past its array hides the wrong bound that the mistake's own line repairs)."""
    if finding is None or not finding.repairs:
        return ()
    lines = {r.line for r in finding.repairs}
    if len(lines) == 1 or all(r.operator == "add barrier" for r in finding.repairs):
        return finding.repairs
    unguarded = [r for r in finding.repairs if r.operator != "add condition"]
    on = {r.line for r in unguarded}
    if len(on) == 1:
        return tuple(r for r in finding.repairs if r.line in on)
    return tuple(unguarded) if _one_statement(unguarded) else ()


def _one_statement(repairs) -> bool:
    """Whether repairs on several lines all change one statement."""
    statements = {r.statement for r in repairs}
    return len(statements) == 1 and statements.pop()[0] > 0


def _line(confirmed) -> int | None:
    """The one line the repairs confirm: theirs, or of one statement's lines the first
    repair's (the one tried first, the likeliest by the order); None when they are on
    several statements."""
    lines = {r.line for r in confirmed}
    if len(lines) == 1:
        return lines.pop()
    return confirmed[0].line if _one_statement(confirmed) else None


def _search_words(finding: Finding) -> str:
    """How the repair was found, for whoever measures the localizer (mutants)."""
    first = min(r.rank for r in finding.repairs)
    return (
        f"repair {first + 1} of {finding.of} in the order tried, {finding.tried} tried in "
        f"{finding.seconds:.1f} s"
    )


def _beta_only(cases: list, failing: list) -> bool:
    """Every case with beta = 0 passed, every failing one has beta != 0, and some case
    of each kind ran: C's old value is what the kernel gets wrong."""
    zero = [c for c in cases if c.beta == 0]
    return bool(zero) and all(c.ok for c in zero) and all(c.beta != 0 for c in failing)


def _which_betas(cases: list, failing: list) -> str:
    """Which cases with beta != 0 fail, where every case with beta = 0 passes: all of
    them, those of some values of beta (the suite runs both signs, checker.beta_of), or
    some of them."""
    nonzero = [c for c in cases if c.beta != 0]
    if all(not c.ok for c in nonzero):
        return "every case with beta = 0 passes and every case with beta != 0 fails"
    wrong = sorted({c.beta for c in failing})
    right = sorted({c.beta for c in nonzero if c.ok} - set(wrong))
    values = lambda betas: " or ".join(f"beta = {b:g}" for b in betas)  # noqa: E731
    if right:
        return (
            f"every case with beta = 0 or {values(right)} passes and every case with "
            f"{values(wrong)} fails"
        )
    some = f"{len(failing)} of {len(nonzero)}"
    return f"every case with beta = 0 passes and {some} with beta != 0 fail"


def _from_evidence(evidence: str, confirmed, where) -> Diagnosis | None:
    """What the diagnostic build stopped on, said as it said it, with the repair's line."""
    text = _strip_hint(evidence)
    declared = re.search(r"declared at [^:]+:(\d+)", evidence)
    if "has no initial value" in evidence:
        # The declaration is where the mistake is only when a value given there makes
        # every case pass: a variable a skipped loop should have written has none either.
        line = _line(confirmed) if confirmed else None
        if confirmed and (not declared or line != int(declared.group(1))):
            text += f"; {_repair_words(confirmed, where)}"
        return Diagnosis("uninitialised", text, line, "the CPU backend's diagnostic build")
    kinds = (
        ("with no __syncthreads() between them", "race"),
        ("the tile is not fully loaded", "unloaded"),
        ("its own array", "array"),
        ("the shared array", "array"),
        ("misaligned", "misaligned"),
        ("floats past the end of", "outside"),
        ("float past the end of", "outside"),
        ("before the start of", "outside"),
    )
    kind = next((k for phrase, k in kinds if phrase in evidence), None)
    if kind is None:
        return None
    line = _line(confirmed) if confirmed else None
    if confirmed:
        text += f"; {_repair_words(confirmed, where)}"
    elif kind == "outside":
        text = evidence  # with the bounds to check (advice.explain_fault)
    return Diagnosis(kind, text, line, "the CPU backend's checked run")


def _strip_hint(fault: str) -> str:
    """A backend's fault without the advice the judge appended (advice.explain_fault:
    ": check ...", ": use scalar accesses ...")."""
    return re.sub(r": (?:check|use scalar accesses)[^;]*$", "", fault)


def _from_repair(confirmed, cases, failing, where) -> Diagnosis:
    """The line a repair confirmed, and what kind of mistake the rule that repaired it
    says is there. Where the cases already named it (an index mistake reproduced
    exactly, alpha or beta ignored), their words lead."""
    line = _line(confirmed)
    words = _repair_words(confirmed, where)
    if all(r.operator == "add barrier" for r in confirmed):
        return Diagnosis("race", words, line, REPAIRED)
    if _beta_only(cases, failing):
        message = f"{_which_betas(cases, failing)}: C's old value is used wrongly; {words}"
        return Diagnosis("old C", message, line, REPAIRED)
    named = _said_by_cases(failing)
    if named:
        kind, said = named
        said = re.sub(r", at [^\s,;]+:\d+(?: and \d+)?", "", said)
        return Diagnosis(kind, f"{said}; {words}", line, REPAIRED)
    return Diagnosis("line", words, line, REPAIRED)


# The whole-formula checks' (checker._whole_formula_hint) and the index hypotheses'
# (mapping) words: each reproduced C exactly.
_FORMULA = (
    "without + beta*C", "without alpha", "C looks transposed", "column-major order",
    "without alpha*A*B",
)  # fmt: skip
_INDEX = (
    ") should: the", "were written, though the grid has", "holds the same sum",
    "is read with rows", "tiles transposed",
)  # fmt: skip


# What step 09's reduction made of its layers, where that reproduced C exactly
# (autograder.judge.reduction).
_LAYERS = (
    "C holds the sum of the first", "alone: add every layer", "reads the same layer",
)  # fmt: skip


# A C of infinity made NaN where beta = 0, a case that passes with a finite C
# (checker.READ_UNREAD_C).
_UNREAD = ("the kernel reads C although beta = 0",)
_SAID = (("formula", _FORMULA), ("index", _INDEX), ("layers", _LAYERS), ("old C", _UNREAD))


def _said_by_cases(failing: list) -> tuple[str, str] | None:
    """A cause every failing case's own message gives the same words to (the mapping's
    exact reproductions, the whole-formula checks, the reduction's and a C read where
    beta = 0), with its kind."""
    first = failing[0].message
    for kind, phrases in _SAID:
        for phrase in phrases:
            if phrase in first and all(phrase in c.message for c in failing):
                return kind, _sentence(first)
    return None


def _sentence(message: str) -> str:
    """A case's message without the first wrong element it quotes."""
    return re.sub(r" \(first: \(\d+, \d+\)[^)]*\)", "", message)


def _repair_words(confirmed, where) -> str:
    """Where the mistake is and what kind it is, from the rule that repaired it, never
    the repair itself."""
    r = confirmed[0]
    at = where(r.line)
    lines = sorted({c.line for c in confirmed})
    if len(lines) > 1 and not _one_statement(confirmed):  # a barrier, which several places take
        listed = ", ".join(where(n) for n in lines[:3])
        more = f" and {len(lines) - 3} more places" if len(lines) > 3 else ""
        return (
            f"a __syncthreads() is missing: one added at any of {listed}{more} makes every "
            "case pass"
        )
    # The learner's own expression: the part changed, or the whole where that is short.
    shown = " ".join(r.before.split())
    if len(shown) < 12 and r.context:
        shown = r.context
    shown = shown if len(shown) <= 48 else shown[:45] + "..."
    said = {
        "add barrier": f"a __syncthreads() is missing at {at}",
        "add initial value": f"a variable declared at {at} has no initial value",
        "drop statement": f"the statement at {at} should not be there",
        "replace statement": f"the statement at {at} is not what the step needs there",
        "restore statement": f"a statement the step needs is missing next to {at}",
        "twin": f"`{shown}` at {at} lacks a part of its twin at line {r.swapped[1]}",
        "add term": f"`{shown}` at {at} lacks a term",
        "add condition": f"the condition `{shown}` at {at} lacks a bound",
        "drop condition": f"the condition `{shown}` at {at} has a bound too many",
        "swap indices": f"`{shown}` at {at} has its two indices exchanged",
        "add factor": f"`{shown}` at {at} lacks a factor",
        "drop term": f"`{shown}` at {at} has a term too many",
        "dimension": f"`{shown}` at {at} uses the wrong dimension of M, N and K",
        "parameter": f"`{shown}` at {at} uses the wrong tile parameter",
        "variable": f"`{shown}` at {at} uses the wrong variable",
        "builtin": f"`{shown}` at {at} takes the wrong thread or block index",
        "scalar": f"`{shown}` at {at} uses alpha for beta, or beta for alpha",
        "relational": f"the comparison `{shown}` at {at} is the wrong one",
        "constant": f"a constant in `{shown}` at {at} is off",
    }.get(r.operator, f"an operator in `{shown}` at {at} is the wrong one")
    old, new = r.swapped
    if r.operator == "dimension" and new:
        said = f"`{shown}` at {at} uses {old} where it should use {new}"
    if r.operator == "replace statement" and old:  # the step's statement, one token apart
        said = _one_token_words(shown, at, old, new)
    if r.operator == "relational" and {old, new} in ({"<", "<="}, {">", ">="}):
        said = f"the comparison `{shown}` at {at} is off by one"
    also = [where(n) for n in lines if n != r.line]
    if also:  # another line of the same statement (a loop's step, for its bound)
        return f"{said} ({REPAIRED}; so does one at {', '.join(also)}, in the same statement)"
    return f"{said} ({REPAIRED})"


# The sizes a kernel is given, as the contracts name them: the matrices' M, N and K, and
# the reduction's number of layers, splits.
_SIZES = frozenset(
    p.name for c in contract.CONTRACTS.values() for p in c.parameters if p.types[0] == "int"
)


def _one_token_words(shown: str, at: str, old: str, new: str) -> str:
    """Which of the learner's tokens is wrong, where a statement differs from the step's
    in that one: a size named as the dimension rule names it, anything else without
    what it should be."""
    if new in _SIZES:
        return f"`{shown}` at {at} uses {old} where it should use {new}"
    if re.fullmatch(r"[A-Za-z_]\w*", old):
        return f"`{shown}` at {at} should not use {old} there"
    if re.fullmatch(r"\w+", old):
        return f"a constant in `{shown}` at {at} is off"
    return f"an operator in `{shown}` at {at} is the wrong one"


def _explains_all(found: Diagnosis, failing: list) -> bool:
    """Whether every failing case shows what the evidence found (a kernel-wide cause
    such as a race or a variable without a value shows in every case it fails)."""
    return found.kind in ("uninitialised", "race", "unloaded", "array")


def _grouped(failing: list, found: Diagnosis | None, where) -> list[tuple[Diagnosis, list]]:
    """Without a confirmed cause: the cases grouped by what their own evidence is (an
    access outside a matrix at one line, or wrong elements), not by its wording."""
    groups: dict[tuple, list] = {}
    for case in failing:
        groups.setdefault(_evidence_key(case), []).append(case)
    out = []
    for key, group in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        first = group[0]
        if found is not None and key[0] == found.kind:
            out.append((found, group))
            continue
        # A fault's line is where the access was, not where the mistake is: no line.
        out.append((Diagnosis(key[0], _sentence(first.message)), group))
    return out


def _evidence_key(case) -> tuple[str, str, int]:
    """(kind, matrix, line) of a failing case's own evidence."""
    m = re.search(r"\b(read|accessed) (\w+)\[-?\d+\], .*?, at [^:\s]+:(\d+)", case.message)
    if m:
        return "outside", m.group(2), int(m.group(3))
    m = re.search(r"(misaligned|its own array|the shared array|before any thread).*?:(\d+)", case.message)
    if m:
        return "fault", m.group(1), int(m.group(2))
    named = _said_by_cases([case])
    if named:
        return named[0], cause_of(_sentence(case.message)), 0
    return "wrong", "", 0


def with_causes(cases: list, causes: list[tuple[Diagnosis, list]]) -> list:
    """The cases, each failing one with the cause that explains it (CaseResult.cause)."""
    cause_of = {id(c): d for d, group in causes for c in group}
    return [replace(c, cause=cause_of[id(c)]) if id(c) in cause_of else c for c in cases]


def where_it_stopped(finding: Finding | None, filename: str) -> Diagnosis | None:
    """For a kernel that crashed in a case or never finished one: what the CPU backend
    saw it do there (a bad access, with its line), and the line where one change makes
    every case right, as a cause (its kind from what the CPU backend saw, else from the
    repair; the line and the repair's rule where a repair confirms one); None when
    neither is known."""
    if finding is None:
        return None
    said = []
    confirmed = _confirmed(finding)
    where = lambda line: f"{filename}:{line}"  # noqa: E731
    if confirmed:  # the line first: what the learner looks at
        said.append(_repair_words(confirmed, where))
    elif finding.repairs:
        said.append(_several_words(finding, where))
    if finding.evidence:
        said.append(f"on the CPU backend, {_strip_hint(finding.evidence)}")
    if not said:
        return None
    seen = _from_evidence(finding.evidence, (), where) if finding.evidence else None
    barrier = confirmed and all(r.operator == "add barrier" for r in confirmed)
    kind = seen.kind if seen else "race" if barrier else "line"
    line, rule = (_line(confirmed), confirmed[0].operator) if confirmed else (None, "")
    return Diagnosis(kind, "; ".join(said), line, REPAIRED if confirmed else "", rule=rule)


def repaired(finding: Finding | None) -> bool:
    """Whether a repair confirms where the mistake is."""
    return bool(_confirmed(finding))
