"""Which index mistake made C what it is.

The mistakes learners make most are in index formulas: a term of a row or column
index left out (the warp's sub-tile offset, the block's offset), a row stride of
K where N belongs, threadIdx.x and threadIdx.y exchanged. describe_mismatch sees
only *where* C is wrong; this module tests *why*: each hypothesis rebuilds C from
the case's own A, B and C as a kernel with that one mistake would compute it, and
a hypothesis is named only when it reproduces every element of C within the
checker's tolerance. So the message never guesses: a kernel with some other bug
matches none of them and gets describe_mismatch's plainer account instead.

The terms come from the step's tile hierarchy (Terms.of: block, warp, warp
sub-tile, thread), and the line from the learner's source where one line alone
fits (Source.lines_reading).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ..run.kernel import KernelSpec, template_arguments

# The diagnosis compares whole matrices in float64 on the host: past this many
# elements of C the plainer description answers, and the smaller cases of the
# suite, which show the same mistake, are diagnosed instead.
MAX_ELEMENTS = 1_200_000


@dataclass(frozen=True)
class Term:
    """One term of a row or column index: `size` times a counter that runs over
    span // size values (span None: the block's, which runs over the grid)."""

    axis: str  # "row" or "column"
    words: str  # "the warp sub-tile's offset"
    formula: str  # "wn * WSUBN", as the course's kernels write it
    size: int
    span: int | None
    symbol: str  # the parameter whose size it is ("WSUBN"), for finding the line

    def dropped(self, n: int) -> np.ndarray:
        """Index i as a kernel computes it without this term, for i in 0 ... n - 1."""
        i = np.arange(n)
        if self.span is None:
            return i % self.size
        return i - (i % self.span) // self.size * self.size


# Per axis: the parameters of the block, warp, warp sub-tile and thread tile, the
# element's counter, and the counters the course's kernels multiply them by.
_LEVELS = {
    "row": ("BM", "WM", "WSUBM", "TM", "m", ("blockIdx.y", "warpRow", "wm", "threadRow")),
    "column": ("BN", "WN", "WSUBN", "TN", "n", ("blockIdx.x", "warpCol", "wn", "threadCol")),
}


@dataclass(frozen=True)
class Terms:
    rows: tuple[Term, ...]
    columns: tuple[Term, ...]
    tile: tuple[int, int]  # the rows and columns of C one block covers
    square: int = 0  # BS, for steps 01-03's BS x BS tiles of A, B and C; else 0

    @classmethod
    def of(cls, params: Mapping[str, int], tile: tuple[int, int]) -> Terms:
        """The index terms of a course kernel with these template parameters (BS for
        steps 01-03; BM, TM, ... for 04-08), from the block down to the thread."""
        p = dict(params)
        square = "BS" in p  # steps 01-03's square tiles
        if square:
            p.update(BM=p["BS"], BN=p["BS"])
        levels: dict[str, list[Term]] = {"row": [], "column": []}
        for axis, (block, warp, wsub, thread, element, counters) in _LEVELS.items():
            sizes = {block: p.get(block, tile[0] if axis == "row" else tile[1])}
            if {"WM", "WN", "WNITER", "TM", "TN"} <= set(p):
                iterations = p["WM"] * p["WN"] // (32 * p["TM"] * p["TN"] * p["WNITER"])
                sizes[warp] = p[warp]
                sizes[wsub] = p["WM"] // iterations if axis == "row" else p["WN"] // p["WNITER"]
            sizes[thread] = p.get(thread, 1)
            sizes[element] = 1
            named = dict(zip((block, warp, wsub, thread), counters, strict=True))
            words = {
                block: "the block's offset",
                warp: "the warp's offset",
                wsub: "the warp sub-tile's offset",
                thread: "the thread's offset",
                element: "the element's place in the thread's tile",
            }
            spans = [None, *sizes.values()]
            for (symbol, size), span in zip(sizes.items(), spans, strict=False):
                if span is not None and span <= size:
                    continue  # a counter with one value: the term is always 0
                if symbol == element:
                    formula = element
                elif symbol == thread and size == 1:
                    formula = "threadIdx.x or threadIdx.y"
                else:
                    formula = f"{named[symbol]} * {'BS' if square and symbol == block else symbol}"
                levels[axis].append(Term(axis, words[symbol], formula, size, span, symbol))
        return cls(tuple(levels["row"]), tuple(levels["column"]), tile, p["BS"] if square else 0)


