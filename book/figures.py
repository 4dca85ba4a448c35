"""Figures and tables for the book, drawn at build time from the repository's
own data and code: book/data/bench_*.csv (written by `python -m autograder
bench`), the registry, and the explorers' models. Nothing here is typed in.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown

from autograder import bench, explorers, registry

DATA = Path(__file__).resolve().parent / "data"
LARGEST = (4096, 4096, 4096)

# Steps of the ladder that book/data/bench_*.csv has no row for yet, and why.
# The pages say "not yet measured" where their numbers would be; nothing stands
# in for them. To measure one, run `python -m autograder bench STEP` on the GPU
# of the CSV, commit the CSV, and remove the step here (tests/test_book.py
# fails while the two disagree).
NOT_YET_MEASURED: dict[str, str] = {}


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
        f"(data: `book/data/bench_*.csv`)."
    )


def ladder(kernels: list[str] | None = None):
    """GFLOP/s against size for some steps of the ladder (all by default) and cuBLAS."""
    rows = [r for r in results() if kernels is None or r.kernel in kernels]
    bench.figure(rows)
    plt.show()
    names = kernels or [s.name for s in registry.STEPS]
    return Markdown(f"{provenance(rows)} {not_measured(names)}".strip())


def progression(size=LARGEST) -> Markdown:
    """The ladder at one size: GFLOP/s, % of cuBLAS, % of FP32 peak, gain over the step before."""
    measured = {r.kernel: r for r in results() if (r.M, r.N, r.K) == size}
    rows = [measured[s.name] for s in registry.STEPS if s.name in measured]
    lines = [
        "| step | GFLOP/s | % of cuBLAS | % of FP32 peak | × previous step |",
        "|---|---:|---:|---:|---:|",
    ]
    previous = None
    for step in registry.STEPS:
        r = measured.get(step.name)
        if r is None:
            if step.name in NOT_YET_MEASURED:
                lines.append(f"| {step.name} | not yet measured | | | |")
            continue
        gain = f"{r.gflops / previous.gflops:.1f}×" if previous else ""
        if previous and registry.step(previous.kernel[:2]) is not _before(step):
            gain += f" (over {previous.kernel})"
        lines.append(
            f"| {r.kernel} | {r.gflops:.0f} | {r.pct_cublas:.1f}% | {r.pct_peak:.1f}% | {gain} |"
        )
        previous = r
    lines.append(f"| cuBLAS | {rows[0].cublas_gflops:.0f} | 100% | | |")
    names = [s.name for s in registry.STEPS]
    caption = f"\n\nAt {size[0]}×{size[1]}×{size[2]}. {provenance(rows)} {not_measured(names)}"
    return Markdown("\n".join(lines) + caption)


def _before(step: registry.Step) -> registry.Step | None:
    """The CUDA step before step on the ladder (None for step 01)."""
    index = registry.STEPS.index(step)
    return registry.STEPS[index - 1] if index else None


def _step_and_before(step_id: str) -> list[str]:
    step = registry.step(step_id)
    return [s.name for s in (_before(step), step) if s]


def beyond() -> Markdown:
    """The bonus kernels, step 08 and cuBLAS, measured in one run
    (book/data/beyond_*.csv)."""
    rows = []
    for path in sorted(DATA.glob("beyond_*.csv")):
        rows += bench.read_csv(path)
    print(bench.table(rows))
    first = rows[0]
    steps = " ".join(dict.fromkeys(r.kernel[:2] for r in rows))
    return Markdown(
        f"Measured by `python -m autograder bench {steps}` on an {first.gpu}, {first.date}, "
        f"CUDA {first.cuda}, CuPy {first.cupy}; cuBLAS is strict FP32 (TF32 off), timed in "
        'the same run (data: `book/data/beyond_*.csv`). For 10, the "% FP32 peak" passes '
        "100%: tensor cores are not FP32 lanes."
    )


def step_result(step_id: str) -> Markdown:
    """One step against the one before it and cuBLAS, at every measured size."""
    names = _step_and_before(step_id)
    rows = results()
    sizes = sorted({(r.M, r.N, r.K) for r in rows}, key=lambda s: s[0] * s[1] * s[2])
    cell = {(r.kernel, (r.M, r.N, r.K)): r for r in rows}
    lines = ["| size | " + " | ".join(names) + " | cuBLAS |", "|---|" + "---:|" * (len(names) + 1)]
    for size in sizes:
        shown = [cell.get((n, size)) for n in names]
        expected = [r for r, n in zip(shown, names) if n not in NOT_YET_MEASURED]
        if not expected or not all(expected):
            continue
        lines.append(
            f"| {size[0]}×{size[1]}×{size[2]} | "
            + " | ".join(f"{r.gflops:.0f} ({r.pct_cublas:.1f}%)" if r else "—" for r in shown)
            + f" | {expected[0].cublas_gflops:.0f} |"
        )
    text = "GFLOP/s (% of cuBLAS).\n\n" + "\n".join(lines) + f"\n\n{provenance(rows)}"
    return Markdown(f"{text} {not_measured(names)}".strip())


def warp_addresses(N: int = 777, K: int = 513):
    """Which bytes of A, B and C one warp touches at one k, for both thread mappings."""
    fig, axes = plt.subplots(2, 3, figsize=(10, 5), sharex=True)
    for row, walk in enumerate(("rows", "columns")):
        for ax, access in zip(axes[row], explorers.warp_accesses(walk, N, K), strict=True):
            ax.scatter(range(32), [o * 4 for o in access.offsets], s=10)
            ax.set_title(
                f"{access.matrix}, threads walk the {walk}: {access.segments} "
                f"transaction{'s' * (access.segments != 1)}",
                fontsize=9,
            )
    for ax in axes[1]:
        ax.set_xlabel("lane of the warp")
    for ax in axes[:, 0]:
        ax.set_ylabel("byte address")
    fig.suptitle(f"One warp of a 32×32 block at one step k (N = {N}, K = {K})")
    fig.tight_layout()
    plt.show()


def _fragment_reads(step: registry.Step, warp: int = 0) -> list[tuple[str, list[int]]]:
    """The float4 reads of As and Bs that each thread of one warp makes at one k, as
    (matrix, the 32 lanes' offsets in floats) per instruction: the index arithmetic of
    kernels/06 (thread tiles) and 07-08 (warp tiles) at the registry's parameters."""
    p = step.params
    BN, TM, TN = p["BN"], p["TM"], p["TN"]
    lanes = [warp * 32 + lane for lane in range(32)]
    if "WM" not in p:  # 06: thread t owns rows t / (BN/TN) * TM..., columns t % (BN/TN) * TN...
        rows = [[t // (BN // TN) * TM] for t in lanes]
        cols = [[t % (BN // TN) * TN] for t in lanes]
    else:  # 07, 08: the warp's corner, then the lane's place in each sub-tile
        WM, WN, WNITER = p["WM"], p["WN"], p["WNITER"]
        WMITER = WM * WN // (32 * TM * TN * WNITER)
        WSUBM, WSUBN = WM // WMITER, WN // WNITER
        corner_m, corner_n = warp // (BN // WN) * WM, warp % (BN // WN) * WN
        per_row = WSUBN // TN
        rows = [[corner_m + wm * WSUBM + t % 32 // per_row * TM for wm in range(WMITER)]
                for t in lanes]  # fmt: skip
        cols = [[corner_n + wn * WSUBN + t % 32 % per_row * TN for wn in range(WNITER)]
                for t in lanes]  # fmt: skip
    reads = []
    for matrix, starts, width in (("A", rows, TM), ("B", cols, TN)):
        for i in range(len(starts[0])):
            for j in range(0, width, 4):
                reads.append((matrix, [s[i] + j for s in starts]))
    return reads


def warp_shared_reads(step_ids=("06", "07")) -> Markdown:
    """What one warp reads from shared memory for one k, and a model of what it costs:
    a 128-bit load is served a quarter-warp (8 lanes) at a time, each quarter in as many
    passes as the most distinct 4-byte words it needs from one of the 32 banks."""
    lines = [
        "| step | floats of As and Bs the warp reads | FMAs of the warp | `float4` loads "
        "per thread | passes through the banks (model) |",
        "|---|---:|---:|---:|---:|",
    ]
    for step_id in step_ids:
        step = registry.step(step_id)
        reads = _fragment_reads(step)
        distinct = {(m, o + i) for m, offsets in reads for o in offsets for i in range(4)}
        passes = 0
        for _, offsets in reads:
            for quarter in range(4):
                words = {o + i for o in offsets[quarter * 8 : quarter * 8 + 8] for i in range(4)}
                banks = [sum(w % 32 == b for w in words) for b in range(32)]
                passes += max(banks)
        # Per k, one FMA per accumulator of each of the warp's threads.
        BM, BN = step.geometry.tile
        fmas = 32 * BM * BN // step.geometry.threads
        lines.append(f"| {step.name} | {len(distinct)} | {fmas} | {len(reads)} | {passes} |")
    return Markdown(
        "\n".join(lines) + "\n\nComputed from each kernel's index arithmetic at the "
        "registry's parameters, for warp 0 at one k, as this page was built. The passes "
        "are a model of the hardware, not a measurement."
    )


def tile_hierarchy(step_id: str = "07"):
    """The block tile, one warp's tile, and one thread's tiles inside it, to scale."""
    p = registry.step(step_id).params
    BM, BN, WM, WN, TM, TN = (p[k] for k in ("BM", "BN", "WM", "WN", "TM", "TN"))
    WNITER = p["WNITER"]
    WMITER = (WM * WN) // (32 * TM * TN * WNITER)
    WSUBM, WSUBN = WM // WMITER, WN // WNITER
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    ax.add_patch(plt.Rectangle((0, 0), BN, BM, fill=False, lw=2))
    for wr in range(BM // WM):
        for wc in range(BN // WN):
            ax.add_patch(
                plt.Rectangle(
                    (wc * WN, wr * WM), WN, WM, fill=False, lw=1, ls="--", color="tab:blue"
                )
            )
    for wm in range(WMITER):  # thread 0's tiles inside warp 0
        for wn in range(WNITER):
            ax.add_patch(plt.Rectangle((wn * WSUBN, wm * WSUBM), TN, TM, color="tab:red"))
    ax.set_xlim(-2, BN + 2)
    ax.set_ylim(BM + 2, -2)
    ax.set_aspect("equal")
    ax.set_xlabel("columns of the block tile (BN)")
    ax.set_ylabel("rows of the block tile (BM)")
    ax.set_title(
        f"block {BM}×{BN} (black), warps {WM}×{WN} (blue),\nthread 0's "
        f"{WMITER}×{WNITER} tiles of {TM}×{TN} (red)",
        fontsize=10,
    )
    plt.show()


def roofline(gpu_name: str = "H100 SXM"):
    """Each step at its block tile's arithmetic intensity, under the GPU's two ceilings."""
    spec = explorers.GPUS[gpu_name]
    peak = spec["fp32_tflops"] * 1e3
    bandwidth = spec["bandwidth_gbs"]
    measured = {r.kernel: r.gflops for r in results() if (r.M, r.N, r.K) == LARGEST}
    missing = not_measured([s.name for s in registry.STEPS])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = [2**e for e in range(-3, 8)]
    ax.plot(xs, [min(peak, bandwidth * x) for x in xs], color="black", label=f"{gpu_name} roof")
    for step in registry.STEPS:
        if step.name not in measured:
            continue
        # Steps 01-02 read A and B straight from global memory: 2 floats per FMA.
        intensity = (
            0.25 if step.id in ("01", "02") else explorers.tile_costs(step.id).flops_per_global_byte
        )
        ax.scatter([intensity], [measured[step.name]], zorder=3)
        ax.annotate(
            step.name,
            (intensity, measured[step.name]),
            fontsize=8,
            xytext=(4, -10),
            textcoords="offset points",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("FLOPs per byte requested from global memory (block tile)")
    ax.set_ylabel("GFLOP/s at 4096³")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    plt.show()
    return Markdown(missing) if missing else None


def step_plot(step_id: str):
    """GFLOP/s against size for a step, the step before it, and cuBLAS."""
    names = _step_and_before(step_id)
    rows = [r for r in results() if r.kernel in names]
    bench.figure(rows)
    plt.show()
    missing = not_measured(names)
    return Markdown(f"The plot leaves out what was not measured. {missing}") if missing else None


def exercise(step_id: str) -> Markdown:
    """The chapter's exercise: its notebook, with an Open in Colab badge made from the
    repository URL in _config.yml (its one home)."""
    from autograder.assignments import assignment
    from autograder.notebooks import colab_url

    a = assignment(step_id)
    colab = colab_url(a.name)
    return Markdown(
        f"**Exercise.** Notebook `exercises/{a.name}/{a.name}.ipynb`: write the part of the "
        f"kernel this chapter is about, check it on odd shapes, and see it graded. "
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab})"
    )


# ---- autotuning: book/data/tune_<step>_<gpu>.csv, written by `python -m autograder tune` ----

# The GPU whose searches the book shows (the file names' suffix, autograder.gpu.slug).
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


def _rule(reason: str) -> str:
    """The rule of stage 1 that a rejection's (first) reason names."""
    return next((rule for phrase, rule in _RULES if phrase in reason), reason)


def tune_dry_run(step_id: str = "08"):
    """Lines of `python -m autograder tune STEP --dry-run`, run as the page is built: its
    first line, two survivors, and the first rejection for each rule of stage 1."""
    from autograder import tune

    step = registry.step(step_id)
    trials = tune.candidates(step)
    lines = tune.dry_run_report(step, trials).splitlines()
    shown = lines[1:3]
    seen = set()
    for trial, line in zip(sorted(trials, key=lambda t: not t.alive), lines[1:]):
        if not trial.alive and _rule(trial.reason) not in seen:
            seen.add(_rule(trial.reason))
            shown.append(line)
    print(
        f"$ python -m autograder tune {step_id} --dry-run\n"
        + "\n".join([lines[0], *shown])
        + f"\n... (one line for each of the {len(trials)} configurations)"
    )


def tune_costs(step_id: str, changes: list[dict]) -> Markdown:
    """What stage 1 computes for the registry's parameters changed by each of `changes`
    ({} is the registry's own), and the registers the compiler gives each survivor for a
    T4 (sm_75), compiled as the page is built."""
    from autograder import compiler, tune

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
        "\n".join(lines) + f"\n\nComputed from `autograder/registry.py` as this "
        f"page was built; compiled with NVRTC {compiler.nvrtc_version()}."
    )


def tune_verdicts(step_id: str) -> Markdown:
    """How many configurations each stage of the committed search ruled out, and why."""
    rows = tune_rows(step_id)
    count = {}
    for r in rows:
        key = f"rejected: {_rule(r['reason'])}" if r["verdict"] == "rejected" else r["verdict"]
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
    fig, ax = plt.subplots(figsize=(8, 0.2 * len(rows) + 1.5), layout="constrained")
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
    ax.set_yticks(list(y), [_tune_label(step, r["params"]) for r in rows], fontsize=7)
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
    ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(
        f"{step.name}: the {len(rows)} timed configurations, "
        f"{rows[0]['M']}×{rows[0]['N']}×{rows[0]['K']} on an {rows[0]['gpu']}",
        fontsize=10,
    )
    plt.show()


def tune_waves(
    step_id: str, gpu_name: str = "H100 SXM", sizes=(LARGEST, (4095, 4097, 4093))
) -> Markdown:
    """Arithmetic, not a measurement: how many rounds of blocks the best configuration of the
    committed search and the registry's need at each size, with as many blocks per SM as
    autograder/hardware.py's occupancy allows (registers, shared memory, warps)."""
    from autograder import hardware

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


# ---- hardware limits: autograder/hardware.py ----


def hardware_limits() -> Markdown:
    """The per-architecture limits that the compiler's report, the tuner, the explorers and
    the SASS report all read."""
    from autograder import hardware

    archs = list(hardware.ARCHS.values())
    rows = [
        ("threads per block", lambda a: a.max_threads_per_block),
        ("resident blocks per SM", lambda a: a.max_blocks_per_sm),
        ("resident warps per SM", lambda a: a.max_warps_per_sm),
        ("32-bit registers per SM", lambda a: f"{a.registers_per_sm:,}"),
        ("registers per thread", lambda a: a.max_registers_per_thread),
        ("shared memory per SM", lambda a: f"{a.shared_per_sm // 1024} KB"),
        ("static shared memory per block", lambda a: f"{a.shared_per_block_static // 1024} KB"),
        ("shared memory per block (opt-in)", lambda a: f"{a.shared_per_block_optin // 1024} KB"),
    ]
    lines = [
        "| | " + " | ".join(f"{a.name} ({a.family})" for a in archs) + " |",
        "|---|" + "---:|" * len(archs),
    ]
    lines += [f"| {name} | " + " | ".join(str(f(a)) for a in archs) + " |" for name, f in rows]
    return Markdown("\n".join(lines))


# ---- the compiler's evidence: autograder/sass.py ----


def sass_mix(step_id: str, archs=("sm_75", "sm_90")) -> Markdown:
    """A step's main loop in machine code, counted as the page is built: each class of
    instruction per iteration, per k and per FFMA (LDS.128 per FFMA...), with registers,
    spills, shared memory and occupancy on a T4 and an H100. Fails the build, saying what
    to install, where nvdisasm is missing."""
    from autograder import sass

    return Markdown(sass.markdown(step_id, archs))


def sass_ladder(arch: str = "sm_90") -> Markdown:
    """Every CUDA step's main loop on one architecture, per value of k."""
    from autograder import sass

    return Markdown(sass.ladder_markdown(arch))
