"""The autotuning searches (book/data/tune_<step>_<gpu>.csv, from `python -m autograder
tune`): what each stage ruled out, the fastest configurations, the rounds of blocks they
run in; and the ablation runs (`bench --ablation`): what each trick of a step is worth.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from IPython.display import Markdown

from autograder.course import explorers
from autograder.ladder import registry
from autograder.measure import bench

from .common import (
    DATA,
    LARGEST,
    SMALL,
    WIDTH,
    _size,
    _size_label,
    measured_earlier,
    show,
)

# ---- autotuning: book/data/tune_<step>_<gpu>.csv, written by `python -m autograder tune` ----

# The GPU whose searches the book shows (the file names' suffix, autograder.run.gpu.slug).
TUNED_ON = "h100_80gb_hbm3"
_TUNE_INTS = ("threads", "shared_bytes", "min_registers", "registers", "spill_bytes", "M", "N", "K")
_TUNE_FLOATS = ("gflops", "pct_cublas", "cublas_gflops")
# What each rule of stage 1 says, by a phrase of its reason (registry.py's rules, tune.limits).
_RULES = (
    ("warp tile is not", "the warp tile is not 32 threads × whole TM×TN tiles"),
    ("warp sub-tile is not", "the warp tile is not 32 threads × whole TM×TN tiles"),
    ("does not divide", "a tile does not divide the tile above it"),
    ("is not a multiple of", "a size is not a multiple of 4 (float4 copies)"),
    ("is not whole rounds", "a tile of A or B is not whole rounds of one copy per thread"),
    ("threads per block", "more than 1024 threads per block"),
    ("bytes of shared memory", "more than 48 KB of static shared memory"),
    ("registers per thread", "a register floor above 255 per thread"),
    ("registers x", "register floor × threads above an SM's 65,536 registers"),
)


def tune_rows(step_id: str, gpu: str = TUNED_ON) -> list[dict]:
    """Every configuration of a step's committed search on one GPU
    (book/data/tune_<step>_<gpu>.csv), best first: the CSV's columns, with numbers as
    numbers and empty cells as None."""
    import csv

    path = DATA / f"tune_{step_id}_{gpu}.csv"
    names = list(registry.step(step_id).params)
    rows = []
    with path.open(newline="") as f:
        for raw in csv.DictReader(f):
            row = dict(raw, file=path.name, params={n: int(raw[n]) for n in names})
            for key in _TUNE_INTS + _TUNE_FLOATS:
                kind = int if key in _TUNE_INTS else float
                row[key] = kind(raw[key]) if raw[key] else None
            rows.append(row)
    return rows


def _tune_label(step: registry.Step, params: dict) -> str:
    """'128×256×16, warps 32×64, WNITER 2' (07, 08), '128×128×16, threads 8×8' (05, 06)."""
    p = params
    label = f"{p['BM']}×{p['BN']}×{p['BK']}"
    if "WM" in p:
        return f"{label}, warps {p['WM']}×{p['WN']}, WNITER {p['WNITER']}"
    return f"{label}, threads {p['TM']}×{p['TN']}" if "TN" in p else f"{label}, TM {p['TM']}"


def tune_rule(reason: str) -> str:
    """The rule of stage 1 that a rejection's (first) reason names."""
    return next((rule for phrase, rule in _RULES if phrase in reason), reason)


def tune_dry_run(step_id: str = "08") -> Markdown:
    """Lines of `python -m autograder tune STEP --dry-run`, run as the page is built: its
    first line, two survivors, and the first rejection for each rule of stage 1, as a
    code block."""
    from autograder.measure import tune

    step = registry.step(step_id)
    trials = tune.candidates(step)
    lines = tune.dry_run_report(step, trials).splitlines()
    shown = lines[1:3]
    seen = set()
    for trial, line in zip(sorted(trials, key=lambda t: not t.alive), lines[1:]):
        if not trial.alive and tune_rule(trial.reason) not in seen:
            seen.add(tune_rule(trial.reason))
            shown.append(line)
    return Markdown(
        f"```text\n$ python -m autograder tune {step_id} --dry-run\n"
        + "\n".join([lines[0], *shown])
        + f"\n... (one line for each of the {len(trials)} configurations)\n```"
    )


