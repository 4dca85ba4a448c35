"""Single-point changes to a kernel's source, by rule: the mutants that measure the
checker's feedback (`python -m autograder mutants`), and the repairs that find a
learner's mistake by evidence (autograder.judge.localize).

A kernel is parsed with tree-sitter's CUDA grammar (autograder.run.syntax) and
every change replaces the text of one node inside a function body, so each keeps
the kernel's lines where they were. The rules are those of mutation testing for
C (operators exchanged, constants moved by one, a term or a statement dropped:
what universalmutator's C rules do) plus those a CUDA kernel needs (threadIdx and
blockIdx, x and y exchanged; M, N and K exchanged; a barrier dropped or moved; an
accumulator left without its value; alpha and beta misused). A repair undoes one
of these: it exchanges back, adds the term or the factor, the barrier or the
initial value that a mutant dropped, or drops what a mistake added. The terms a
repair may add are the kernel's own (its variables, its parameters, and the
products it writes elsewhere): a dropped term usually appears somewhere else in
the same kernel.

Types are read from the declarations (int, float, pointers, arrays), so that a
change only ever puts an int where an int was: the variants of a kernel all
compile together (localize builds them into one library).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from ..run.syntax import Source, walk
from .scopes import (
    BUILTINS, FLOAT_TYPES, RELATIONAL, Kernel, Symbol, declared_name, inside_body, type_name,
)  # fmt: skip

ARITHMETIC = {"+": ("-", "*"), "-": ("+",), "*": ("+", "/"), "/": ("*", "%"), "%": ("/",)}
ASSIGNMENT = {"=": ("+=",), "+=": ("=", "-="), "-=": ("+=",), "*=": ("=",)}
BARRIER = "__syncthreads();"


@dataclass(frozen=True)
class Edit:
    """Replace source[start:end] (bytes) with `text`. line: the learner's line;
    operator: the rule (OPERATORS); before: the text replaced; kind: what the span
    is, "expression", "statement" or "insert" (nothing is replaced)."""

    start: int
    end: int
    text: str
    line: int
    operator: str
    before: str
    kind: str = "expression"
    # The token exchanged, and what for, where the rule exchanges one ("M", "N"; "<", "<=")
    swapped: tuple[str, str] = ("", "")
    context: str = ""  # the whole expression the span is part of, as the learner wrote it

    def apply(self, source: Source) -> str:
        return source.edited([(self.start, self.end, self.text)])


# What each rule does, in words a message can use.
OPERATORS = {
    "relational": "a comparison",
    "arithmetic": "an arithmetic operator",
    "logical": "a logical operator",
    "assignment": "an assignment operator",
    "update": "an increment",
    "constant": "a constant",
    "builtin": "a thread or block index",
    "dimension": "a matrix dimension",
    "parameter": "a tile parameter",
    "scalar": "alpha or beta",
    "variable": "a variable",
    "drop term": "a term dropped",
    "drop condition": "a condition dropped",
    "add condition": "a condition added",
    "swap indices": "two indices exchanged",
    "add term": "a term added",
    "add factor": "a factor added",
    "drop statement": "a statement dropped",
    "drop barrier": "a __syncthreads() dropped",
    "move barrier": "a __syncthreads() moved",
    "add barrier": "a __syncthreads() added",
    "drop initial value": "an initial value dropped",
    "add initial value": "an initial value added",
    "twin": "a statement given back what its twin has",  # autograder.judge.twins
    "replace statement": "a statement written as the step writes it",  # autograder.judge.aligned
    "restore statement": "a statement of the step's put back",
}


# ---- the rules --------------------------------------------------------------------------------


_STATEMENTS = {
    "expression_statement", "if_statement", "for_statement", "while_statement", "do_statement",
    "compound_statement",
}  # fmt: skip


_EXPRESSIONS = {
    "binary_expression", "parenthesized_expression", "subscript_expression", "unary_expression",
    "conditional_expression", "field_expression", "call_expression", "assignment_expression",
    "update_expression", "cast_expression", "pointer_expression", "init_declarator",
}  # fmt: skip


def _context(k: Kernel, node) -> str:
    """The whole expression (a declarator with its value, an index, an argument) a node
    is part of."""
    top = node
    while top.parent is not None and top.parent.type in _EXPRESSIONS:
        top = top.parent
    return " ".join(k.text(top).split())


def _edit(k: Kernel, node, text: str, operator: str, swapped=("", "")) -> Edit:
    kind = "statement" if node.type in _STATEMENTS else "expression"
    before = k.text(node)
    return Edit(node.start_byte, node.end_byte, text, k.line(node), operator, before, kind, swapped,
                _context(k, node))  # fmt: skip


def _insert(k: Kernel, at: int, line: int, text: str, operator: str) -> Edit:
    return Edit(at, at, text, line, operator, "", "insert")


def _in_int_context(k: Kernel, node) -> bool:
    """An int expression whose value is used as an index, a bound or an argument."""
    return k.kind(node) == "int"


def _exchanges(k: Kernel, node) -> Iterator[tuple[str, str]]:
    """(replacement, rule) for an identifier or a thread index exchanged with another
    of its class: both directions, so these are their own repairs."""
    if node.type == "field_expression":
        if assigned(node):
            return
        base = node.child_by_field_name("argument")
        field_ = node.child_by_field_name("field")
        if base is None or field_ is None or k.text(base) not in BUILTINS:
            return
        b, f = k.text(base), k.text(field_)
        if f not in ("x", "y"):
            return
        for other in ("x", "y"):
            if other != f:
                yield f"{b}.{other}", "builtin"
        partner = {"threadIdx": "blockIdx", "blockIdx": "threadIdx", "blockDim": "gridDim",
                   "gridDim": "blockDim"}[b]  # fmt: skip
        yield f"{partner}.{f}", "builtin"
        return
    if node.type != "identifier" or not _used_as_value(node):
        return
    symbol = k.symbol(node)
    if symbol is None:
        return
    visible = k.visible(node)
    if symbol.role == "parameter" and symbol.kind == "int":
        rule, same = "dimension", [s for s in visible if s.role == "parameter" and s.kind == "int"
                                   and s.function == symbol.function]  # fmt: skip
    elif symbol.role == "parameter" and symbol.kind == "float":
        rule, same = "scalar", [s for s in visible if s.role == "parameter" and s.kind == "float"
                                and s.function == symbol.function]  # fmt: skip
    elif symbol.role in ("template", "constexpr") and symbol.kind == "int":
        rule, same = "parameter", [s for s in visible if s.role in ("template", "constexpr")
                                   and s.kind == "int"]  # fmt: skip
    elif symbol.role == "local" and symbol.kind == "int":
        rule, same = "variable", [s for s in visible if s.role == "local" and s.kind == "int"
                                  and s.function == symbol.function]  # fmt: skip
    else:
        return
    for s in same:
        if s.name != symbol.name:
            yield s.name, rule


def assigned(node) -> bool:
    """Whether node is written to or has its address taken: what replaces it must
    stay an lvalue, which a switch between alternatives is not."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "assignment_expression" and parent.child_by_field_name("left") == node:
        return True
    if parent.type == "update_expression":
        return True
    if parent.type == "pointer_expression" and parent.text.startswith(b"&"):
        return True
    return parent.type in ("subscript_expression", "field_expression") and assigned(parent)


