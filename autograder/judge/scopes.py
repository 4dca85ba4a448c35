"""A kernel parsed to be changed: its tree (tree-sitter's CUDA grammar, through
autograder.run.syntax), and for each node of interest the symbols in scope there with
their kinds (int, float, an array or a pointer of either, bool), read from the
declarations; what autograder.judge.edits's rules put where, so that a change only
ever puts an int where an int was.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..run.syntax import Source, walk

INT_TYPES = {"int", "unsigned", "unsigned int", "size_t", "long", "short", "long long"}
INT_TYPES |= {f"{u}int{n}_t" for u in ("", "u") for n in (8, 16, 32, 64)}
FLOAT_TYPES = {"float", "double"}
RELATIONAL = ("<", "<=", ">", ">=", "==", "!=")
BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str  # "int", "float", "bool", "int[]", "float[]", "int*", "float*", "other"
    role: str  # "template", "constexpr", "parameter", "local"
    function: int  # start byte of the function (or lambda) that declares it; -1: template


def type_name(node, source: Source) -> str:
    if node is None:
        return ""
    return " ".join(source.text(node).split())


def _kind(type_text: str, declarator) -> str:
    base = "int" if type_text in INT_TYPES else "float" if type_text in FLOAT_TYPES else "other"
    if type_text == "bool":
        base = "bool"
    d, suffix = declarator, ""
    while d is not None and d.type in ("array_declarator", "pointer_declarator", "init_declarator",
                                       "reference_declarator"):
        if d.type == "array_declarator":
            suffix = "[]"
        elif d.type == "pointer_declarator":
            suffix = "*"
        d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.type == "reference_declarator" else None)
    return base + suffix if base != "other" else "other"


def declared_name(declarator, source: Source) -> str:
    d = declarator
    while d is not None and d.type != "identifier":
        if d.type == "reference_declarator":
            d = d.named_children[-1] if d.named_children else None
        else:
            d = d.child_by_field_name("declarator")
    return source.text(d) if d is not None else ""


@dataclass
class Kernel:
    """A parsed kernel: its tree, and for each node of interest the symbols in scope."""

    source: Source
    lines: tuple[int, int] | None  # the learner's lines to change (inclusive), or all
    scopes: dict = field(default_factory=dict)  # node id -> tuple of Symbols visible there
    functions: dict = field(default_factory=dict)  # node id -> the enclosing function's start
    multipliers: set = field(default_factory=set)  # names the kernel multiplies by somewhere
    leading: set = field(default_factory=set)  # of those, the ones it writes first, never second
    counters: set = field(default_factory=set)  # names a for loop declares (its counter)

    @classmethod
    def parse(cls, text: str, lines: tuple[int, int] | None = None) -> Kernel:
        kernel = cls(Source.parse(text), lines)
        kernel._walk(kernel.source.root, [], -1, [])
        products = [n for n in walk(kernel.source.root) if n.type == "binary_expression"
                    and kernel.text(n.child_by_field_name("operator")) == "*"]  # fmt: skip
        sides = {
            side: {kernel.text(n.child_by_field_name(side)) for n in products
                   if n.child_by_field_name(side).type == "identifier"}
            for side in ("left", "right")
        }  # fmt: skip
        kernel.multipliers = sides["left"] | sides["right"]
        kernel.leading = sides["left"] - sides["right"]
        return kernel

    # ---- scopes -------------------------------------------------------------------------

    def _walk(self, node, chain: list[dict], function: int, templates: list[Symbol]) -> None:
        t = node.type
        if t == "template_declaration":
            params = node.child_by_field_name("parameters")
            found = []
            for p in params.named_children if params else []:
                kind = type_name(p.child_by_field_name("type"), self.source)
                name = declared_name(p.child_by_field_name("declarator"), self.source)
                if kind in INT_TYPES and name:
                    found.append(Symbol(name, "int", "template", -1))
            for child in node.children:
                if child.type != "template_parameter_list":
                    self._walk(child, chain, function, found)
            return
        if t in ("function_definition", "lambda_expression"):
            start = node.start_byte
            scope = {s.name: s for s in templates}
            declarator = node.child_by_field_name("declarator")
            params = None
            if declarator is not None:
                params = declarator.child_by_field_name("parameters")
            for p in params.named_children if params else []:
                if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
                    continue
                d = p.child_by_field_name("declarator")
                name = declared_name(d, self.source)
                if name:
                    kind = _kind(type_name(p.child_by_field_name("type"), self.source), d)
                    scope[name] = Symbol(name, kind, "parameter", start)
            inner = (chain if t == "lambda_expression" else []) + [scope]
            body = node.child_by_field_name("body")
            if body is not None:
                self._walk(body, inner, start, [])
            return
        if t in ("compound_statement", "for_statement"):
            chain = chain + [{}]
        self._note(node, chain, function)
        for child in node.children:
            self._walk(child, chain, function, templates)
            if child.type == "declaration" and t in ("compound_statement", "for_statement"):
                declared = self._declare(child, chain[-1], function)
                if t == "for_statement":
                    self.counters |= declared

    def _note(self, node, chain, function) -> None:
        if node.type in _NOTED:
            visible: dict = {}
            for scope in chain:
                visible.update(scope)
            self.scopes[node.id] = tuple(visible.values())
            self.functions[node.id] = function

    def _declare(self, declaration, scope: dict, function: int) -> set[str]:
        """Enter the names `declaration` declares into `scope`; those names."""
        type_text = type_name(declaration.child_by_field_name("type"), self.source)
        words = {self.source.text(c) for c in declaration.children if c.type == "type_qualifier"}
        role = "constexpr" if "constexpr" in words else "local"
        if "__shared__" in words:
            role = "shared"
        names = set()
        for d in declaration.children_by_field_name("declarator"):
            name = declared_name(d, self.source)
            if name:
                scope[name] = Symbol(name, _kind(type_text, d), role, function)
                names.add(name)
        return names

    def visible(self, node) -> tuple[Symbol, ...]:
        n = node
        while n is not None and n.id not in self.scopes:
            n = n.parent
        return self.scopes.get(n.id, ()) if n is not None else ()

    # ---- where changes may go -------------------------------------------------------------

    def line(self, node) -> int:
        return self.source.line(node.start_point.row)

    def text(self, node) -> str:
        return self.source.text(node)

    def in_region(self, node) -> bool:
        if not inside_body(node):
            return False
        if self.lines is None:
            return True
        first, last = self.lines
        return first <= self.line(node) <= last and self.source.line(node.end_point.row) <= last

    def nodes(self) -> Iterator:
        for node in walk(self.source.root):
            if _changeable(node) and self.in_region(node):
                yield node

    def kind(self, node) -> str:
        """The type of an expression: "int", "float", "bool", or "" when not known."""
        t = node.type
        if t == "parenthesized_expression":
            return self.kind(node.named_children[0]) if node.named_children else ""
        if t == "number_literal":
            text = self.text(node).lower()
            return "float" if re.search(r"[.ef]", text) and not text.startswith("0x") else "int"
        if t == "identifier":
            symbol = self.symbol(node)
            return symbol.kind if symbol and symbol.kind in ("int", "float", "bool") else ""
        if t == "field_expression":
            base = node.child_by_field_name("argument")
            if base is not None and self.text(base) in BUILTINS:
                return "int"
            return "float" if base is not None and self._element(base) == "other" else ""
        if t == "subscript_expression":
            return self._element(node)
        if t == "binary_expression":
            op = self.text(node.child_by_field_name("operator"))
            if op in RELATIONAL or op in ("&&", "||"):
                return "bool"
            left = self.kind(node.child_by_field_name("left"))
            right = self.kind(node.child_by_field_name("right"))
            if "" in (left, right):
                return ""
            return "float" if "float" in (left, right) else left
        if t == "unary_expression":
            op = self.text(node.child_by_field_name("operator"))
            return "bool" if op == "!" else self.kind(node.child_by_field_name("argument"))
        if t == "cast_expression":
            return _type_kind(self.text(node.child_by_field_name("type")))
        return ""

    def _element(self, node) -> str:
        """The type of an element of a subscript expression (or "other" for float4s)."""
        base = node
        while base.type == "subscript_expression":
            base = base.child_by_field_name("argument")
        if base.type != "identifier":
            return ""
        symbol = self.symbol(base)
        if symbol is None:
            return ""
        if symbol.kind in ("float[]", "float*"):
            return "float"
        if symbol.kind in ("int[]", "int*"):
            return "int"
        return "other" if node.type != "subscript_expression" else ""

    def symbol(self, identifier) -> Symbol | None:
        name = self.text(identifier)
        for symbol in reversed(self.visible(identifier)):
            if symbol.name == name:
                return symbol
        return None


_NOTED = {
    "identifier", "binary_expression", "number_literal", "field_expression", "expression_statement",
    "declaration", "assignment_expression", "update_expression", "subscript_expression",
    "parenthesized_expression", "if_statement", "for_statement", "compound_statement",
    "return_statement", "conditional_expression", "unary_expression", "call_expression",
    "argument_list", "subscript_argument_list", "condition_clause", "init_declarator",
}  # fmt: skip


def _type_kind(text: str) -> str:
    text = " ".join(text.split())
    return "int" if text in INT_TYPES else "float" if text in FLOAT_TYPES else ""


def inside_body(node) -> bool:
    """Inside the body of a function (or a lambda) that runs on the device, not one that
    is evaluated at compile time (constexpr)."""
    n = node.parent
    while n is not None:
        if n.type == "compound_statement" and n.parent is not None and n.parent.type in (
            "function_definition", "lambda_expression",
        ):  # fmt: skip
            return not is_constexpr(n.parent)
        n = n.parent
    return False


def is_constexpr(function) -> bool:
    """Whether a function definition is constexpr (run by the compiler, not the kernel)."""
    return any(c.type == "type_qualifier" and c.text == b"constexpr" for c in function.children)


def _changeable(node) -> bool:
    """Not in a static_assert, a template argument, a declaration's array size, a
    sizeof, or a preprocessor line: places whose value must be known at compile time."""
    n = node.parent
    child = node
    while n is not None:
        if n.type in ("static_assert_declaration", "template_argument_list", "preproc_call",
                      "sizeof_expression", "alignof_expression", "lambda_capture_specifier",
                      "ERROR", "enum_specifier", "launch_bounds"):
            return False
        if n.type == "array_declarator" and n.child_by_field_name("size") == child:
            return False
        if n.type == "declaration" and any(
            c.type == "type_qualifier" and c.text in (b"constexpr",) for c in n.children
        ):
            return False
        child, n = n, n.parent
    return True
