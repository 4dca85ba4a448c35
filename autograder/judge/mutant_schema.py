"""A kernel with every repair in it, each switched on at run time: one compile serves
them all (autograder.judge.localize builds it into the CPU backend's CPU_VARIANTS library).

A mutant schema keeps the kernel's lines: each repair's text is flattened onto the
line of what it replaces, so the learner's line numbers hold in every message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..run.syntax import Source, walk
from . import edits
from .scopes import inside_body, is_constexpr

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def flat(text: str) -> str:
    """An alternative's text on one line (the schema keeps the kernel's lines)."""
    return " ".join(_COMMENT.sub(" ", text).split())


@dataclass
class _Site:
    start: int
    end: int
    kind: str  # an Edit's kind, or "prologue" or "unit" (see schema)
    edits: list = field(default_factory=list)
    statement: bool = False  # for a unit: a whole statement, not an expression


# What sorts first among spans that start at one place: the outermost wraps the rest,
# and an insertion goes before whatever starts where it is (a statement added before
# a statement, never inside the expression that begins it).
_FIRST = {"prologue": 0, "insert": 1, "loop": 2, "unit": 3}


def schema(source: Source, repairs: list[edits.Edit]) -> tuple[str, list[tuple[int, int, edits.Edit]]]:
    """The text with every repair switchable at run time, and (site, choice, edit) for
    each: `__cpu::site == site && __cpu::choice == choice` runs that repair alone.

    The kernel must run fast with one repair switched on, so the repairs are grouped
    by unit (a statement, a declaration's value, a loop's or an if's condition): a
    unit runs as written unless the repair switched on lies in it, which costs one
    comparison each time it runs; only that unit runs its switchable copy."""
    sites: dict[tuple[int, int, str], _Site] = {}
    fixed = _constant_values(source)
    for e in repairs:
        if "#" in e.text:
            continue  # a preprocessor line inside the span: it cannot be put on one line
        if any(lo <= e.start and e.end <= hi for lo, hi in fixed):
            continue  # a value the compiler must know (an array's size): no switch there
        sites.setdefault((e.start, e.end, e.kind), _Site(e.start, e.end, e.kind)).edits.append(e)
    spans = list(sites.values())
    for node in walk(source.root):
        if node.type in ("function_definition", "lambda_expression"):
            # Each function reads the switch into locals first: a global would be read
            # again after every store to memory (floats may alias ints in this build).
            body = node.child_by_field_name("body")
            if body is not None and body.type == "compound_statement" and not is_constexpr(node):
                spans.append(_Site(body.start_byte + 1, body.start_byte + 1, "prologue"))
        elif not inside_body(node):
            continue
        elif (unit := _unit(node)) is not None:
            spans.append(_Site(node.start_byte, node.end_byte, "unit", statement=unit))
        if node.type in ("for_statement", "while_statement"):
            # Every turn of a loop counts against the budget: a repair can make a loop
            # endless without touching memory (a bound that no longer moves).
            condition = node.child_by_field_name("condition")
            if condition is not None and condition.type == "condition_clause":
                condition = condition.child_by_field_name("value")
            if condition is not None:
                spans.append(_Site(condition.start_byte, condition.end_byte, "loop"))
    spans.sort(key=lambda s: (s.start, _FIRST.get(s.kind, 4), -s.end))
    numbered = [s for s in spans if s.edits]
    numbers = {id(site): n for n, site in enumerate(numbered)}
    data = source.data

    def render(lo: int, hi: int, inside: list[_Site]) -> str:
        """data[lo:hi] with the sites in `inside` (sorted, all within it) switchable."""
        out, at, i = [], lo, 0
        while i < len(inside):
            site, i = inside[i], i + 1
            nested = []
            while i < len(inside) and inside[i].start < site.end:
                if inside[i].end <= site.end:  # spans of a tree nest or are apart
                    nested.append(inside[i])
                i += 1
            out.append(data[at : site.start].decode())
            inner = render(site.start, site.end, nested)
            if site.kind == "unit":
                held = [numbers[id(n)] for n in nested if id(n) in numbers]
                original = data[site.start : site.end].decode()
                out.append(_unit_switch(site, held, inner, original) if held else original)
            elif site.kind == "loop":
                out.append(f"(__cpu::turn() && ({inner}))")
            else:
                out.append(_switch(site, numbers.get(id(site), -1), inner))
            at = site.end
        out.append(data[at:hi].decode())
        return "".join(out)

    candidates = [(numbers[id(s)], c, e) for s in numbered for c, e in enumerate(s.edits)]
    return render(0, len(data), spans), candidates


def _constant_values(source: Source) -> list[tuple[int, int]]:
    """The spans of the values given to names that size an array or are a template's
    argument (`const int n = BK * BM / 256; float r[4 * n];`), and of the names those
    are made of: a value switched at run time is no constant, and the kernel would not
    compile."""
    used = set()
    for node in walk(source.root):
        if node.type == "array_declarator":
            node = node.child_by_field_name("size")
        elif node.type != "template_argument_list":
            continue
        used |= {source.text(n) for n in walk(node) if n.type == "identifier"} if node else set()
    values = {
        source.text(name): value
        for node in walk(source.root)
        if node.type == "init_declarator"
        and (name := node.child_by_field_name("declarator")) is not None
        and (value := node.child_by_field_name("value")) is not None
    }  # fmt: skip
    fixed: dict[str, object] = {}
    while names := [n for n in used if n in values and n not in fixed]:
        for name in names:  # and so are the names those values are made of
            fixed[name] = values[name]
            used |= {source.text(n) for n in walk(values[name]) if n.type == "identifier"}
    return [(value.start_byte, value.end_byte) for value in fixed.values()]


def _unit(node) -> bool | None:
    """Whether node is a unit of the schema: True for a whole statement, False for an
    expression, None for neither. A unit holds no statement of its own (a lambda)."""
    if any(n.type == "compound_statement" for n in walk(node)):
        return None
    parent = node.parent
    if node.type in ("expression_statement", "return_statement") and parent is not None and (
        parent.type in ("compound_statement", "for_statement", "if_statement", "else_clause")
    ):  # fmt: skip
        return True
    if parent is None:
        return None
    if parent.type == "init_declarator" and parent.child_by_field_name("value") == node:
        # A brace initialiser's one value is the unit (`int i{e}`): a list in braces is
        # not an expression, so the switch cannot choose between two.
        return None if node.type == "initializer_list" else False
    if (parent.type == "initializer_list" and parent.named_child_count == 1 and parent.parent
            is not None and parent.parent.type == "init_declarator"):  # fmt: skip
        return False
    if parent.type == "for_statement" and node in (
        parent.child_by_field_name("condition"), parent.child_by_field_name("update")
    ):  # fmt: skip
        return False
    if parent.type == "condition_clause" and parent.child_by_field_name("value") == node:
        return False
    return None


def _unit_switch(unit: _Site, held: list[int], inner: str, original: str) -> str:
    """The unit as written, or its switchable copy when the repair on lies in it (its
    sites are numbered without a gap: they nest in the unit)."""
    first, count = min(held), max(held) - min(held) + 1
    on = f"(unsigned)(__site - {first}) < {count}u"
    if unit.statement:
        return f"if ({on}) {{ {flat(inner)} }} else {{ {original} }}"
    return f"(({on}) ? ({flat(inner)}) : ({original}))"


def _switch(site: _Site, number: int, inner: str) -> str:
    here = f"__site == {number}"
    if site.kind == "prologue":
        return " const int __site = __cpu::site, __choice = __cpu::choice; "
    if site.kind == "insert":
        cases = " ".join(
            f"if (__choice == {c}) {{ {flat(e.text)} }}" for c, e in enumerate(site.edits)
        )
        return f"if ({here}) {{ {cases} }} "
    if site.kind == "statement":
        cases = " ".join(
            f"case {c}: {{ {flat(e.text)} }} break;" for c, e in enumerate(site.edits)
        )
        return f"if ({here}) {{ switch (__choice) {{ {cases} }} }} else {{ {inner} }}"
    chain = "".join(
        f"__choice == {c} ? ({flat(e.text)}) : " for c, e in enumerate(site.edits[:-1])
    )
    return f"({here} ? ({chain}({flat(site.edits[-1].text)})) : ({inner}))"
