"""Repairs taken from the step's own kernel, where a learner's kernel aligns with it: a
statement written otherwise replaced by the step's (of a loop or a branch, its condition
or its step, where that alone differs), or a statement the step has and the learner's
kernel lacks put back where its neighbours are. No single-point rule
(autograder.judge.edits) can add a statement that is not there; aligning a program with
a correct one can (Clara repaired most MOOC attempts so: Gulwani, Radicek and Zuleger,
PLDI 2018).

Statements are aligned by their own text (a loop's header without its body, so that a
mistake inside a loop leaves the loop itself aligned), whitespace aside, in the order
they are written. A repair is a candidate like any other (localize confirms it only
when every case passes with it); where most of the kernel does not read as the step
does, there are none.
"""

from __future__ import annotations

import difflib
import re

from ..run.syntax import walk
from .edits import Edit
from .scopes import Kernel, inside_body

_STATEMENTS = {"expression_statement", "if_statement", "for_statement", "while_statement",
               "do_statement", "declaration"}  # fmt: skip
_BODIES = ("body", "consequence", "alternative")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
OPERATORS = ("replace statement", "restore statement")


def repairs(text: str, reference: str) -> list[Edit]:
    """Edits of `text` that make one of its statements the step's (`reference`)."""
    ours, theirs = Kernel.parse(text), Kernel.parse(reference)
    mine, steps = _statements(ours), _statements(theirs)
    matcher = difflib.SequenceMatcher(None, [s[1] for s in steps], [s[1] for s in mine],
                                      autojunk=False)  # fmt: skip
    blocks = matcher.get_opcodes()
    if 2 * sum(i2 - i1 for tag, i1, i2, _, _ in blocks if tag == "equal") < len(steps):
        return []  # the learner's kernel is not the step's, written a little otherwise
    matched = {i1 + d: mine[j1 + d][0] for tag, i1, i2, j1, _ in blocks if tag == "equal"
               for d in range(i2 - i1)}  # fmt: skip
    names = set(_NAME.findall(text))
    found = []
    for tag, i1, i2, j1, j2 in blocks:
        if tag == "equal":
            continue
        wanted = [s for s in _outermost([n for n, _ in steps[i1:i2]])
                  if _uses(theirs, s) <= names]  # fmt: skip
        for node in (n for n, _ in mine[j1:j2]):
            if not _holds_statements(node):
                found += [e for s in wanted if (e := _replaced(ours, node, theirs, s))]
            else:
                found += [e for s in wanted if (e := _part_replaced(ours, node, theirs, s))]
        if j1 == j2:
            # A declaration put back would be in scope only inside the repair's switch.
            found += [e for s in wanted if s.type != "declaration"
                      and (e := _restored(ours, theirs, s, matched, steps))]  # fmt: skip
    return found


def on_reference(text: str, reference: str, line: int) -> tuple[int, str] | None:
    """The step's statement that the learner's statement on `line` stands for, as (its
    line in `reference`, its text), aligned as `repairs` aligns them: one the same text,
    or one of a run written otherwise in the same place (a single changed statement
    stands for the step's statement it replaced). None where the kernel does not read as
    the step does, or the line is in no statement, or in one the step lacks. It lets a
    class's mistakes be counted by the step's statement, whatever lines and names each
    learner's kernel has around it."""
    ours, theirs = Kernel.parse(text), Kernel.parse(reference)
    mine, steps = _statements(ours), _statements(theirs)
    covering = [j for j, (n, _) in enumerate(mine)
                if ours.line(n) <= line <= ours.source.line(n.end_point.row)
                and not _loop_counter(n)]  # fmt: skip
    if not covering:
        return None
    j = min(covering, key=lambda j: mine[j][0].end_byte - mine[j][0].start_byte)  # innermost
    matcher = difflib.SequenceMatcher(None, [s[1] for s in steps], [s[1] for s in mine],
                                      autojunk=False)  # fmt: skip
    blocks = matcher.get_opcodes()
    if 2 * sum(i2 - i1 for tag, i1, i2, _, _ in blocks if tag == "equal") < len(steps):
        return None
    for tag, i1, i2, j1, j2 in blocks:
        if j1 <= j < j2 and tag in ("equal", "replace"):
            node, said = steps[min(i1 + (j - j1), i2 - 1)]
            return theirs.line(node), said
    return None


def _loop_counter(node) -> bool:
    """Whether node is a for loop's own declaration (`int m = 0;`), part of its header."""
    parent = node.parent
    return parent is not None and parent.type == "for_statement" and (
        (init := parent.child_by_field_name("initializer")) is not None and init.id == node.id
    )


def _statements(k: Kernel) -> list[tuple[object, str]]:
    """Each statement of the kernel's function bodies with its own text, in order."""
    found = []
    for node in walk(k.source.root):
        if node.type in _STATEMENTS and inside_body(node):
            own = k.source.data[slice(*_header(node))]
            found.append((node, " ".join(own.decode().split())))
    return found


def _uses(k: Kernel, statement) -> set[str]:
    """The names a statement uses that it does not declare itself: those the learner's
    kernel must have for the statement to compile there."""
    declared = set()
    for n in walk(statement):
        if n.type in ("init_declarator", "declaration"):
            d = n.child_by_field_name("declarator")
            while d is not None and d.type not in ("identifier", "init_declarator"):
                d = d.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                declared.add(k.text(d))
    # Its identifiers, not every word of it: a keyword (`if`, `return`) is no name the
    # kernel must have, and a statement that is the kernel's only `if` was never put back.
    used = {k.text(n) for n in walk(statement) if n.type.endswith("identifier")}
    return used - declared


def _holds_statements(node) -> bool:
    return any(n.type in _STATEMENTS for n in walk(node) if n.id != node.id)


