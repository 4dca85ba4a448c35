"""What every figure of the book stands on: where the committed data is (book/data/),
how a figure is shown (as a PNG that records its smallest text) or boxed for experts,
the steps not yet measured, and the committed measurements read one value at a time (a
step's bench row and its Nsight Compute profile at a size) with the names of steps and
sizes the tables print; `missing_data` says what the book's evidence lacks.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown

from autograder.course import pictures
from autograder.ladder import registry
from autograder.measure import bench

DATA = Path(__file__).resolve().parent.parent / "data"
LARGEST = (4096, 4096, 4096)


def show(fig=None) -> None:
    """Show a figure (the current one by default) as a PNG written by pictures.png, which
    records the size of its smallest text for book/look.py to check, and close it."""
    from IPython.display import Image, display

    fig = fig or plt.gcf()
    display(Image(pictures.png(fig)))
    plt.close(fig)


def for_experts(title: str, *parts) -> Markdown:
    """Figures for experts (a tool's whole output, a search's tables, secondary
    counters) in one box that stays closed until the reader opens it, so that the page's
    argument reads straight through. The box is a dropdown admonition, like the
    chapters' own: a page renders a figure's Markdown as MyST (_config.yml). Four
    backticks, so that a part may hold a code block."""
    body = "\n\n".join(getattr(part, "data", part) for part in parts)
    return Markdown(f"````{{admonition}} {title}\n:class: dropdown\n\n{body}\n````")


# Steps of the ladder that book/data/bench_*.csv has no row for yet, and why.
# The pages say "not yet measured" where their numbers would be; nothing stands
# in for them. To measure one, run `python -m autograder bench STEP` on the GPU
# of the CSV, commit the CSV, and remove the step here (tests/test_book.py
# fails while the two disagree).
NOT_YET_MEASURED: dict[str, str] = {}


# The steps whose kernel is a whole GEMM: what the roofline, the instruction mix
# and the profiler's evidence are about. Step 09's kernel is split-K's
# reduction, a memory-bound pass over the layers; its evidence is the sweep.
GEMM_STEPS = [s for s in registry.STEPS if s.contract == "gemm"]


def not_measured(names) -> str:
    """The sentence a page shows for the steps among names that have no measurement."""
    missing = [n for n in names if n in NOT_YET_MEASURED]
    return " ".join(
        f"**{n}: not yet measured** ({NOT_YET_MEASURED[n]}; `python -m autograder bench "
        f"{n[:2]}` on a GPU adds it)."
        for n in missing
    )


def results() -> list[bench.Row]:
    """Every committed measurement, one GPU per CSV file."""
    rows = []
    for path in sorted(DATA.glob("bench_*.csv")):
        rows += bench.read_csv(path)
    return rows


def provenance(rows: list[bench.Row]) -> str:
    first = rows[0]
    return (
        f"Measured by `python -m autograder bench` on an {first.gpu}, {first.date}, "
        f"CUDA {first.cuda}, CuPy {first.cupy}; cuBLAS with TF32 off in the same run "
        f"(data: `book/data/bench_*.csv`).{measured_earlier(rows)}"
    )


def measured_earlier(rows: list[bench.Row]) -> str:
    """What a page says under figures of earlier versions of their kernels (a row's
    fingerprint is not what bench.fingerprint gives for its step and path today), as a
    sentence after a space; nothing where every row is of the code as it is, or of no
    step (cuBLAS)."""
    stale = {}
    for r in rows:
        step = r.kernel[:2]
        if r.source and step.isdigit() and r.source != bench.fingerprint(
            registry.step(step), r.path
        ):
            stale.setdefault(step, set()).add(r.date)
    return f" {_earlier(stale, 'measured')}" if stale else ""


def _earlier(stale: dict[str, set[str]], how: str) -> str:
    """'The figures of 08 and 12 are of earlier versions of their kernels, measured on
    2026-11-27: their code has changed since.' stale: the dates, by step."""
    one = len(stale) == 1
    steps = sorted(stale)
    named = steps[0] if one else ", ".join(steps[:-1]) + " and " + steps[-1]
    dates = ", ".join(sorted(set().union(*stale.values())))
    versions = "an earlier version of its kernel" if one else "earlier versions of their kernels"
    return (
        f"The figures of {named} are of {versions}, {how} on {dates}: "
        f"{'its' if one else 'their'} code has changed since."
    )


# The book's column is 676 px wide: a figure 6.76 in wide at 100 dpi fills it, and text
# of 8 points or more is 11 px or more there (book/look.py checks it is at least 10).
WIDTH, SMALL = pictures.WIDTH, 9


def _before(step: registry.Step) -> registry.Step | None:
    """The CUDA step before step on the ladder (None for step 01)."""
    index = registry.STEPS.index(step)
    return registry.STEPS[index - 1] if index else None


def _step_and_before(step_id: str) -> list[str]:
    step = registry.step(step_id)
    return [s.name for s in (_before(step), step) if s]


def _steps_timed(rows: list[bench.Row]) -> str:
    """The steps a run timed, as `bench` takes them: '08 10 11 12' (cuBLAS's rows aside)."""
    return " ".join(dict.fromkeys(r.kernel[:2] for r in rows if r.kernel[:2].isdigit()))


def _run_source(rows: list[bench.Row]) -> str:
    """Where a run's figures come from: its GPU, date, versions, command and sampling."""
    first = rows[0]
    return (
        f"{first.gpu}, {first.date}, CUDA {first.cuda}, CuPy {first.cupy}: "
        f"`python -m autograder bench {_steps_timed(rows)}`; {bench.sampling(rows)}."
        f"{measured_earlier(rows)}"
    )


# ---- the measurements, one value at a time (for the chapters' sentences) ----


