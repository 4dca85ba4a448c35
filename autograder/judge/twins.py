"""A statement that lacks part of its twin: repairs from the pairs a kernel writes.

A kernel writes most things twice: A's tile and B's, a row and a column, one thread's
load and the next one's. A slip in one of a pair (a term dropped from B's index) leaves
it shorter than the other, and the rules of autograder.judge.edits cannot give back a
term the kernel writes nowhere else. Its twin can: the tokens of two statements are
aligned (difflib), the names that align one for one say how the twin's names read in
the statement's own (A for B, lda for ldb), and the twin's tokens that the statement
lacks are put back in those names. A name the alignment does not pair is renamed by
the parts it shares with a pair (A_row_idx for B_row_idx, where A_col_idx stands for
B_col_idx), and a repair using a name the statement cannot see is none.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from ..run.syntax import walk
from .edits import Edit
from .scopes import BUILTINS, Kernel

OPERATOR = "twin"  # the rule's name (edits.OPERATORS)
_SIMPLE = ("expression_statement", "declaration")
_MOST_TOKENS = 80  # a statement longer than this is no slip's twin (and costs to align)
_LEAST_SHARE = 0.5  # of a twin's tokens, the share the statement must have
_NAME = re.compile(r"[A-Za-z_]\w*")


def repairs(k: Kernel) -> list[Edit]:
    """For each statement of the region, one repair per twin it lacks part of."""
    # A call (__syncthreads()) is no twin of an assignment, whatever the two share.
    every = [
        s
        for s in walk(k.source.root)
        if s.type in _SIMPLE
        and _inside(s)
        and not (s.named_child_count and s.named_children[0].type == "call_expression")
    ]
    tokens = {s.id: _tokens(k, s) for s in every}
    every = [s for s in every if 2 < len(tokens[s.id]) <= _MOST_TOKENS]
    found, seen = [], set()
    for s in every:
        if not k.in_region(s):
            continue
        for t in every:
            if t.id == s.id or t.type != s.type or len(tokens[t.id]) <= len(tokens[s.id]):
                continue
            grafted = _grafted(k, s, tokens[s.id], tokens[t.id])
            edit = _edit(k, s, tokens[s.id], grafted, k.line(t)) if grafted else None
            if edit is not None and (edit.start, edit.text) not in seen:
                seen.add((edit.start, edit.text))
                found.append(edit)
    return found


def _edit(k: Kernel, s, mine: list, grafted: list[str], twin: int) -> Edit | None:
    """The repair that makes s read `grafted`: the whole statement; for a declaration,
    its value alone (a declaration replaced whole would, in the schema of repairs,
    declare its name in a scope of its own), or none where more than that differs."""
    if s.type == "expression_statement":
        node = s
    else:
        declarators = s.children_by_field_name("declarator")
        node = declarators[0].child_by_field_name("value") if len(declarators) == 1 else None
        if node is not None and node.type == "initializer_list" and node.named_child_count == 1:
            node = node.named_children[0]  # int i{...}: what the braces hold
        if node is None or node.type == "initializer_list":
            return None
    before = sum(1 for _, _, at in mine if at < node.start_byte)
    after = sum(1 for _, _, at in mine if at >= node.end_byte)
    words = [t for t, _, _ in mine]
    if grafted[:before] != words[:before] or grafted[len(grafted) - after:] != words[
            len(words) - after:]:  # fmt: skip
        return None
    # Spaced out, so that no two tokens run together (- -, not --); but for member access.
    text = re.sub(r" ?(\.|->) ?", r"\1", " ".join(grafted[before : len(grafted) - after]))
    kind = "statement" if node is s else "expression"
    return Edit(node.start_byte, node.end_byte, text, k.line(node), OPERATOR, k.text(node), kind,
                ("", str(twin)))  # fmt: skip


def _inside(node) -> bool:
    """A statement of a function's body (a loop's or a branch's too, braces or not), not
    a for loop's first clause."""
    parent = node.parent
    if parent is None:
        return False
    return parent.type in ("compound_statement", "else_clause") or any(
        parent.child_by_field_name(f) == node for f in ("body", "consequence"))  # fmt: skip


def _tokens(k: Kernel, node) -> list[tuple[str, bool, int]]:
    """The statement's tokens, each with whether it is a name in scope (not a field, a
    type or a keyword) and where it starts."""
    found, skip_to = [], -1
    for n in walk(node):
        if n.start_byte < skip_to:
            continue
        if n.type == "field_expression" and k.text(n.child_by_field_name("argument")) in BUILTINS:
            # threadIdx.x is one token: its name stands for no other (numThreads.x is none)
            found.append((re.sub(r"\s", "", k.text(n)), False, n.start_byte))
            skip_to = n.end_byte
        elif n.child_count == 0 and k.text(n):
            found.append((k.text(n), n.type == "identifier", n.start_byte))
    return found


