"""Say in one plain sentence where a learner's wrong output elements are.

The checker knows *which* elements of C disagree with the reference; a beginner
needs to know *where* they are and, when the shape of the mistake points to a
usual culprit (a missing bound check, too few blocks, a bad index formula),
what to look at. Patterns are tried from the most specific to the most vague,
and every test works on whole-row / whole-column summaries or mask counts, so
a 4096×4096 mask costs a few passes over memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .advice import ROWS_AND_COLUMNS

# Tile and block widths learners use; a wrong index formula repeats with one of them.
_PERIODS = (4, 8, 16, 32, 64, 128)
# Past this many ranges a listing stops helping and just gets long.
_MAX_RUNS = 4


def describe_mismatch(bad: np.ndarray, unwritten: np.ndarray, index_hint: bool = True) -> str:
    """One sentence, in plain words for a beginner, saying WHERE the wrong elements are
    and, where the pattern suggests it, what to check.

    `bad` marks the wrong elements of C (M×N), `unwritten` the subset of them the
    kernel never stored to. Requires `bad.any()` and `unwritten` ⊆ `bad`. index_hint:
    False when the cause is known to be another (a race, a read of bad memory), so
    that a repeating pattern is not blamed on the index formula.
    """
    mask = _Mask.of(bad, unwritten, index_hint)
    for pattern in _PATTERNS:
        sentence = pattern(mask)
        if sentence:
            return sentence
    return _scattered(mask)


@dataclass(frozen=True)
class _Mask:
    """The mask plus the summaries every pattern reads."""

    rows: int
    cols: int
    n_bad: int
    n_unwritten: int
    rows_all: np.ndarray  # rows wrong in every column
    cols_all: np.ndarray  # columns wrong in every row
    rows_any: np.ndarray  # rows with at least one wrong element
    cols_any: np.ndarray  # columns with at least one wrong element
    index_hint: bool  # whether a pattern may point at the index formula

    @classmethod
    def of(cls, bad: np.ndarray, unwritten: np.ndarray, index_hint: bool = True) -> _Mask:
        return cls(
            rows=bad.shape[0],
            cols=bad.shape[1],
            n_bad=int(np.count_nonzero(bad)),
            n_unwritten=int(np.count_nonzero(unwritten)),
            rows_all=bad.all(axis=1),
            cols_all=bad.all(axis=0),
            rows_any=bad.any(axis=1),
            cols_any=bad.any(axis=0),
            index_hint=index_hint,
        )

    @property
    def never_written(self) -> bool:
        return self.n_unwritten == self.n_bad

    def verb(self, plural: bool = True) -> str:
        if self.never_written:
            return "were never written" if plural else "was never written"
        wrong = "are wrong" if plural else "is wrong"
        if self.n_unwritten == 0:
            return wrong
        whose = "them" if plural else "its elements"
        return f"{wrong} ({self.n_unwritten} of {whose} never written)"

    def noun(self) -> str:
        if self.never_written:
            return "unwritten elements"
        if self.n_unwritten == 0:
            return "wrong elements"
        return f"wrong elements ({self.n_unwritten} of them never written)"


def _everything(m: _Mask) -> str | None:
    if m.n_bad != m.rows * m.cols:
        return None
    if m.never_written:
        return "no element of C was written: is the kernel launched, and does it store to C?"
    return f"every element of C {m.verb(plural=False)}"


def _single(m: _Mask) -> str | None:
    if m.n_bad != 1:
        return None
    row, col = int(np.argmax(m.rows_any)), int(np.argmax(m.cols_any))
    return f"element ({row}, {col}) {m.verb(plural=False)}"


def _last_columns(m: _Mask) -> str | None:
    k = _suffix(m.cols_all)
    # cols_all is a subset of bad, so equal counts mean the mask is exactly those columns.
    if not k or m.n_bad != k * m.rows:
        return None
    hint = (
        "are enough blocks launched along the columns?" if m.never_written else "the column index"
    )
    return (
        f"{_edge('last', k, 'column')} of every row {m.verb(k > 1)}: check the bound on N ({hint})"
    )


def _last_rows(m: _Mask) -> str | None:
    k = _suffix(m.rows_all)
    if not k or m.n_bad != k * m.cols:
        return None
    hint = "are enough blocks launched along the rows?" if m.never_written else "the row index"
    return f"{_edge('last', k, 'row')} {m.verb(k > 1)}: check the bound on M ({hint})"


def _last_rows_and_columns(m: _Mask) -> str | None:
    k, j = _suffix(m.rows_all), _suffix(m.cols_all)
    # Inclusion–exclusion: the union of k full rows and j full columns has this many elements.
    if not (k and j) or m.n_bad != k * m.cols + j * m.rows - k * j:
        return None
    hint = (
        " (are enough blocks launched along the rows and the columns?)" if m.never_written else ""
    )
    return (
        f"{_edge('last', k, 'row')} and {_edge('last', j, 'column')} {m.verb()}: "
        f"{ROWS_AND_COLUMNS}{hint}"
    )


def _first_columns_or_rows(m: _Mask) -> str | None:
    k = _suffix(m.cols_all[::-1])
    if k and m.n_bad == k * m.rows:
        return f"{_edge('first', k, 'column')} of every row {m.verb(k > 1)}"
    k = _suffix(m.rows_all[::-1])
    if k and m.n_bad == k * m.cols:
        return f"{_edge('first', k, 'row')} {m.verb(k > 1)}"
    return None


def _whole_columns(m: _Mask) -> str | None:
    k = int(np.count_nonzero(m.cols_all))
    if m.n_bad != k * m.rows:
        return None
    return f"{_listing('column', m.cols_all)} of every row {m.verb(k > 1)}"


def _whole_rows(m: _Mask) -> str | None:
    k = int(np.count_nonzero(m.rows_all))
    if m.n_bad != k * m.cols:
        return None
    return f"{_listing('row', m.rows_all)} {m.verb(k > 1)}"


def _periodic(m: _Mask) -> str | None:
    for noun, hit in (("column", m.cols_any), ("row", m.rows_any)):
        found = _period(hit)
        if found:
            p, residues = found
            which = f"{_listing(noun, residues)} of each group of {p}"
            hint = f": look at how the {noun} index is built from blockIdx and threadIdx"
            return f"{m.noun()} repeat every {p} {noun}s ({which})" + hint * m.index_hint
    return None


def _rectangle(m: _Mask) -> str | None:
    (r0, r1), (c0, c1) = _bounds(m.rows_any), _bounds(m.cols_any)
    if (r0, r1, c0, c1) == (0, m.rows - 1, 0, m.cols - 1):
        return None
    return (
        f"the {m.n_bad} {m.noun()} all lie in {_range('row', r0, r1)}, {_range('column', c0, c1)}"
    )


def _scattered(m: _Mask) -> str:
    # _rectangle caught every case narrower than the whole matrix, so the spread is all of it.
    share = _percent(m.n_bad, m.rows * m.cols)
    spread = f"{_range('row', 0, m.rows - 1)} and {_range('column', 0, m.cols - 1)}"
    return f"{m.n_bad} of {m.rows}×{m.cols} elements ({share}) {m.verb()}, scattered over {spread}"


_PATTERNS = (
    _everything,
    _single,
    _last_columns,
    _last_rows,
    _last_rows_and_columns,
    _first_columns_or_rows,
    # Before the whole-column check: "repeats every 32 columns" says more than
    # a list of thirty column ranges.
    _periodic,
    _whole_columns,
    _whole_rows,
    _rectangle,
)


def _suffix(flags: np.ndarray) -> int:
    """k when the True entries of `flags` are exactly its last k; otherwise 0."""
    k = int(np.count_nonzero(flags))
    return k if flags[len(flags) - k :].all() else 0


def _period(hit: np.ndarray) -> tuple[int, np.ndarray] | None:
    """The smallest p in _PERIODS and the residues mod p that `hit` is True on, if
    `hit[i]` depends only on `i % p` and the hits span at least two periods."""
    n = len(hit)
    for p in _PERIODS:
        if p >= n:
            break
        groups = -(-n // p)
        # Pad the ragged last group so that it neither adds nor breaks a residue.
        as_any = np.zeros(groups * p, dtype=bool)
        as_all = np.ones(groups * p, dtype=bool)
        as_any[:n] = as_all[:n] = hit
        residues = as_any.reshape(groups, p).any(axis=0)
        if residues.all() or not np.array_equal(residues, as_all.reshape(groups, p).all(axis=0)):
            continue
        spanned = np.flatnonzero(hit) // p
        if spanned[-1] > spanned[0]:
            return p, residues
    return None


def _bounds(flags: np.ndarray) -> tuple[int, int]:
    where = np.flatnonzero(flags)
    return int(where[0]), int(where[-1])


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """Inclusive (first, last) index of each run of True values."""
    edges = np.flatnonzero(np.diff(np.concatenate(([False], flags, [False]))))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}–{last}"


def _range(noun: str, first: int, last: int) -> str:
    return f"{noun} {first}" if first == last else f"{noun}s {first}–{last}"


def _edge(which: str, k: int, noun: str) -> str:
    return f"the {which} {noun}" if k == 1 else f"the {which} {k} {noun}s"


def _listing(noun: str, flags: np.ndarray) -> str:
    """The True indices as ranges, e.g. 'columns 3, 7 and 32–63', cut after _MAX_RUNS ranges."""
    runs = _runs(flags)
    parts = [_span(a, b) for a, b in runs[:_MAX_RUNS]]
    rest = len(runs) - len(parts)
    if rest:
        tail = f"{rest} more range{'s' if rest > 1 else ''}"
    else:
        tail = parts.pop()
    text = f"{', '.join(parts)} and {tail}" if parts else tail
    plural = np.count_nonzero(flags) > 1
    return f"{noun}{'s' if plural else ''} {text}"


def _percent(part: int, whole: int) -> str:
    pct = 100 * part / whole
    # Two significant digits would round these to "0.00%" or "100%", both false.
    if pct < 0.01:
        return "<0.01%"
    if pct > 99:
        return ">99%"
    return f"{pct:.2g}%"
