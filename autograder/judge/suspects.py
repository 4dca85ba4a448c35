"""Where a mistake may be: what a kernel's own text says about which repairs to try
first (autograder.judge.localize tries them in that order, for as long as its budget
lasts, so the order decides what it finds in a long kernel).

Three kinds of evidence, none of them a reference to compare with:

- the lines the failing cases point at, and those a step or more away along what
  they read (related_lines): the variables a line reads were set on other lines,
  under conditions and loop headers of their own;
- what the kernel writes elsewhere (multiplied): a factor it multiplies an operand by
  in one place is the likely one where the same operand stands alone;
- how ordinary a line reads among the kernel's own lines (Familiarity): a kernel
  repeats itself (A's tile load and B's, the row index and the column's, four stores
  of one float4), and a one-token slip makes its line read unlike the rest. Buggy
  lines are less "natural" than the code around them, and their fixes make them more
  so (Ray, Hellendoorn et al., "On the 'Naturalness' of Buggy Code", ICSE 2016); the
  language model here is the kernel's own token trigrams.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter

from ..run.syntax import walk
from .edits import Edit, assigned, is_product
from .scopes import Kernel, declared_name, inside_body


def multiplied(k: Kernel) -> set[frozenset[str]]:
    """Each pair of operands the kernel multiplies together somewhere, in one product
    however long (bx * BLOCKSIZE * n pairs n with bx and with BLOCKSIZE), also as
    `operand` writes them."""
    pairs = set()
    for node in walk(k.source.root):
        if not is_product(k, node) or is_product(k, node.parent):
            continue
        leaves, stack = [], [node]
        while stack:
            n = stack.pop()
            if is_product(k, n):
                stack += [n.child_by_field_name("left"), n.child_by_field_name("right")]
            else:
                leaves.append(re.sub(r"\s+", " ", k.text(n)))
        pairs |= {frozenset((a, b)) for a in leaves for b in leaves if a != b}
        pairs |= {frozenset(map(operand, (a, b))) for a in leaves for b in leaves if a != b}
    return pairs


def operand(text: str) -> str:
    """An operand as the kernel's twins share it: an element of an array by the array's
    name (alpha * acc[m][n] and alpha * acc[m][n + 1] pair alpha with one operand)."""
    return re.sub(r"\[.*", "[]", text)


# C's tokens, roughly: a name, a number, a two-character operator, any other character.
_TOKEN = re.compile(rb"[A-Za-z_]\w*|\d[\w.]*|<<=?|>>=?|->|::|&&|\|\||\+\+|--|[-+*/%&|^<>=!]=|\S")


def _trigrams(tokens: list[bytes]) -> list[tuple[bytes, ...]]:
    return [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]


class Familiarity:
    """How much more ordinary a repair makes the code around it read, by the kernel's
    own token trigrams: of the trigrams the repair makes (its tokens and two either
    side), each found elsewhere in the kernel counts one and each found nowhere else
    minus one; less the same count of the trigrams it removes. A statement dropped or
    added scores nothing: the code around it says nothing of whether it belongs."""

    def __init__(self, text: str):
        found = list(_TOKEN.finditer(text.encode()))
        self.starts = [m.start() for m in found]
        self.tokens = [m.group() for m in found]
        self.counts = Counter(_trigrams(self.tokens))

    def __call__(self, edit: Edit) -> int:
        if edit.kind in ("statement", "insert"):
            return 0
        lo = bisect.bisect_left(self.starts, edit.start)
        hi = bisect.bisect_left(self.starts, edit.end)
        left, right = self.tokens[max(0, lo - 2) : lo], self.tokens[hi : hi + 2]
        removed = _trigrams(left + self.tokens[lo:hi] + right)
        made = _trigrams(left + _TOKEN.findall(edit.text.encode()) + right)
        own = Counter(removed)  # the code as written is no evidence for itself

        def ordinary(grams) -> int:
            return sum(1 if self.counts[g] > own[g] else -1 for g in grams)

        return ordinary(made) - ordinary(removed)


def related_lines(k: Kernel, seeds: set[int], depth: int = 4) -> dict[int, int]:
    """The lines a mistake behind what happened on `seeds` may be on, each with how far
    it is from them: 0 for a seed; then the lines that set the variables a line reads,
    and the conditions and loop headers it runs under, one step further each."""
    writes: dict[str, set[int]] = {}
    reads: dict[int, set[str]] = {}
    controls: dict[int, set[int]] = {}
    for node in walk(k.source.root):
        if not inside_body(node):
            continue
        line = k.line(node)
        if node.type == "identifier":
            name = k.text(node)
            parent = node.parent
            declared = parent is not None and parent.type in ("init_declarator", "array_declarator",
                                                             "declaration") and (
                parent.child_by_field_name("declarator") == node)  # fmt: skip
            if declared or assigned(node):
                writes.setdefault(name, set()).add(line)
            if not declared:
                reads.setdefault(line, set()).add(name)
        if node.type in ("if_statement", "for_statement", "while_statement"):
            header = node.child_by_field_name("condition") or node
            first = k.line(header)
            for inner in range(k.line(node), k.source.line(node.end_point.row) + 1):
                if inner != first:
                    controls.setdefault(inner, set()).add(first)
        if node.type in ("expression_statement", "declaration") and node.start_point.row != node.end_point.row:
            span = range(line, k.source.line(node.end_point.row) + 1)
            for a in span:  # a statement over several lines is one place
                controls.setdefault(a, set()).update(b for b in span if b != a)
    distance = {line: 0 for line in seeds}
    frontier = set(seeds)
    for step in range(1, depth + 1):
        reached = set()
        for line in frontier:
            reached |= controls.get(line, set())
            for name in reads.get(line, ()):
                reached |= writes.get(name, set())
        frontier = {line for line in reached if line not in distance}
        for line in frontier:
            distance[line] = step
    return distance


def lines_using(k: Kernel, name: str) -> set[int]:
    """The lines of function bodies that read `name`."""
    return {k.line(n) for n in walk(k.source.root)
            if n.type == "identifier" and k.text(n) == name and inside_body(n)}  # fmt: skip


def parameters(k: Kernel, kernel: str) -> list[str]:
    """The names of the parameters of the function `kernel` (a name, template arguments
    allowed: "sgemm<128, 8>"), as its definition declares them."""
    name = kernel.split("<", 1)[0].strip()
    for node in walk(k.source.root):
        if node.type != "function_declarator":
            continue
        declared = node.child_by_field_name("declarator")
        if declared is None or k.text(declared) != name:
            continue
        params = node.child_by_field_name("parameters")
        return [declared_name(p.child_by_field_name("declarator"), k.source)
                for p in (params.named_children if params else [])
                if p.type in ("parameter_declaration", "optional_parameter_declaration")]
    return []


def lines_storing_shared(k: Kernel) -> set[int]:
    """The lines of function bodies that store to a __shared__ array (directly, or
    through a pointer taken of one: *reinterpret_cast<float4*>(&Bs[r][c]) = ...)."""
    shared = {s.name for node in walk(k.source.root) if node.type == "identifier"
              for s in k.visible(node) if s.role == "shared"}  # fmt: skip
    found = set()
    for node in walk(k.source.root):
        if node.type == "assignment_expression" and inside_body(node):
            left = node.child_by_field_name("left")
            if any(n.type == "identifier" and k.text(n) in shared for n in walk(left)):
                found.add(k.line(node))
    return found
