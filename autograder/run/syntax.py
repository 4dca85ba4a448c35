"""A kernel's source as a syntax tree (tree-sitter's CUDA grammar), for the edits the
CPU backend makes to it and the places the judge changes to find a mistake.

tree-sitter parses any text, errors and all, into a concrete tree whose nodes
know their byte offsets, so an edit replaces exactly the text of a node and
keeps every line where it was: messages still name the learner's lines.
Offsets are in bytes of the UTF-8 text; `Source` converts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# CUDA spellings the grammar does not know, blanked (same length) before parsing.
_UNKNOWN = re.compile(rb"__align__\s*\(\s*\d+\s*\)")
_LINE_MARKER = re.compile(rb'#line (\d+)')


@lru_cache(maxsize=1)
def _parser():
    import tree_sitter
    import tree_sitter_cuda

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


def _parsed(text: bytearray):
    """text's tree, where a `<` after a variable's name is a comparison. C++'s grammar
    cannot tell `ty < K && col >= N` from a template's arguments (`ty<K && col>`) without
    knowing what `ty` names; tree-sitter guesses a template, and a comparison read so
    gets none of the repairs a comparison has. So each `<` that opens arguments to a
    variable is parsed again as `>`, which binds as tightly and opens nothing (the
    tree's offsets, and so the text its nodes give, are the source's own)."""
    tree = _parser().parse(bytes(text))
    for _ in range(8):  # a misread may hide another inside its arguments
        nodes = list(walk(tree.root_node))
        variables = {_bytes(text, n) for n in nodes if n.type == "identifier"
                     and n.parent is not None and n.parent.type != "function_declarator"
                     and n.parent.child_by_field_name("declarator") == n}
        misread = [n.child_by_field_name("arguments").start_byte for n in nodes
                   if n.type == "template_function"
                   and _bytes(text, n.child_by_field_name("name")) in variables]  # fmt: skip
        if not misread:
            return tree
        for at in misread:
            text[at : at + 1] = b">"
        tree = _parser().parse(bytes(text))
    return tree


def _bytes(text: bytearray, node) -> bytes:
    return bytes(text[node.start_byte : node.end_byte])


@dataclass(frozen=True)
class Source:
    """A source's text and its tree."""

    data: bytes  # the UTF-8 text
    tree: object  # tree_sitter.Tree
    lines: tuple[int, ...]  # the learner's line of each row (0: a #line marker)

    @classmethod
    def parse(cls, text: str) -> Source:
        data = text.encode()
        blanked = _UNKNOWN.sub(lambda m: b" " * len(m.group(0)), data)
        # The preprocessor's text says with #line markers where its lines came from.
        lines, number = [], 1
        for row in data.split(b"\n"):
            marker = _LINE_MARKER.match(row)
            lines.append(0 if marker else number)
            number = int(marker.group(1)) if marker else number + 1
        return cls(data, _parsed(bytearray(blanked)), tuple(lines))

    @property
    def root(self):
        return self.tree.root_node

    def line(self, row: int) -> int:
        """The learner's line of a 0-based row."""
        return self.lines[row]

    def text(self, node) -> str:
        return self.data[node.start_byte : node.end_byte].decode()

    def edited(self, edits: list[tuple[int, int, str]]) -> str:
        """The text with each (start, end, replacement) applied; spans must not overlap."""
        out, at = [], 0
        for start, end, new in sorted(edits):
            out += [self.data[at:start], new.encode()]
            at = end
        out.append(self.data[at:])
        return b"".join(out).decode()


def walk(node):
    """Every node under node (itself included), in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def in_function_body(node) -> bool:
    """Whether node lies inside a function's (or a lambda's) body."""
    n = node.parent
    while n is not None:
        if n.type == "compound_statement" and n.parent is not None and n.parent.type in (
            "function_definition",
            "lambda_expression",
        ):
            return True
        n = n.parent
    return False


@dataclass(frozen=True)
class Local:
    """A thread's own float, or array of floats, declared in a function body."""

    name: str
    kind: str  # "float" or "double"
    dims: str  # "[TM][TN]", or "" for a scalar
    value: str | None  # its initializer's text ("{{0.0f}}"), or None
    line: int  # the learner's line


@dataclass(frozen=True)
class Declaration:
    start: int  # bytes: the whole declaration statement
    end: int
    locals: tuple[Local, ...]


def own_floats(source: Source) -> list[Declaration]:
    """Declarations, in function bodies, of a thread's own floats (or arrays of them)
    that the CPU backend checks: every array, and each scalar declared without a value.
    A declaration with anything else in it (a scalar with a value beside an array,
    __shared__, static, const) is left as it is."""
    found = []
    for node in walk(source.root):
        if node.type != "declaration" or node.parent is None:
            continue
        if node.parent.type != "compound_statement" or not in_function_body(node):
            continue
        kind = node.child_by_field_name("type")
        if kind is None or kind.type != "primitive_type" or source.text(kind) not in ("float", "double"):
            continue
        # __shared__, static, const, constexpr...: not a thread's own plain float.
        if any(c.type in ("type_qualifier", "storage_class_specifier") for c in node.children):
            continue
        locals_ = []
        for d in node.children_by_field_name("declarator"):
            value = None
            if d.type == "init_declarator":
                value_node = d.child_by_field_name("value")
                value = source.text(value_node) if value_node is not None else None
                d = d.child_by_field_name("declarator")
            dims = ""
            while d.type == "array_declarator":
                size = d.child_by_field_name("size")
                dims = f"[{source.text(size) if size else ''}]" + dims
                d = d.child_by_field_name("declarator")
            if d.type != "identifier" or "[]" in dims or (value is not None and not dims):
                break
            if value is not None and not value.startswith("{"):
                break
            line = source.line(node.start_point.row)
            locals_.append(Local(source.text(d), source.text(kind), dims, value, line))
        else:
            if locals_:
                found.append(Declaration(node.start_byte, node.end_byte, tuple(locals_)))
    return found


@dataclass(frozen=True)
class ArrayParameter:
    """A function's parameter declared as an array (`const float As[BM][BK]`)."""

    start: int  # bytes: the whole parameter
    end: int
    kind: str  # what precedes the name ("const float")
    name: str
    dims: str  # "[BM][BK]"


def array_parameters(source: Source) -> list[ArrayParameter]:
    """Every named parameter declared with array brackets, in any function."""
    found = []
    for node in walk(source.root):
        if node.type != "parameter_declaration":
            continue
        d = node.child_by_field_name("declarator")
        dims = ""
        while d is not None and d.type == "array_declarator":
            size = d.child_by_field_name("size")
            dims = f"[{source.text(size) if size else ''}]" + dims
            d = d.child_by_field_name("declarator")
        if dims and d is not None and d.type == "identifier":
            kind = source.data[node.start_byte : d.start_byte].decode().strip()
            found.append(ArrayParameter(node.start_byte, node.end_byte, kind, source.text(d), dims))
    return found