def _used_as_value(identifier) -> bool:
    parent = identifier.parent
    if parent is None or assigned(identifier):
        return False
    if parent.type in ("init_declarator", "array_declarator", "pointer_declarator",
                       "function_declarator", "parameter_declaration", "declaration"):
        return parent.child_by_field_name("declarator") != identifier and parent.type in (
            "init_declarator", "array_declarator")  # fmt: skip
    if parent.type == "call_expression" and parent.child_by_field_name("function") == identifier:
        return False
    if parent.type == "field_expression" and parent.child_by_field_name("field") == identifier:
        return False
    return parent.type not in ("template_function", "qualified_identifier", "goto_statement",
                               "labeled_statement")  # fmt: skip


def _with_operator(k: Kernel, node, op_node, new: str, operator: str) -> Edit:
    """The whole expression with its operator replaced (an operator alone is no
    expression: the schema switches whole expressions)."""
    text = k.text(node)
    at = op_node.start_byte - node.start_byte
    length = op_node.end_byte - op_node.start_byte
    return _edit(k, node, text[:at] + new + text[at + length :], operator, (text[at : at + length], new))


def _operator_swaps(k: Kernel, node) -> Iterator[tuple[Edit, bool]]:
    """Operators exchanged: (edit, whether it is its own inverse)."""
    op_node = node.child_by_field_name("operator")
    if op_node is None:
        return
    op = k.text(op_node)
    swap = lambda new, rule: _with_operator(k, node, op_node, new, rule)  # noqa: E731
    if node.type == "binary_expression":
        sides = (k.kind(node.child_by_field_name("left")), k.kind(node.child_by_field_name("right")))
        if op in RELATIONAL and all(side in ("int", "float") for side in sides):
            for other in RELATIONAL:
                if other != op:
                    yield swap(other, "relational"), True
        elif op in ("&&", "||"):
            yield swap("||" if op == "&&" else "&&", "logical"), True
        elif op in ARITHMETIC:
            left = k.kind(node.child_by_field_name("left"))
            right = k.kind(node.child_by_field_name("right"))
            if "" in (left, right) or "bool" in (left, right):
                return
            for other in ARITHMETIC[op]:
                if other == "%" and "float" in (left, right):
                    continue
                yield swap(other, "arithmetic"), False
    elif node.type == "assignment_expression" and op in ASSIGNMENT:
        if k.kind(node.child_by_field_name("left")) in ("int", "float"):
            for other in ASSIGNMENT[op]:
                yield swap(other, "assignment"), False
    elif node.type == "update_expression" and op in ("++", "--"):
        yield swap("--" if op == "++" else "++", "update"), True