def _grafted(k: Kernel, s, my_tokens: list, their_tokens: list) -> list[str] | None:
    """The statement with what its twin has and it lacks put back, in its own names;
    None where the two are no twins (the statement is not the twin with tokens left
    out), or where that needs a name s cannot see."""
    mine, theirs = [t for t, _, _ in my_tokens], [t for t, _, _ in their_tokens]
    if len(mine) < _LEAST_SHARE * len(theirs):
        return None
    chosen = _embedded(mine, theirs)
    if chosen is None:
        return None
    mapped = [None] * len(theirs)  # the statement's token each of the twin's stands for
    for a, j in zip(mine, chosen):
        mapped[j] = a
    names: dict[str, str] = {}
    for token, mine_token in zip(theirs, mapped):
        if mine_token is None or _key(token) == token:
            continue  # what pairs is a name with a name (an operator is kept as written)
        if names.setdefault(token, mine_token) != mine_token:
            return None  # one name of the twin's read as two of the statement's
    symbols = k.visible(s)
    visible = {sym.name for sym in symbols} | set(mine)
    scalars = {sym.name for sym in symbols if sym.kind in ("int", "float", "bool")}
    parts = _part_pairs(names)
    out = []
    for (token, scoped, _), mine_token in zip(their_tokens, mapped):
        if mine_token is not None:
            out.append(mine_token)
            continue
        if token == "[" and out and out[-1] in scalars:
            return None  # the twin's array where the statement has a number (k_i[...])
        name = names.get(token) or _renamed(token, parts, visible)  # in the statement's names
        if scoped and name not in visible:
            return None
        out.append(name)
    return out


def _embedded(mine: list[str], theirs: list[str]) -> list[int] | None:
    """Where in `theirs` each of `mine` stands: in order, each beside a token of its key
    (any name beside any name, an operator beside itself), the pairs as alike as can be
    (ldb beside lda rather than beside A_row_idx); None where mine is no part of theirs."""
    m, n, none = len(mine), len(theirs), float("-inf")
    best = [[0.0] * (n + 1)] + [[none] * (n + 1) for _ in range(m)]
    for i in range(1, m + 1):
        for j in range(i, n + 1):
            best[i][j] = best[i][j - 1]
            if _key(mine[i - 1]) == _key(theirs[j - 1]) and best[i - 1][j - 1] > none:
                paired = best[i - 1][j - 1] + _alike(mine[i - 1], theirs[j - 1])
                best[i][j] = max(best[i][j], paired)
    if best[m][n] == none:
        return None
    chosen, j = [], n
    for i in range(m, 0, -1):
        while best[i][j] == best[i][j - 1]:
            j -= 1  # theirs[j - 1] is no part of the best: the statement lacks it
        chosen.append(j - 1)
        j -= 1
    return chosen[::-1]


def _alike(a: str, b: str) -> float:
    """How alike two tokens of one key are: the same text most; names by their letters."""
    return 2.0 if a == b else 1.0 + SequenceMatcher(None, a, b).ratio()


def _key(token: str) -> str:
    """What two tokens must share to align: their class for a name, a thread index or a
    number; the text itself for the rest (operators, brackets, keywords' own words)."""
    kind = _class(token)
    return kind if kind in ("name", "builtin", "number") else token


def _class(token: str) -> str:
    if _NAME.fullmatch(token):
        return "name"
    if token.split(".")[0] in BUILTINS:
        return "builtin"
    return "number" if token[:1].isdigit() else token


def _part_pairs(names: dict[str, str]) -> dict[str, str]:
    """How the parts of paired names (split at _ and at case changes) correspond: A to B
    and row to col from A_row_idx paired with B_col_idx."""
    parts: dict[str, str] = {}
    for theirs, mine in names.items():
        a, b = _parts(theirs), _parts(mine)
        if len(a) == len(b) and a != b:
            for x, y in zip(a, b):
                if x != y:
                    parts.setdefault(x, y)
    return parts


def _parts(name: str) -> list[str]:
    return re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|_", name)


def _renamed(token: str, parts: dict[str, str], visible: set[str]) -> str:
    """A name of the twin's the alignment did not pair, in the statement's names: by its
    parts (B_row_idx for A_row_idx where B stands for A), or where none of its parts
    pairs, by one letter the pairs exchange (ldb for lda where B stands for A; BK for BN
    where K stands for N), when exactly one name in sight reads so."""
    if _class(token) == "builtin":  # threadIdx.y for the row where blockIdx.x is the column's
        base, _, axis = token.partition(".")
        other = parts.get(axis, axis)
        return f"{base}.{other}" if other in ("x", "y", "z") else token
    if not _NAME.fullmatch(token):
        return token
    renamed = "".join(parts.get(p, p) for p in _parts(token))
    if renamed != token:
        return renamed
    letters = {(a.lower(), b.lower()) for a, b in parts.items() if len(a) == len(b) == 1}
    alike = {
        token[:i] + (b.upper() if c.isupper() else b) + token[i + 1 :]
        for i, c in enumerate(token)
        for a, b in letters
        if c.lower() == a
    } & visible
    return alike.pop() if len(alike) == 1 else token