def tune_costs(step_id: str, changes: list[dict]) -> Markdown:
    """What stage 1 computes for the registry's parameters changed by each of `changes`
    ({} is the registry's own), and the registers the compiler gives each survivor for a
    T4 (sm_75), compiled as the page is built."""
    from autograder.measure import tune
    from autograder.run import compiler

    step = registry.step(step_id)
    head = (
        "| configuration | threads | shared memory | register floor | stage 1 "
        "| compiled for sm_75 |"
    )
    lines = [head, "|---|---:|---:|---:|---|---|"]
    for change in changes:
        p = {**step.params, **change}
        name = _tune_label(step, p) + (" (the registry's)" if not change else "")
        reasons = step.tuning.rules(p)
        if reasons:
            lines.append(f"| {name} | | | | rejected: {'; '.join(reasons)} | |")
            continue
        threads, shared = step.layout(p).threads, step.tuning.shared_bytes(p)
        floor = step.tuning.registers(p)
        reasons = tune.limits(threads, shared, floor)
        compiled = ""
        if not reasons:
            spec = tune.spec_for(step, p)
            r = compiler.compile_for_arch(
                spec.source, [spec.name_expression], "sm_75", spec.filename
            ).resources[spec.name_expression]
            spilled = r.spill_store_bytes + r.spill_load_bytes
            compiled = f"{r.registers} registers, " + (
                f"spills {spilled} bytes" if spilled else "no spills"
            )
        verdict = f"rejected: {'; '.join(reasons)}" if reasons else "to compile"
        lines.append(f"| {name} | {threads} | {shared} B | {floor} | {verdict} | {compiled} |")
    return Markdown(
        "\n".join(lines) + f"\n\nComputed from `autograder/ladder/registry.py` as this "
        f"page was built; compiled with NVRTC {compiler.nvrtc_version()}."
    )


def tune_verdicts(step_id: str) -> Markdown:
    """How many configurations each stage of the committed search ruled out, and why."""
    rows = tune_rows(step_id)
    count = {}
    for r in rows:
        key = f"rejected: {tune_rule(r['reason'])}" if r["verdict"] == "rejected" else r["verdict"]
        count[key] = count.get(key, 0) + 1
    stages = [
        ("1. rules, before compiling", k)
        for k in sorted(count, key=lambda k: -count[k])
        if k.startswith("rejected")
    ]
    stages += [
        ("2. compile", "does not compile"),
        ("2. compile", "over limits"),
        ("2. compile", "spills"),
        ("3. check", "wrong"),
        ("3.–4. check, time", "crashed"),
        ("3.–4. check, time", "hung"),
        ("4. time", "not timed"),
        ("4. time", "timed"),
    ]
    lines = ["| stage | verdict | configurations |", "|---|---|---:|"]
    for stage, verdict in stages:
        if count.get(verdict) or verdict in ("spills", "wrong", "timed"):
            lines.append(f"| {stage} | {verdict} | {count.get(verdict, 0)} |")
    several = sum(";" in r["reason"] for r in rows if r["verdict"] == "rejected")
    first = rows[0]
    return Markdown(
        "\n".join(lines) + f"\n\nAll {len(rows)} configurations of "
        f"{registry.step(step_id).name}, searched on an {first['gpu']} on "
        f"{first['date']} (data: `book/data/{first['file']}`). A rejected "
        f"configuration is counted under the first rule it breaks; {several} "
        "broke more than one."
    )


def tune_top(step_id: str, n: int = 8) -> Markdown:
    """The n fastest configurations of the committed search, and the registry's own
    wherever it ranked."""
    step = registry.step(step_id)
    rows = [r for r in tune_rows(step_id) if r["gflops"]]
    rank = {id(r): i for i, r in enumerate(rows, 1)}
    shown = rows[:n] + [r for r in rows[n:] if r["params"] == step.params]
    head = (
        "| rank | configuration | threads | shared memory | registers (floor, compiler) "
        "| GFLOP/s | % of cuBLAS |"
    )
    lines = [head, "|---:|---|---:|---:|---:|---:|---:|"]
    for r in shown:
        name = _tune_label(step, r["params"])
        if r["params"] == step.params:
            name = f"**{name} (the registry's)**"
        lines.append(
            f"| {rank[id(r)]} | {name} | {r['threads']} | {r['shared_bytes']} B | "
            f"{r['min_registers']}, {r['registers']} | {r['gflops']:.0f} | "
            f"{r['pct_cublas']:.1f}% |"
        )
    first = rows[0]
    ours = next(
        (
            f"The registry's own configuration ranks {rank[id(r)]} of {len(rows)}, "
            f"{first['pct_cublas'] - r['pct_cublas']:.1f} points of cuBLAS behind the "
            "best. "
            for r in rows
            if r["params"] == step.params
        ),
        "",
    )
    return Markdown(
        "\n".join(lines) + f"\n\n{ours}Timed at {first['M']}×{first['N']}×"
        f"{first['K']} on an {first['gpu']}, {first['date']}: one median of "
        "CUDA-event timings per configuration; cuBLAS (TF32 off) "
        f"{first['cublas_gflops']:.0f} GFLOP/s "
        f"in the same process. Data: `book/data/{first['file']}`."
    )