_ADDITIVE = ("+", "-")


def _reparsed_swaps(k: Kernel, node) -> list[Edit]:
    """An operator exchanged for one that binds otherwise, as the text then reads: a
    mistake that wrote `a * b * c * d` for `a * b + c * d` is one token away, yet no
    operator of its tree gives the sum back. So the whole expression, the token changed."""
    op_node = node.child_by_field_name("operator")
    if node.type != "binary_expression" or op_node is None or k.text(op_node) not in ARITHMETIC:
        return []
    outer = node
    while outer.parent is not None and outer.parent.type == "binary_expression" and (
        k.text(outer.parent.child_by_field_name("operator")) in ARITHMETIC
    ):  # fmt: skip
        outer = outer.parent
    op = k.text(op_node)
    if outer is node or "" in {k.kind(c) for c in (node.child_by_field_name("left"),
                                                    node.child_by_field_name("right"))}:
        return []
    text, at = k.text(outer), op_node.start_byte - outer.start_byte
    return [
        replace(_edit(k, outer, text[:at] + new + text[at + len(op) :], "arithmetic", (op, new)),
                line=k.line(op_node))
        for new in ARITHMETIC[op] if (new in _ADDITIVE) != (op in _ADDITIVE)
    ]  # fmt: skip


def _constants(k: Kernel, node) -> Iterator[Edit]:
    text = k.text(node)
    if node.type in ("true", "false"):
        yield _edit(k, node, "false" if text == "true" else "true", "constant", (text, "false" if text == "true" else "true"))
        return
    if not re.fullmatch(r"\d+", text):
        return
    value = int(text)
    for other in sorted({value + 1, max(value - 1, 0), 0 if value else 1} - {value}):
        yield _edit(k, node, str(other), "constant")


def _operands(k: Kernel, node) -> Iterator[tuple[str, str]]:
    """A binary +, - or * with one operand dropped: (replacement, rule)."""
    op_node = node.child_by_field_name("operator")
    if node.type != "binary_expression" or op_node is None or k.text(op_node) not in "+-*":
        return
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if "" in (k.kind(left), k.kind(right)) or "bool" in (k.kind(left), k.kind(right)):
        return
    yield k.text(left), "drop term"
    if k.text(op_node) != "-":
        yield k.text(right), "drop term"


def _conditions(k: Kernel, node) -> Iterator[tuple[str, str]]:
    """A condition of an && (or ||) dropped: a bound left out."""
    op_node = node.child_by_field_name("operator")
    if node.type != "binary_expression" or op_node is None or k.text(op_node) not in ("&&", "||"):
        return
    yield k.text(node.child_by_field_name("left")), "drop condition"
    yield k.text(node.child_by_field_name("right")), "drop condition"