def _size(size) -> tuple[int, int, int]:
    """(M, N, K) from 4096, '4096', '4095x4097x4093' or a tuple."""
    if isinstance(size, tuple):
        return size
    return bench.parse_size(str(size))


def _size_key(size) -> str:
    M, N, K = _size(size)
    return f"{M}x{N}x{K}"


def _size_label(size) -> str:
    """'4096³' or '4095×4097×4093'."""
    M, N, K = _size(size)
    return f"{M}³" if M == N == K else f"{M}×{N}×{K}"


def _kernel(step) -> str:
    """A step's name ('05_blocktiling_2d') from its id, its name or the Step."""
    return step.name if isinstance(step, registry.Step) else registry.step(step).name


def bench_row(step, size=LARGEST) -> bench.Row:
    """The committed bench measurement of a step at a size (the ladder's CSV, then the
    bonus steps'); a KeyError says how to measure it where there is none."""
    name, key = _kernel(step), _size(size)
    for r in results() + beyond_results():
        if r.kernel == name and (r.M, r.N, r.K) == key:
            return r
    raise KeyError(
        f"no measurement of {name} at {_size_label(size)} in book/data/bench_*.csv or "
        f"beyond_*.csv: `python -m autograder bench {name[:2]} --sizes {_size_key(size)}` "
        "on a GPU adds it"
    )


def beyond_results() -> list[bench.Row]:
    rows = []
    for path in sorted(DATA.glob("beyond_*.csv")):
        rows += bench.read_csv(path)
    return rows


# The GPU the tensor-core steps' current kernels were measured on, every shape of the
# sweep and outside it (book/data/tensor_cores_<gpu>.csv), their accuracy and the probe
# of the tensor cores' additions: step 13 changed after the H100's beyond run.
TENSOR_CORES_ON = "h200"


def tensor_core_sweep(gpu: str = TENSOR_CORES_ON) -> list[bench.Row]:
    """The tensor-core steps timed at every shape of the sweep and outside it, beside
    cuBLAS in strict FP32 and in TF32 (`bench 10 11 12 13 --sweep --outside`)."""
    return bench.read_csv(DATA / f"tensor_cores_{gpu}.csv")


def tensor_core_rows(size=LARGEST) -> dict[str, bench.Row]:
    """The tensor-core sweep's rows at one size, by kernel (cuBLAS_TF32's among them)."""
    return {r.kernel: r for r in tensor_core_sweep() if (r.M, r.N, r.K) == _size(size)}


def provenance_short(size=LARGEST) -> str:
    r = bench_row("01", size)
    return f"{r.gpu}, {r.date}, CUDA {r.cuda}, CuPy {r.cupy}"


def profile_rows() -> dict[tuple[str, str], dict]:
    """Every committed Nsight Compute profile (book/data/profile_*.csv, written by
    `python -m autograder profile`), by (kernel, 'MxNxK')."""
    import csv

    rows = {}
    for path in sorted(DATA.glob("profile_*.csv")):
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                rows[(r["kernel"], r["size"])] = dict(r, file=path.name)
    return rows


# The columns of a profile row that are not numbers.
_PROFILE_TEXT = ("kernel", "size", "top_stalls", "gpu", "date", "versions", "file", "source")


def profile_row(step, size=LARGEST) -> dict:
    """One step's profile at one size: its columns, numbers as floats, the top stalls
    as [(reason, cycles per issued instruction)], and `earlier`: whether it profiled an
    earlier version of the kernel than the one in kernels/ (its fingerprint differs). A
    KeyError says how to add it."""
    name, key = _kernel(step), _size_key(size)
    raw = profile_rows().get((name, key))
    if raw is None:
        raise KeyError(
            f"no profile of {name} at {_size_label(size)} in book/data/profile_*.csv: "
            f"`python -m autograder profile {name[:2]} --size {key}` on a GPU with Nsight "
            "Compute adds it"
        )
    row = dict(raw)
    for column, value in raw.items():
        if column not in _PROFILE_TEXT:
            row[column] = float(value) if value != "" else None
    row["stalls"] = [
        (reason, float(cycles))
        for reason, cycles in (s.rsplit(" ", 1) for s in raw["top_stalls"].split("; ") if s)
    ]
    row["earlier"] = raw["source"] != bench.fingerprint(registry.step(name))
    return row


def profiled_earlier(row: dict) -> str:
    """What a page says of figures from a profile of an earlier version of the kernel
    (profile_row's `earlier`), as a sentence; nothing for a profile of the kernel as it is."""
    return _earlier({row["kernel"][:2]: {row["date"]}}, "profiled") if row["earlier"] else ""


class Text(str):
    """A string that a glue role shows as it is (a str's repr has quotes)."""

    def __repr__(self) -> str:
        return str(self)


def glue(**values) -> None:
    """Name values for the page's {glue:text} roles: each sentence's numbers are
    computed from the data here, not typed into the page."""
    from myst_nb import glue as _glue

    for name, value in values.items():
        _glue(name, Text(value) if isinstance(value, str) else value, display=False)


def missing_data() -> list[str]:
    """What the book's evidence needs and the committed data lacks: a bench row of every
    step of the ladder at every size the bench measured, and a profile row of every GEMM
    step at 4096³ (step 09's evidence is the sweep). Empty when nothing is missing."""
    problems = []
    sizes = sorted({(r.M, r.N, r.K) for r in results()})
    for step in registry.STEPS:
        if step.name in NOT_YET_MEASURED:
            continue
        for size in sizes:
            try:
                bench_row(step.id, size)
            except KeyError as e:
                problems.append(str(e))
        if step not in GEMM_STEPS:
            continue
        try:
            profile_row(step.id, LARGEST)
        except KeyError as e:
            problems.append(str(e))
    return problems