def _outermost(nodes: list) -> list:
    """Those of nodes not inside another of them."""
    spans = {(n.start_byte, n.end_byte) for n in nodes}
    inside = lambda n, a, b: a <= n.start_byte and n.end_byte <= b  # noqa: E731
    return [n for n in nodes
            if not any(inside(n, a, b) for a, b in spans - {(n.start_byte, n.end_byte)})]


def _one_token(ours: Kernel, mine, theirs: Kernel, step) -> tuple[str, str]:
    """(the learner's token, the step's) where the two nodes differ in that one token
    alone (a name, a number or an operator: the parser's leaves), so that a message can
    say which of the learner's tokens is wrong; else ("", "")."""
    a, b = ([k.text(n) for n in walk(node) if n.child_count == 0 and n.type != "comment"]
            for k, node in ((ours, mine), (theirs, step)))  # fmt: skip
    differ = [(x, y) for x, y in zip(a, b) if x != y]
    return differ[0] if len(a) == len(b) and len(differ) == 1 else ("", "")


def _one_line(text: str) -> str:
    """A statement on one line, so that it keeps the lines of what it replaces; a
    #pragma in it (unroll) is left out, as it would end on the line it begins."""
    return " ".join(re.sub(r"^\s*#.*$", "", text, flags=re.M).split())


def _replaced(ours: Kernel, node, theirs: Kernel, statement) -> Edit | None:
    """node's statement written as the step's, on node's lines; for a declaration, its
    value (a variable declared again would live only inside the repair's switch)."""
    if node.type == "declaration" or statement.type == "declaration":
        mine, step = _value(node), _value(statement)
        if mine is None or step is None or ours.text(mine[0]) != theirs.text(step[0]):
            return None  # another variable: not this declaration's value
        value, text = mine[1], _one_line(theirs.text(step[1]))
        return Edit(value.start_byte, value.end_byte, text, ours.line(value), "replace statement",
                    ours.text(value), swapped=_one_token(ours, value, theirs, step[1]))  # fmt: skip
    before = ours.text(node)
    text = _one_line(theirs.text(statement)) + "\n" * before.count("\n")
    return Edit(node.start_byte, node.end_byte, text, ours.line(node), "replace statement", before,
                "statement", _one_token(ours, node, theirs, statement))  # fmt: skip


def _part_replaced(ours: Kernel, node, theirs: Kernel, statement) -> Edit | None:
    """A loop's or a branch's condition, or a loop's step, written as the step's, where
    the step's statement there is one of the same kind that differs from it there alone:
    the body, aligned statement by statement on its own, stays the learner's (and a
    condition is an expression, which the repairs' schema can switch)."""
    if statement.type != node.type or not _holds_statements(statement):
        return None
    differ = [f for f in ("initializer", "condition", "update")
              if _words(ours, _part(node, f)) != _words(theirs, _part(statement, f))]  # fmt: skip
    if len(differ) != 1 or differ[0] == "initializer":
        return None
    mine, step = _part(node, differ[0]), _part(statement, differ[0])
    if mine is None or step is None:
        return None
    text = _one_line(theirs.text(step))
    return Edit(mine.start_byte, mine.end_byte, text, ours.line(mine), "replace statement",
                ours.text(mine), swapped=_one_token(ours, mine, theirs, step))  # fmt: skip


def _part(node, field: str):
    """A statement's part (`condition`: a branch's or a loop's, inside its parentheses)."""
    part = node.child_by_field_name(field)
    if part is not None and part.type == "condition_clause":
        part = part.child_by_field_name("value")
    return part


def _words(k: Kernel, node) -> str | None:
    return None if node is None else " ".join(k.text(node).split())


def _header(node) -> tuple[int, int]:
    """The bytes of a statement's own text, up to the body it runs (_BODIES)."""
    body_starts = [b.start_byte for f in _BODIES if (b := node.child_by_field_name(f))]
    end = min(body_starts, default=node.end_byte)
    return node.start_byte, end


def _value(declaration) -> tuple | None:
    """(name, value) of a declaration of one variable with a value."""
    if declaration.type != "declaration":
        return None
    declarators = declaration.children_by_field_name("declarator")
    if len(declarators) != 1 or declarators[0].type != "init_declarator":
        return None
    d = declarators[0]
    name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
    return (name, value) if name is not None and value is not None else None


def _restored(ours: Kernel, theirs: Kernel, statement, matched: dict, steps: list) -> Edit | None:
    """The step's statement put back before the learner's statement that aligns with
    its next neighbour in the same block, or else after the one that aligns with the
    neighbour before it; named by the last line of the learner's statement it follows,
    where there is one (what the learner wrote last before the gap)."""
    index = {n.id: i for i, (n, _) in enumerate(steps)}
    block = [c for c in statement.parent.named_children if c.id in index]
    at = next(i for i, c in enumerate(block) if c.id == statement.id)
    text = _one_line(theirs.text(statement))
    if at + 1 < len(block) and (after := matched.get(index[block[at + 1].id])) is not None:
        return Edit(after.start_byte, after.start_byte, text + " ", _line_before(ours, after),
                    "restore statement", "", "insert")  # fmt: skip
    if at > 0 and (before := matched.get(index[block[at - 1].id])) is not None:
        return Edit(before.end_byte, before.end_byte, " " + text, ours.line(before),
                    "restore statement", "", "insert")  # fmt: skip
    return None



def _line_before(k: Kernel, node) -> int:
    """The last line of the statement before node in its block, or node's own line."""
    before = node.prev_named_sibling
    while before is not None and before.type in ("comment", "preproc_call"):
        before = before.prev_named_sibling
    if before is None or before.type not in _STATEMENTS:
        return k.line(node)
    return k.source.line(before.end_point.row)