def _swapped_indices(k: Kernel, node) -> Iterator[tuple[str, str]]:
    """The two indices of a 2D subscript exchanged (As[tx][ty] for As[ty][tx]): a tile
    stored or read transposed. Its own inverse."""
    if node.type != "subscript_expression" or assigned(node):
        return
    inner = node.child_by_field_name("argument")
    if inner is None or inner.type != "subscript_expression":
        return
    if inner.child_by_field_name("argument").type == "subscript_expression":
        return  # three indices or more: which two is a guess
    array = inner.child_by_field_name("argument")
    first = inner.child_by_field_name("indices")
    second = node.child_by_field_name("indices")
    if first is None or second is None or k.text(first) == k.text(second):
        return
    yield f"{k.text(array)}{k.text(second)}{k.text(first)}", "swap indices"


def _statements(k: Kernel) -> list:
    """Statements of function bodies in the region: the places a statement may be
    dropped, or a barrier added before."""
    found = []
    for node in k.nodes():
        if node.type in _STATEMENTS - {"compound_statement"} and (
            node.parent is not None and node.parent.type in ("compound_statement", "for_statement",
                                                              "if_statement", "else_clause")
        ):  # fmt: skip
            found.append(node)
    return found


def _is_barrier(k: Kernel, node) -> bool:
    return node.type == "expression_statement" and re.sub(r"\s", "", k.text(node)) == BARRIER


def _dropped(k: Kernel, node) -> str:
    """What a dropped statement leaves: an empty statement, with the lines kept."""
    return ";" + "\n" * k.text(node).count("\n")


def _gaps(k: Kernel) -> list[tuple[int, int]]:
    """(byte, line) where a statement may be added: before each statement of a
    compound statement, and before its closing brace. line: the first line of the
    gap between the statement before and the next token (where a dropped barrier
    was), or the next token's line when they touch."""
    found = []
    for block in walk(k.source.root):
        if block.type != "compound_statement" or not k.in_region(block) and not inside_body(block):
            continue
        if not inside_body(block) and not (block.parent and block.parent.type in (
            "function_definition", "lambda_expression")):  # fmt: skip
            continue
        previous_end = block.children[0].end_point.row if block.children else block.start_point.row
        for child in block.children[1:]:
            if child.type == "comment":
                continue
            row = child.start_point.row
            line = k.source.line(previous_end + 1 if row > previous_end + 1 else row)
            if (k.lines is None or k.lines[0] <= line <= k.lines[1]) and child.type != "preproc_call":
                found.append((child.start_byte, line))
            if child.type != "preproc_call":
                previous_end = child.end_point.row
    return found


def _float_locals_without_value(k: Kernel) -> Iterator:
    for node in k.nodes():
        if node.type != "declaration" or node.parent is None or node.parent.type != "compound_statement":
            continue
        if type_name(node.child_by_field_name("type"), k.source) not in FLOAT_TYPES:
            continue
        if any(c.type in ("type_qualifier", "storage_class_specifier") for c in node.children):
            continue
        yield node


def mutants(text: str, lines: tuple[int, int] | None = None) -> list[Edit]:
    """Every single-point mutant of the function bodies of `text` (within `lines`, the
    learner's region, inclusive), as edits of `text`; none changes the lines."""
    k = Kernel.parse(text, lines)
    found: list[Edit] = []
    for node in k.nodes():
        for new, rule in _exchanges(k, node):
            found.append(_edit(k, node, new, rule, (k.text(node), new)))
        found += [edit for edit, _ in _operator_swaps(k, node)]
        if node.type in ("true", "false") or node.type == "number_literal" and k.kind(node) == "int":
            found += list(_constants(k, node))
        for new, rule in [*_operands(k, node), *_conditions(k, node), *_swapped_indices(k, node)]:
            found.append(_edit(k, node, new, rule))
        if node.type == "declaration" and node.parent is not None and node.parent.type == "compound_statement":
            found += _dropped_value(k, node)
    statements = _statements(k)
    gaps = _gaps(k)
    for node in statements:
        barrier = _is_barrier(k, node)
        found.append(_edit(k, node, _dropped(k, node), "drop barrier" if barrier else "drop statement"))
        if barrier:
            found += _moved_barriers(k, node, gaps)
    return _unique(found)