def tune_plot(step_id: str):
    """Every timed configuration of the committed search, fastest at the top, in % of cuBLAS
    (GFLOP/s on the top axis), coloured by threads per block; the registry's is ringed."""
    step = registry.step(step_id)
    rows = [r for r in tune_rows(step_id) if r["gflops"]][::-1]
    threads = sorted({r["threads"] for r in rows})
    colours = dict(zip(threads, plt.cm.tab10.colors))
    fig, ax = plt.subplots(figsize=(WIDTH, 0.22 * len(rows) + 1.8), layout="constrained")
    y = range(len(rows))
    ax.hlines(
        y,
        min(r["pct_cublas"] for r in rows) - 2,
        [r["pct_cublas"] for r in rows],
        color="lightgray",
        lw=1,
    )
    for t in threads:
        mine = [(i, r) for i, r in enumerate(rows) if r["threads"] == t]
        ax.scatter(
            [r["pct_cublas"] for _, r in mine],
            [i for i, _ in mine],
            color=colours[t],
            zorder=3,
            label=f"{t} threads per block",
        )
    ours = [(i, r) for i, r in enumerate(rows) if r["params"] == step.params]
    for i, r in ours:
        ax.scatter(
            [r["pct_cublas"]],
            [i],
            s=160,
            facecolors="none",
            edgecolors="black",
            lw=1.5,
            zorder=4,
            label="the registry's",
        )
    ax.set_yticks(list(y), [_tune_label(step, r["params"]) for r in rows], fontsize=SMALL)
    for tick, r in zip(ax.get_yticklabels(), rows):
        if r["params"] == step.params:
            tick.set_fontweight("bold")
    cublas = rows[0]["cublas_gflops"]
    top = ax.secondary_xaxis(
        "top", functions=(lambda p: p * cublas / 100, lambda g: g * 100 / cublas)
    )
    top.set_xlabel("GFLOP/s")
    ax.set_xlabel(f"% of cuBLAS ({cublas:.0f} GFLOP/s, TF32 off)")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.08 * 30 / len(rows)),
              ncol=2, frameon=False)  # fmt: skip
    fig.suptitle(
        f"{step.name}: the {len(rows)} timed configurations,\n"
        f"{rows[0]['M']}×{rows[0]['N']}×{rows[0]['K']} on an {rows[0]['gpu']}",
        fontsize=10,
    )
    show()