@dataclass(frozen=True)
class Source:
    """The learner's kernel source, to point at the line a mistake is on."""

    text: str
    filename: str

    def code(self) -> list[str]:
        return re.sub(r"//[^\n]*", "", self.text).splitlines()

    def lines_reading(self, array: str, without: str = "", containing: str = "") -> list[int]:
        """Lines that read array[...][...] (not those that only store to it), optionally
        only those whose index lacks `without` or holds `containing`, as whole words."""
        found = []
        for number, line in enumerate(self.code(), 1):
            for m in re.finditer(rf"\b{array}\s*(\[)", line):
                end, index = m.start(1), ""
                while end < len(line) and line[end] == "[":
                    close = _closing(line, end + 1)
                    index += line[end : close + 1]
                    end = close + 1
                    while end < len(line) and line[end] == " ":
                        end += 1
                if re.match(r"[\s)]*=(?!=)", line[end:]) or "__shared__" in line:
                    continue  # a store, or the declaration
                if without and re.search(rf"\b{without}\b", index):
                    continue
                if containing and not re.search(rf"\b{containing}\b", index):
                    continue
                found.append(number)
                break
        return found

    def lines_storing(self, array: str) -> list[int]:
        """Lines that store to array[...]."""
        store = re.compile(rf"\b{array}\s*(\[[^\]]*\]\s*)+=(?!=)")
        return [n for n, line in enumerate(self.code(), 1) if store.search(line)]

    def lines_assigning(self, pattern: str, lacking: str = "") -> list[int]:
        """Lines that assign a variable whose name matches `pattern` from an expression
        that holds none of the words in `lacking` (a regex alternation)."""
        found = []
        for number, line in enumerate(self.code(), 1):
            m = re.search(rf"\b(?:{pattern})\s*=(?!=)(.*)", line)
            if m and not (lacking and re.search(rf"\b(?:{lacking})\b", m.group(1))):
                found.append(number)
        return found

    def at(self, lines: list[int]) -> str:
        """', at FILE:LINE' when one line (or two) fits; '' otherwise."""
        if not lines or len(lines) > 2:
            return ""
        return f", at {self.filename}:{' and '.join(str(n) for n in lines)}"


def _closing(line: str, start: int) -> int:
    depth = 1
    for k in range(start, len(line)):
        depth += {"[": 1, "]": -1}.get(line[k], 0)
        if depth == 0:
            return k
    return len(line)


@dataclass(frozen=True)
class Clues:
    """What the diagnosis knows of the kernel beyond its output."""

    terms: Terms | None
    source: Source | None
    # It hands its buffers over with mbarriers (KernelSpec.waits_on_mbarriers): a race
    # in it is a buffer refilled too early, not a missing __syncthreads().
    mbarriers: bool = False


def clues_for(spec: KernelSpec) -> Clues:
    """The terms of a course GEMM kernel (from its template arguments and its
    launch's tile) and its source. Step 09's reduction runs inside a GEMM of other
    tiles, whose terms are the course's: none."""
    source = Source(spec.source, spec.filename)
    if spec.contract != "gemm":
        return Clues(None, source, spec.waits_on_mbarriers)
    params = template_arguments(spec.source, spec.name_expression)
    return Clues(Terms.of(params, spec.geometry.tile), source)


@dataclass(frozen=True)
class Case:
    """What the diagnosis may read of one case, on the host, in float64."""

    got: np.ndarray  # C as the kernel left it
    A: np.ndarray
    B: np.ndarray
    C0: np.ndarray  # C before the launch (zeros for beta = 0)
    alpha: float
    beta: float
    tolerance: np.ndarray
    unwritten: np.ndarray  # elements the kernel never stored to
    product: np.ndarray  # A B, as the checker computed it for its reference

    def matches(self, product: np.ndarray) -> bool:
        """Whether C is alpha * product + beta * C0, element by element (NaN in the
        product, from a read past a matrix's end, matching NaN in C). A C of NaN alone
        matches nothing: NaN would match any hypothesis that reads past an end."""
        candidate = self.alpha * product + self.beta * self.C0
        close = np.abs(self.got - candidate) <= self.tolerance
        both_nan = np.isnan(candidate) & np.isnan(self.got)
        return bool((close | both_nan).all()) and not bool(both_nan.all())