def _dropped_value(k: Kernel, declaration) -> list[Edit]:
    """A thread's own float (or array) declared without the value it starts from."""
    if type_name(declaration.child_by_field_name("type"), k.source) not in FLOAT_TYPES:
        return []
    if any(c.type in ("type_qualifier", "storage_class_specifier") for c in declaration.children):
        return []
    found = []
    for d in declaration.children_by_field_name("declarator"):
        if d.type == "init_declarator" and d.child_by_field_name("value") is not None:
            inner = d.child_by_field_name("declarator")
            found.append(Edit(d.start_byte, d.end_byte, k.text(inner), k.line(d),
                              "drop initial value", k.text(d), "declarator"))  # fmt: skip
    return found


def _moved_barriers(k: Kernel, barrier, gaps) -> list[Edit]:
    """The barrier dropped, and added at another gap of the same block: one edit that
    replaces the span from the barrier to the gap (or the gap to the barrier)."""
    found = []
    block = barrier.parent
    siblings = [c for c in block.children if c.type not in ("{", "}", "comment")]
    index = next(i for i, c in enumerate(siblings) if c.id == barrier.id)
    for neighbour in (index - 1, index + 1):
        if not 0 <= neighbour < len(siblings) or siblings[neighbour].type == "preproc_call":
            continue
        other = siblings[neighbour]
        first, second = (other, barrier) if neighbour < index else (barrier, other)
        span = k.source.data[first.start_byte : second.end_byte].decode()
        a, b = k.text(first), k.text(second)
        middle = span[len(a) : len(span) - len(b)]
        # Exchange the two statements, each keeping the other's lines.
        swapped = b + middle + a
        if swapped.count("\n") != span.count("\n"):
            swapped = b.replace("\n", " ") + middle + a.replace("\n", " ") + "\n" * (
                span.count("\n") - middle.count("\n"))  # fmt: skip
        found.append(Edit(first.start_byte, second.end_byte, swapped, k.line(barrier),
                          "move barrier", span, "statement"))  # fmt: skip
    return found


def _unique(edits: list[Edit]) -> list[Edit]:
    seen, found = set(), []
    for e in edits:
        key = (e.start, e.end, e.text)
        if key not in seen and e.text != e.before:
            seen.add(key)
            found.append(e)
    return found


# ---- repairs ----------------------------------------------------------------------------------


def repairs(text: str, lines: tuple[int, int] | None = None) -> list[Edit]:
    """Every single-point repair the rules give for `text`: each undoes a mutant's
    change (the symmetric rules are their own inverses), so that a kernel one mistake
    away from a right one has its repair among them."""
    k = Kernel.parse(text, lines)
    found: list[Edit] = []
    terms = _terms(k)
    conditions = _comparisons(k)
    constants = sorted({k.text(n) for n in k.nodes() if n.type == "number_literal"
                        and re.fullmatch(r"\d+", k.text(n))}, key=int)  # fmt: skip
    for node in k.nodes():
        for new, rule in _exchanges(k, node):
            found.append(_edit(k, node, new, rule, (k.text(node), new)))
        # A repair names the operator's own line (an expression may span several).
        found += [replace(edit, line=k.line(node.child_by_field_name("operator")))
                  for edit, _ in _operator_swaps(k, node)]  # fmt: skip
        found += _reparsed_swaps(k, node)
        if node.type in ("true", "false") or node.type == "number_literal" and k.kind(node) == "int":
            found += list(_constants(k, node))
            # ... or any other constant the kernel writes (a step of 4 where 0 is).
            found += [_edit(k, node, c, "constant", (k.text(node), c)) for c in constants
                      if node.type == "number_literal" and c != k.text(node)]  # fmt: skip
        for new, rule in [*_operands(k, node), *_conditions(k, node), *_swapped_indices(k, node)]:
            found.append(_edit(k, node, new, rule))
        found += _added_terms(k, node, terms)
        found += _added_factors(k, node)
        found += _added_conditions(k, node, conditions)
    for node in _statements(k):
        found.append(_edit(k, node, _dropped(k, node), "drop statement"))
    for at, line in _gaps(k):
        found.append(_insert(k, at, line, BARRIER + " ", "add barrier"))
    for declaration in _float_locals_without_value(k):
        for d in declaration.children_by_field_name("declarator"):
            if d.type in ("identifier", "array_declarator"):
                name = declared_name(d, k.source)
                found.append(Edit(declaration.end_byte, declaration.end_byte,
                                  f" __cpu::zero({name});", k.line(declaration),
                                  "add initial value", "", "insert"))  # fmt: skip
    return _unique(found)