def tune_waves(
    step_id: str, gpu_name: str = "H100 SXM", sizes=(LARGEST, (4095, 4097, 4093))
) -> Markdown:
    """Arithmetic, not a measurement: how many rounds of blocks the best configuration of the
    committed search and the registry's need at each size, with as many blocks per SM as
    autograder/ladder/hardware.py's occupancy allows (registers, shared memory, warps)."""
    from autograder.ladder import hardware

    step = registry.step(step_id)
    timed = [r for r in tune_rows(step_id) if r["gflops"]]
    chosen = [timed[0]] + [r for r in timed[1:] if r["params"] == step.params]
    sms = explorers.GPUS[gpu_name]["sms"]
    head = " | ".join(f"blocks at {M}×{N}×{K} | rounds | slots used" for M, N, K in sizes)
    lines = [
        f"| configuration | threads | registers | blocks per SM | {head} |",
        "|---|---:|---:|---:|" + "---:|---:|---:|" * len(sizes),
    ]
    for r in chosen:
        per_sm = hardware.occupancy(
            explorers.GPUS[gpu_name]["arch"], r["threads"], r["registers"], r["shared_bytes"]
        ).blocks
        slots = per_sm * sms
        cells = []
        for M, N, K in sizes:
            blocks = len(range(0, M, r["params"]["BM"])) * len(range(0, N, r["params"]["BN"]))
            rounds = -(-blocks // slots)
            cells.append(
                f"{blocks} | {blocks / slots:.2f} → {rounds} | "
                f"{100 * blocks / (rounds * slots):.0f}%"
            )
        name = _tune_label(step, r["params"])
        name += " (the registry's)" if r["params"] == step.params else " (the best)"
        lines.append(
            f"| {name} | {r['threads']} | {r['registers']} | {per_sm} | " + " | ".join(cells) + " |"
        )
    return Markdown(
        "\n".join(lines) + f"\n\nOn an {gpu_name} ({sms} SMs), with the registers "
        "the search's compiler gave each configuration. *Rounds*: blocks ÷ "
        "(blocks per SM × SMs), rounded up; *slots used*: the share of those "
        "rounds' block slots that hold a block. A model that ignores how blocks of "
        "one round finish at different times; nothing here was timed."
    )


def tune_row(step_id: str, **params) -> dict:
    """The committed tuning search's row of a step at the registry's parameters changed
    by params (book/data/tune_<step>_<gpu>.csv); a KeyError where it was not searched."""
    wanted = {**registry.step(step_id).params, **params}
    for r in tune_rows(step_id):
        if r["params"] == wanted:
            return r
    raise KeyError(f"no configuration {wanted} in the committed search of step {step_id}")


# ---- the last FP32 step's ablation (`bench --ablation`) ------------------------------------


def ablation_table(step_id: str = "08") -> Markdown:
    """A step with each of its tricks taken out (autograder/measure/ablation.py): % of
    cuBLAS in the same run, and what the trick is worth, at each size measured."""
    from autograder.measure import ablation

    whole = registry.step(step_id).name
    variants = ablation.variants(step_id)
    rows = _ablation_rows(step_id)
    command = "python -m autograder bench --ablation"
    if step_id != ablation.STEP:
        command += f" {step_id}"
    if not rows:
        return Markdown(
            f"**Not yet measured**: `{command}` on a GPU times "
            f"{whole} with each of these taken out in turn: "
            + "; ".join(v.trick for v in variants)
            + "."
        )
    sizes = sorted({(r.M, r.N, r.K) for r in rows}, key=lambda s: s[0] * s[1] * s[2])
    cell = {(r.kernel, (r.M, r.N, r.K)): r for r in rows}
    # A TF32 step against the library a reader would use instead: cuBLAS with TF32,
    # timed in the same run; an FP32 step against strict cuBLAS.
    tf32 = registry.step(step_id).input_roundoff > 0
    library = "cuBLAS TF32" if tf32 else "cuBLAS"

    def pct(r: bench.Row) -> float:
        if tf32:
            return 100 * r.gflops / cell[bench.CUBLAS_TF32, (r.M, r.N, r.K)].gflops
        return r.pct_cublas

    head = " | ".join(f"{_size_label(s)}: % of {library} (the trick's worth)" for s in sizes)
    lines = [f"| kernel | {head} |", "|---|" + "---:|" * len(sizes)]
    for label in [whole, *(v.label for v in variants)]:
        shown = []
        for size in sizes:
            r, full = cell.get((label, size)), cell.get((whole, size))
            if r is None or full is None:
                shown.append("—")
            elif label == whole:
                shown.append(f"{pct(r):.1f}%")
            else:
                shown.append(f"{pct(r):.1f}% ({_worth(full, r):+.0%})")
        lines.append(f"| {label} | " + " | ".join(shown) + " |")
    first = rows[0]
    lines.append(
        f"\nMeasured by `{command}` on an {first.gpu}, "
        f"{first.date}, CUDA {first.cuda}, CuPy {first.cupy}.{measured_earlier(rows)}"
    )
    return Markdown("\n".join(lines))


def _ablation_rows(step_id: str) -> list[bench.Row]:
    """The committed rows of a step's ablation run: the whole kernel, its variants and
    cuBLAS with TF32 where the run timed it."""
    from autograder.measure import ablation

    labels = {registry.step(step_id).name, bench.CUBLAS_TF32}
    labels |= {v.label for v in ablation.variants(step_id)}
    return [
        r
        for path in sorted(DATA.glob(f"{ablation.kind(step_id)}_*.csv"))
        for r in bench.read_csv(path)
        if r.kernel in labels
    ]


def _worth(whole: bench.Row, variant: bench.Row) -> float:
    """What a trick is worth: the whole kernel's rate over the variant's, less 1."""
    return whole.gflops / variant.gflops - 1


def ablation_worth(step_id: str, trick: str, size=LARGEST) -> float:
    """What the trick that starts with `trick` is worth in the step's committed ablation
    run, in per cent, as its table says it (negative: the whole kernel was the slower)."""
    from autograder.measure import ablation

    (variant,) = [v for v in ablation.variants(step_id) if v.trick.startswith(trick)]
    rows = {r.kernel: r for r in _ablation_rows(step_id) if (r.M, r.N, r.K) == _size(size)}
    return 100 * _worth(rows[registry.step(step_id).name], rows[variant.label])