def diagnose(case: Case, clues: Clues, raced: bool = False) -> str:
    """The index mistake that reproduces C, in a sentence; '' when none does. raced:
    C changed between two runs, which only a mistake that has blocks store to the
    same elements explains (any other is a race of its own, not reproduced)."""
    if case.got.size > MAX_ELEMENTS or case.got.size < 4:
        return ""
    for hypothesis in _RACING if raced else _HYPOTHESES:
        said = hypothesis(case, clues.terms, clues.source)
        if said:
            return said
    return ""


def _dropped_term(case: Case, terms: Terms | None, source: Source | None) -> str:
    """A term missing from the row of A or the column of B a thread multiplies (so
    that its element holds another element's value), as in a fragment or tile load."""
    if terms is None:
        return ""
    M, N = case.got.shape
    product = case.product
    for term in terms.rows + terms.columns:
        n = M if term.axis == "row" else N
        index = term.dropped(n)
        if (index == np.arange(n)).all():
            continue  # the term is 0 at every index of this shape
        moved = product[index, :] if term.axis == "row" else product[:, index]
        if not case.matches(moved):
            continue
        first = int(np.flatnonzero(index != np.arange(n))[0])
        if term.axis == "row":
            example = f"C({first}, 0) holds what C({index[first]}, 0) should"
            array, other = "A", "As"
        else:
            example = f"C(0, {first}) holds what C(0, {index[first]}) should"
            array, other = "B", "Bs"
        lines = []
        if source:
            lines = source.lines_reading(other, without=term.symbol) or source.lines_reading(
                array, without=term.symbol
            )
        where = source.at(lines) if source else ""
        matrix = "row of A" if term.axis == "row" else "column of B"
        return (
            f"{example}: the {matrix} each thread multiplies lacks {term.words} "
            f"({term.formula}, {term.size} {term.axis}s){where}"
        )
    return ""