def _terms(k: Kernel) -> list[str]:
    """The int terms the kernel writes: each product that is a term of an int sum or a
    whole index of its own (blockIdx.y * BM, B[bx * BN]), which a repair may add where
    one is missing; and each with x and y of its thread or block index exchanged, since
    rows and columns come in pairs (blockIdx.x * BS written for the columns,
    blockIdx.y * BS left out of the rows)."""
    found = {}
    for node in k.nodes():
        if not is_product(k, node) or k.kind(node) != "int":
            continue
        parent = node.parent
        if parent.type == "binary_expression":
            if k.text(parent.child_by_field_name("operator")) not in ("+", "-"):
                continue  # a factor of a larger product, or what is divided
        elif parent.type != "subscript_argument_list":
            continue
        text = re.sub(r"\s+", " ", k.text(node))
        found[text] = None
        twin = re.sub(r"\b(threadIdx|blockIdx)\.([xy])\b",
                      lambda m: f"{m.group(1)}.{'y' if m.group(2) == 'x' else 'x'}", text)
        found[twin] = None
    return list(found)


def _comparisons(k: Kernel) -> list:
    """The kernel's own bounds (comparisons of ints), which a repair may add where one
    is missing."""
    found = {}
    for node in k.nodes():
        if node.type == "binary_expression" and k.text(node.child_by_field_name("operator")) in RELATIONAL:
            sides = (k.kind(node.child_by_field_name("left")), k.kind(node.child_by_field_name("right")))
            if sides == ("int", "int"):
                found.setdefault(re.sub(r"\s+", " ", k.text(node)), node)
    return list(found.values())


def _added_conditions(k: Kernel, node, conditions) -> list[Edit]:
    """A bound added to a condition (an if's, a ternary's, a loop's) that lacks it."""
    parent = node.parent
    if parent is None or k.kind(node) != "bool" or node.type not in ("binary_expression",
                                                                    "parenthesized_expression"):
        return []
    if parent.type == "binary_expression" and k.text(parent.child_by_field_name("operator")) in ("&&", "||"):
        return []  # part of a larger condition: added to that one
    visible = k.visible(node)
    ints = _ints_here(k, node)
    own = re.sub(r"\s+", " ", k.text(node))
    found = [
        f"({k.text(node)}) && ({k.text(c)})"
        for c in conditions
        if _identifiers_in(k, c) <= ints and re.sub(r"\s+", " ", k.text(c)) not in own
    ]
    # A bound the kernel no longer writes anywhere: an index of its own below a dimension.
    dims = [s.name for s in visible if s.role == "parameter" and s.kind == "int"]
    own_ints = [s.name for s in visible if s.role == "local" and s.kind == "int"]
    found += [f"({k.text(node)}) && ({v} < {d})" for v in own_ints for d in dims
              if f"{v} < {d}" not in own]  # fmt: skip
    return [_edit(k, node, text, "add condition") for text in found]


def _ints_here(k: Kernel, node) -> set[str]:
    """The names that are ints where node is (a name may be an int in one function and a
    pointer in another)."""
    visible: dict[str, Symbol] = {}
    for symbol in k.visible(node):
        visible[symbol.name] = symbol
    return {name for name, s in visible.items() if s.kind == "int"} | set(BUILTINS)


def _identifiers_in(k: Kernel, node) -> set[str]:
    return {k.text(n) for n in walk(node) if n.type == "identifier"}


