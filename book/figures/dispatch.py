"""Step 09, choosing by shape: the shape sweep against cuBLAS (`bench --sweep`,
book/data/sweep_*.csv), the plans the rule of thumb chooses, and the measured dispatch
tables (book/data/dispatch_*.json).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from IPython.display import Markdown

from autograder.course import explorers
from autograder.measure import bench

from .common import (
    DATA,
    SMALL,
    WIDTH,
    _kernel,
    _size,
    _size_label,
    measured_earlier,
    not_measured,
    show,
)
from .models import (
    sms,
)

# ---- the shape sweep (`bench --sweep`), for step 09 ----------------------------------------


# Sweeps of step 09 on a GPU with no committed table (`bench --sweep --first-use`), tuned
# on first use, and untuned (SGEMM_AUTOTUNE=0): kept apart from the sweeps proper.
FIRST_USE, UNTUNED = "sweep_first_use_", "sweep_untuned_"


def sweep_results() -> list[bench.Row]:
    """Every committed sweep measurement (book/data/sweep_<gpu>.csv), with the table
    committed for its GPU where there is one."""
    rows = []
    for path in sorted(DATA.glob("sweep_*.csv")):
        if not path.name.startswith((FIRST_USE, UNTUNED)):
            rows += bench.read_csv(path)
    return rows


def _results(prefix: str) -> list[bench.Row]:
    rows = []
    for path in sorted(DATA.glob(f"{prefix}*.csv")):
        rows += bench.read_csv(path)
    return rows


def learner_gpus() -> Markdown:
    """What step 09 reached on each GPU it was measured on, as the learner's GPU meets it:
    with a committed table, tuned on first use (none committed: `bench --first-use`) and
    untuned (SGEMM_AUTOTUNE=0): geometric mean and minimum of % of cuBLAS over the
    sweep and over the shapes outside it, with step 08 alone beside them in the same
    runs, and the file each comes from."""
    outside = {bench.parse_size(s) for s in bench.outside_sizes()}
    name09, name08 = _kernel("09"), _kernel("08")
    lines = [
        "| GPU | step 09 | sweep: geomean / min | outside it: geomean / min "
        "| 08 alone, sweep | data |",
        "|---|---|---:|---:|---:|---|",
    ]
    sources = (
        ("with its committed table", sweep_results, "sweep_"),
        ("tuned on first use", lambda: _results(FIRST_USE), FIRST_USE),
        ("untuned (the device's arithmetic)", lambda: _results(UNTUNED), UNTUNED),
    )
    for label, read, prefix in sources:
        rows = read()
        for gpu in dict.fromkeys(r.gpu for r in rows):

            def pct(name, out):
                return [r.pct_cublas for r in rows if r.gpu == gpu and r.kernel == name
                        and ((r.M, r.N, r.K) in outside) == out]  # fmt: skip

            def both(values):
                if not values:
                    return "not measured"
                mean = math.exp(sum(map(math.log, values)) / len(values))
                return f"{mean:.1f}% / {min(values):.1f}%"

            alone = pct(name08, False)
            lines.append(
                f"| {gpu} | {label} | {both(pct(name09, False))} | {both(pct(name09, True))} "
                f"| {both(alone)} | `{prefix}{_slug(gpu)}.csv` |"
            )
    said = measured_earlier([r for _, read, _ in sources for r in read()])
    return Markdown("\n".join(lines) + (f"\n\n{said.strip()}" if said else ""))


def most_plans_timed(gpu_name: str = "H100 SXM") -> tuple[int, str]:
    """The most plans first-use tuning times at one shape of the sweep or outside it, on
    this GPU (its datasheet properties), and that shape: autotune.FirstUse.candidates,
    with a stand-in timer for the rows below a band (its notes on stderr held back)."""
    import contextlib
    import io

    from autograder.ladder import hardware
    from autograder.run import autotune

    first = autotune.FirstUse(
        hardware.datasheet_device(gpu_name), lambda shape, plan: 1.0, race_s=math.inf
    )
    shapes = map(bench.parse_size, bench.sweep_sizes() + bench.outside_sizes())
    with contextlib.redirect_stderr(io.StringIO()):
        count, shape = max((len(first.candidates(*shape)), shape) for shape in shapes)
    return count, _size_label(shape)


def _slug(gpu: str) -> str:
    from autograder.run import gpu as gpus

    return gpus.slug(gpu)


def predicted_plans(gpu_name: str = "Tesla T4", shapes=None) -> Markdown:
    """What step 09 runs untuned on a GPU of explorers.GPUS (by_shape.device_rule on its
    datasheet properties, the registry's floor for registers), at each sweep shape, and
    whether that is step 08's own plan. Computed; nothing timed."""
    from autograder.ladder import hardware
    from autograder.run import by_shape

    device = hardware.datasheet_device(gpu_name)
    lines = ["| shape | untuned plan | step 08's own? | waves of step 08's tiles |",
             "|---|---|---|---:|"]  # fmt: skip
    for _, (M, N, K) in shapes or _sweep_shapes():
        plan = by_shape.device_rule(M, N, K, device)
        lines.append(
            f"| {_size_label((M, N, K))} | {plan} | {'yes' if plan == by_shape.SAFE else 'no'} "
            f"| {by_shape.tile_count(M, N, by_shape.SAFE.tiles) / device.sms:.2f} |"
        )
    return Markdown("\n".join(lines))


def _sweep_shapes() -> list[tuple[str, tuple[int, int, int]]]:
    return [(group, bench.parse_size(s)) for group, sizes in bench.SWEEP.items() for s in sizes]


def sweep_plot(steps: list[str]):
    """% of cuBLAS at every shape of the sweep, one bar per step, grouped by the sweep's
    classes; the steps not measured yet are named under it."""
    names = [_kernel(s) for s in steps]
    rows = [r for r in sweep_results() if r.kernel in names]
    measured = [n for n in names if any(r.kernel == n for r in rows)]
    cell = {(r.kernel, (r.M, r.N, r.K)): r.pct_cublas for r in rows}
    shapes = [(g, s) for g, s in _sweep_shapes() if any((n, s) in cell for n in measured)]
    fig, ax = plt.subplots(figsize=(WIDTH, 5.0))
    width = 0.8 / max(1, len(measured))
    for i, name in enumerate(measured):
        x = [j + (i - (len(measured) - 1) / 2) * width for j in range(len(shapes))]
        ax.bar(x, [cell.get((name, s), math.nan) for _, s in shapes], width, label=name)
    ax.axhline(100, color="black", linestyle="--", linewidth=1, label="cuBLAS (FP32)")
    labels = [f"{m}×{n}×{k}" for _, (m, n, k) in shapes]
    ax.set_xticks(range(len(shapes)), labels, rotation=60, ha="right", fontsize=SMALL)
    ax.tick_params(labelsize=SMALL)
    top = max(100, *(v for v in cell.values() if v == v)) * 1.18  # room for the classes' names
    ax.set_ylim(0, top)
    for j, (group, _) in enumerate(shapes):
        if j == 0 or shapes[j - 1][0] != group:
            ax.axvline(j - 0.5, color="grey", linewidth=0.5)
            ax.text(j - 0.4, top * 0.98, group, fontsize=SMALL, va="top")
    ax.set_xlabel("shape M×N×K", fontsize=SMALL + 1)
    ax.set_ylabel("% of cuBLAS (FP32, same run)", fontsize=SMALL + 1)
    first = rows[0]
    ax.set_title(f"The shape sweep on the {first.gpu} ({first.date}, CUDA {first.cuda})",
                 fontsize=SMALL + 1,
                 pad=6 + 16 * math.ceil((len(measured) + 1) / 3))  # the legend's rows  # fmt: skip
    ax.legend(fontsize=SMALL, ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0),
              frameon=False)  # fmt: skip
    fig.tight_layout()
    show()
    missing = not_measured([n for n in names if n not in measured])
    return Markdown(f"The plot leaves out what was not measured. {missing}") if missing else None