def _block_offset_missing(case: Case, terms: Terms | None, source: Source | None) -> str:
    """Every block wrote the first block's rows (or columns): the block's offset is
    missing from the index, so the rest of C was never written though the grid
    covers it (the grader launches enough blocks)."""
    if terms is None:
        return ""
    M, N = case.got.shape
    for axis, extent, size in (("row", M, terms.tile[0]), ("column", N, terms.tile[1])):
        if extent <= size:
            continue
        beyond = case.unwritten[size:, :] if axis == "row" else case.unwritten[:, size:]
        inside = case.unwritten[:size, :] if axis == "row" else case.unwritten[:, :size]
        if not beyond.all() or inside.any():
            continue
        blocks = -(-extent // size)
        grid = "grid.y" if axis == "row" else "grid.x"
        where = ""
        if source:
            names = "row|blockRow" if axis == "row" else "col|blockCol"
            where = source.at(source.lines_assigning(names, lacking="blockIdx|blockRow|blockCol"))
        return (
            f"only {axis}s 0–{size - 1} of C were written, though the grid has {blocks} "
            f"blocks along them ({grid}): every block wrote the first block's {axis}s, so the "
            f"{axis} index lacks the block's offset (blockIdx.{'y' if axis == 'row' else 'x'} "
            f"times the tile's {size} {axis}s){where}"
        )
    return ""


def _same_value_per_tile(case: Case, terms: Terms | None, source: Source | None) -> str:
    """Every element of a block's tile holds one value: the sum a thread computes does
    not depend on which thread it is (threadIdx.x and threadIdx.y exchanged between
    the element a thread owns and the elements it loads)."""
    if terms is None:
        return ""
    rows, cols = terms.tile
    M, N = case.got.shape
    # A row or a column alone (C of 1 x 300) holds one value wherever the sum ignores
    # the index along it: no sign of which thread index was taken.
    if min(rows, M) < 2 or min(cols, N) < 2:
        return ""
    own = case.got - case.beta * case.C0
    Mp, Np = -(-M // rows) * rows, -(-N // cols) * cols
    if np.isnan(own).any():
        return ""  # NaN in C comes from a read of bad memory, not from this mistake
    # The tiles at C's edge are partial: padded with their own last row and column.
    padded = np.empty((Mp, Np))
    padded[:M, :N] = own
    padded[M:, :N] = own[-1:, :]
    padded[:, N:] = padded[:, N - 1 : N]
    tiles = padded.reshape(Mp // rows, rows, Np // cols, cols)
    values = tiles.max(axis=(1, 3))
    spread = values - tiles.min(axis=(1, 3))
    # One value per tile, and not zero (a kernel that sums nothing leaves zeros
    # everywhere, but for rounding in beta * C: not this mistake).
    allowed = 2 * case.tolerance.max()
    if not (spread <= allowed).all() or not (np.abs(values) > allowed).any():
        return ""
    where = ""
    if source:
        where = source.at(source.lines_assigning("row|col"))
    return (
        f"every element of each {rows}x{cols} tile of C holds the same sum: every thread "
        "of a block multiplied the same values, so the element a thread owns and the "
        "elements it loads do not take their row and column from the same thread index "
        f"(threadIdx.x and threadIdx.y exchanged){where}"
    )


def _wrong_stride(case: Case, terms: Terms | None, source: Source | None) -> str:
    """A or B read with the row stride of another matrix (A[row * N + k], B[k * K + col])."""
    M, K = case.A.shape
    N = case.B.shape[1]
    flatA, flatB = case.A.ravel(), case.B.ravel()

    def strided(flat: np.ndarray, rows: int, cols: int, stride: int) -> np.ndarray:
        index = np.arange(rows)[:, None] * stride + np.arange(cols)[None, :]
        out = np.full((rows, cols), np.nan)
        inside = index < flat.size
        out[inside] = flat[index[inside]]
        return out

    trials: list[tuple[str, str, str, str, Callable[[], np.ndarray]]] = [
        ("A", "N", "K", "row * N + k", lambda: strided(flatA, M, K, N) @ case.B),
        ("A", "M", "K", "row * M + k", lambda: strided(flatA, M, K, M) @ case.B),
        ("B", "K", "N", "k * K + col", lambda: case.A @ strided(flatB, K, N, K)),
        ("B", "M", "N", "k * M + col", lambda: case.A @ strided(flatB, K, N, M)),
    ]
    sizes = {"M": M, "N": N, "K": K}
    for matrix, wrong, right, formula, product in trials:
        if sizes[wrong] == sizes[right]:
            continue
        if not case.matches(product()):
            continue
        where = source.at(source.lines_reading(matrix, containing=wrong)) if source else ""
        return (
            f"{matrix} is read with rows {wrong} floats apart ({matrix}[{formula}]), where "
            f"they are {right} apart: {matrix} is {'M x K' if matrix == 'A' else 'K x N'}, "
            f"row-major{where}"
        )
    return ""


def _tile_transposed(case: Case, terms: Terms | None, source: Source | None) -> str:
    """A square tile of A or B stored into shared memory with its row and column
    exchanged (As[tx][ty] where the thread read A[row][k0 + tx])."""
    if terms is None or not terms.square:
        return ""
    bs = terms.square

    def transposed(X: np.ndarray) -> np.ndarray:
        rows, cols = X.shape
        R, C = -(-rows // bs) * bs, -(-cols // bs) * bs
        padded = np.zeros((R, C))
        padded[:rows, :cols] = X
        tiles = padded.reshape(R // bs, bs, C // bs, bs).transpose(0, 3, 2, 1)
        return tiles.reshape(R, C)[:rows, :cols]

    for matrix, product in (
        ("A", lambda: transposed(case.A) @ case.B),
        ("B", lambda: case.A @ transposed(case.B)),
    ):
        if case.matches(product()):
            where = source.at(source.lines_storing(f"{matrix}s")) if source else ""
            return (
                f"C is what {matrix} gives with each of its {bs}x{bs} tiles transposed: the "
                f"tile of {matrix} is stored into {matrix}s with its row and column exchanged "
                f"(the thread that read {matrix}[r][c] must store it at {matrix}s[r][c], "
                f"relative to the tile){where}"
            )
    return ""


_RACING = (_block_offset_missing,)
_HYPOTHESES = (
    _block_offset_missing,
    _same_value_per_tile,
    _dropped_term,
    _wrong_stride,
    _tile_transposed,
)