def _is_sum_site(k: Kernel, node) -> bool:
    """A maximal int sum (or a lone int operand) used as an index, a bound, an argument
    or a value: where a missing term belongs."""
    if k.kind(node) != "int" or node.type not in ("identifier", "binary_expression",
                                                  "field_expression", "parenthesized_expression"):
        return False
    if node.type == "identifier" and not _used_as_value(node):
        return False
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "binary_expression" and k.text(parent.child_by_field_name("operator")) in (
        "+", "-", "*", "/", "%"):  # fmt: skip
        return False  # part of a larger arithmetic expression
    if parent.type in ("update_expression",):
        return False
    if parent.type == "assignment_expression" and parent.child_by_field_name("left") == node:
        return False
    return True


def _added_terms(k: Kernel, node, terms) -> list[Edit]:
    if not _is_sum_site(k, node):
        return []
    names = _ints_here(k, node)
    ints = [s.name for s in k.visible(node) if s.kind == "int"]
    builtins = [f"{b}.{f}" for b in ("threadIdx", "blockIdx", "blockDim") for f in ("x", "y")]
    own = re.sub(r"\s+", " ", k.text(node))
    found = []
    for term in terms:
        # The names a term is made of (the x of threadIdx.x is a field, not a name).
        if set(re.findall(r"(?<![.\w])[A-Za-z_]\w*", term)) <= names and term != own:
            found.append(_edit(k, node, f"({k.text(node)}) + ({term})", "add term"))
    for name in ints + builtins:
        if name != own:
            found.append(_edit(k, node, f"({k.text(node)}) + {name}", "add term"))
    return found


def _added_factors(k: Kernel, node) -> list[Edit]:
    """A factor multiplied into an int operand of a sum or a step (threadCol where
    threadCol * TN belongs, B += N where B += BK * N does), or into a float operand of the statement's arithmetic
    (beta where beta * C[...] belongs, b where acc += a * b does)."""
    if node.type not in ("identifier", "field_expression", "subscript_expression",
                         "parenthesized_expression"):  # fmt: skip
        return []
    if node.type == "identifier" and not _used_as_value(node):
        return []
    parent = node.parent
    if parent is None or parent.type not in ("binary_expression", "assignment_expression"):
        return []
    op = k.text(parent.child_by_field_name("operator"))
    if parent.type == "assignment_expression" and (
        op not in ("+=", "-=") or parent.child_by_field_name("right") != node
    ):  # fmt: skip
        return []  # only what is added to a sum (acc += a where acc += a * b belongs)
    kind = k.kind(node)
    if kind == "int" and op in ("+", "-", "+=", "-=") and node.type != "subscript_expression":
        # A factor a kernel leaves out is a tile size, a matrix dimension (a row's stride),
        # a block's size or index, a variable the kernel multiplies by elsewhere
        # (warpRow * WM), or the counter of a loop around it (B[k * N + col]).
        factors = [s.name for s in k.visible(node) if s.kind == "int" and (
            s.role != "local" or s.name in k.multipliers | k.counters)]  # fmt: skip
        factors += ["blockDim.x", "blockDim.y", "blockIdx.x", "blockIdx.y"]
        return [_edit(k, node, f"{k.text(node)} * {f}", "add factor") for f in factors
                if f != k.text(node)]  # fmt: skip
    if kind == "float" and op in ("+", "-", "*", "+=", "-="):
        statement = node
        while statement.parent is not None and statement.type not in ("expression_statement",
                                                                      "declaration"):
            statement = statement.parent
        # The float parameters, the thread's own float values, and what the statement reads.
        factors = {s.name for s in k.visible(node)
                   if s.kind == "float" and s.role in ("parameter", "local")}  # fmt: skip
        for n in walk(statement):
            if n.type == "subscript_expression" and n.parent.type != "subscript_expression" and (
                k.kind(n) == "float" and n.id != node.id):  # fmt: skip
                factors.add(k.text(n))
        # Written as the kernel writes the factor elsewhere (alpha * acc, not acc * alpha),
        # so that the repair reads like its twins (suspects.Familiarity).
        own = k.text(node)
        return [_edit(k, node, f"{f} * {own}" if f in k.leading else f"{own} * {f}", "add factor")
                for f in sorted(factors) if f != own]  # fmt: skip
    return []


def is_product(k: Kernel, node) -> bool:
    return node is not None and node.type == "binary_expression" and k.text(
        node.child_by_field_name("operator")) == "*"  # fmt: skip