def sweep_summary(steps: list[str]) -> Markdown:
    """Each step's geometric mean and minimum (% of cuBLAS) over the sweep, and its
    worst shape."""
    lines = ["| step | geometric mean | minimum | at |", "|---|---:|---:|---|"]
    for name in (_kernel(s) for s in steps):
        rows = [r for r in sweep_results() if r.kernel == name]
        if not rows:
            lines.append(f"| {name} | not yet measured | | |")
            continue
        worst = min(rows, key=lambda r: r.pct_cublas)
        mean = math.exp(sum(math.log(r.pct_cublas) for r in rows) / len(rows))
        lines.append(
            f"| {name} | {mean:.1f}% | {worst.pct_cublas:.1f}% | "
            f"{_size_label((worst.M, worst.N, worst.K))} |"
        )
    return Markdown("\n".join(lines))


def sweep_row(step, size) -> bench.Row:
    """A step's committed sweep measurement at one shape."""
    name, key = _kernel(step), _size(size)
    for r in sweep_results():
        if r.kernel == name and (r.M, r.N, r.K) == key:
            return r
    raise KeyError(f"no sweep row of {name} at {_size_label(size)}: `bench --sweep` adds it")


def dispatch_plans(gpu_name: str = "H100 SXM", shapes=None) -> Markdown:
    """What the rule of thumb (by_shape.rule_of_thumb) chooses at each sweep shape, for a
    GPU with that many SMs, and what the plan costs (explorers.plan_costs)."""
    from autograder.run import by_shape

    count = sms(gpu_name)
    lines = [
        "| shape | plan | blocks | waves | split-K's extra traffic |",
        "|---|---|---:|---:|---:|",
    ]
    for _, (M, N, K) in shapes or _sweep_shapes():
        plan = by_shape.rule_of_thumb(M, N, K, count)
        c = explorers.plan_costs(M, N, K, plan, count)
        extra = f"{c.split_bytes / c.product_bytes:.0%}" if c.split_bytes else "none"
        lines.append(
            f"| {_size_label((M, N, K))} | {plan} | {c.blocks} | {c.waves:.2f} | {extra} |"
        )
    return Markdown("\n".join(lines))


def dispatch_table() -> Markdown:
    """The measured dispatch tables committed (`tune 09`): each class's plan, and its
    share of cuBLAS over the class's four shapes beside step 08 alone's."""
    from autograder.measure import tune_plans

    parts = []
    for path in sorted(DATA.glob("dispatch_*.json")):
        table, timings = tune_plans.read(path)
        lines = [
            f"**{table.gpu}** ({table.sms} SMs), {table.measured}:",
            "",
            "| class (its measured shape) | rows of A and B | plan | % of cuBLAS | 08 alone |",
            "|---|---|---|---:|---:|",
        ]
        for r in tune_plans.class_results(table, timings):
            lines.append(
                f"| {_size_label(r.shape)} | {'aligned' if r.aligned else 'unaligned'} "
                f"| {r.plan} | {r.pct_cublas:.1f}% | {r.alone_pct_cublas:.1f}% |"
            )
        parts.append("\n".join(lines))
    return Markdown(
        "\n\n".join(parts) or "**No table measured yet**: `python -m autograder tune 09`."
    )
