"""The profiler's evidence (book/data/profile_*.csv, from Nsight Compute): a step's
counters beside the previous step's, what the model predicts against what the compiler made
and what was measured, and how full a small problem's grid keeps the GPU.
"""

from __future__ import annotations

import math

from IPython.display import Markdown

from autograder.ladder import registry

from .common import (
    LARGEST,
    _before,
    _kernel,
    _size,
    _size_key,
    _size_label,
    bench_row,
    for_experts,
    profile_row,
    profile_rows,
    profiled_earlier,
    provenance,
    results,
)
from .compiled import theoretical_occupancy
from .models import (
    blocks,
    dram_bytes,
    flops,
    measured_intensity,
    model_shared_floats,
    requested_intensity,
    shared_ceiling,
    sms,
    wavefronts_per_ffma,
)


def _allows(reads_per_ffma: float) -> str:
    cap = shared_ceiling(reads_per_ffma)
    if cap is None:
        return "no limit (no shared memory)"
    return f"{cap:.1%} of FP32 peak" if cap < 1 else f"no limit ({cap:.0%} of FP32 peak)"


# ---- the profiler's evidence, beside the previous step's ----


def _pct(x) -> str:
    return "" if x is None else f"{x:.0f}%" if x >= 10 else f"{x:.1f}%"


def _duration(us: float) -> str:
    return f"{us / 1e3:,.1f} ms" if us >= 1000 else f"{us:,.0f} µs"


# Each row: the key a chapter names it by (`main=`), its label, its cell. A key may
# name several rows that read as one (the bank conflicts are a share of the
# wavefronts above them; the three largest stall reasons).
_PROFILE_ROWS = (
    ("time", "time of the profiled launch", lambda s, z, p: _duration(p["duration_us"])),
    ("dram", "DRAM read + written", lambda s, z, p: f"{dram_bytes(s, z) / 1e6:,.0f} MB"),
    ("intensity", "FLOPs per DRAM byte", lambda s, z, p: f"{measured_intensity(s, z):,.0f}"),
    ("l1", "L1 hit rate, global loads", lambda s, z, p: _pct(p["l1_hit_pct"])),
    ("l2", "L2 hit rate, reads", lambda s, z, p: _pct(p["l2_hit_pct"])),
    (
        "wavefronts",
        "shared-memory load wavefronts per warp FFMA",
        lambda s, z, p: f"{wavefronts_per_ffma(s, z):.3g}" if p["shared_load_wavefronts"] else "—",
    ),
    (
        "wavefronts",
        "… of them bank conflicts",
        lambda s, z, p: (
            f"{p['shared_load_conflicts'] / p['shared_load_wavefronts']:.0%}"
            if p["shared_load_wavefronts"]
            else "—"
        ),
    ),
    (
        "store conflicts",
        "shared-memory store bank conflicts",
        lambda s, z, p: (
            f"{p['shared_store_conflicts'] / 1e6:,.1f} M" if p["shared_load_wavefronts"] else "—"
        ),
    ),
    (
        "occupancy",
        "occupancy: achieved / theoretical",
        lambda s, z, p: (
            f"{_pct(p['occupancy_achieved_pct'])} / {_pct(p['occupancy_theoretical_pct'])}"
        ),
    ),
    ("sm throughput", "SM throughput (% of peak)", lambda s, z, p: _pct(p["sm_throughput_pct"])),
    *(
        (
            "stalls",
            f"stall reason {i + 1} (cycles per issued instruction)",
            lambda s, z, p, i=i: f"`{p['stalls'][i][0]}` {p['stalls'][i][1]:.1f}"
            if len(p["stalls"]) > i
            else "",
        )
        for i in range(3)
    ),
)  # fmt: skip
PROFILE_KEYS = tuple(dict.fromkeys(key for key, _, _ in _PROFILE_ROWS))

# What a row's numbers mean, said wherever the row is shown.
_PROFILE_TERMS = {
    "wavefronts": "A wavefront is one pass of shared memory's 32 banks (128 bytes): an SM's "
    "shared memory serves one per clock, while the SM can issue 4 warp-wide FFMAs per clock.",
    "stalls": "A stall reason's cycles are averaged over every instruction the warps issued.",
}


def profile_table(columns, note: str = "", main=None) -> Markdown:
    """The profile of each (step, size) in columns, one column each, with where it was
    measured and the commands that measure it again. `main` names the rows (keys of
    PROFILE_KEYS) that the page's text argues with: the table shows those, and a box
    under it, closed, the others. Without `main`, every row is in the table."""
    unknown = [key for key in main or () if key not in PROFILE_KEYS]
    if unknown:
        raise ValueError(f"no profile row {unknown}: the rows are {', '.join(PROFILE_KEYS)}")
    profiles = [(s, z, profile_row(s, z)) for s, z in columns]
    rows = []
    for key, label, cell in _PROFILE_ROWS:
        cells = [cell(s, z, p) for s, z, p in profiles]
        if all(c in ("", "—") for c in cells):
            continue  # a counter none of these kernels can have (shared memory in 01, 02)
        rows.append((key, f"| {label} | " + " | ".join(cells) + " |"))
    head = "| | " + " | ".join(f"{_kernel(s)[:2]} at {_size_label(z)}" for s, z, _ in profiles)
    rule = "|---|" + "---:|" * len(profiles)

    def table(keys) -> str:
        return "\n".join([head + " |", rule, *(line for key, line in rows if key in keys)])

    def terms(keys) -> str:
        return "".join(f" {_PROFILE_TERMS[k]}" for k in keys if k in _PROFILE_TERMS)

    present = list(dict.fromkeys(key for key, _ in rows))
    shown = [k for k in present if main is None or k in main]
    more = [k for k in present if k not in shown]
    by_size = {}
    for s, z, _ in profiles:
        by_size.setdefault(_size_key(z), []).append(_kernel(s)[:2])
    commands = "; ".join(
        f"`python -m autograder profile {' '.join(dict.fromkeys(ids))} --size "
        f"{key.split('x')[0] if len(set(key.split('x'))) == 1 else key}`"
        for key, ids in by_size.items()
    )
    first = profiles[0][2]
    earlier = {_kernel(s): profiled_earlier(p) for s, _, p in profiles if p["earlier"]}
    parts = [table(shown)]
    if more:
        body = f"{table(more)}\n\n{terms(more)}".rstrip()
        parts.append(for_experts("More counters from the same profile", body).data)
    parts.append(
        f"Nsight Compute, one launch of each kernel after a warm-up, clocks left as they were, "
        f"on an {first['gpu']}, {first['date']} ({first['versions']}); {commands} measures it "
        f"again (data: `book/data/{first['file']}`)."
        + "".join(f" {said}" for said in earlier.values())
        + f"{terms(shown)} {note}".rstrip()
    )
    return Markdown("\n\n".join(parts))


def profile_compare(step_id: str, sizes=None, main=None) -> Markdown:
    """A step's profile beside the step before it, at 4096³ and at every other size
    where both were profiled; `main` as in profile_table."""
    step = registry.step(step_id)
    before = _before(step)
    rows = profile_rows()
    sizes = sizes or sorted(
        {z for (k, z) in rows if k == step.name}, key=lambda z: -math.prod(_size(z))
    )
    columns = []
    for z in sizes:
        if before is not None and (before.name, _size_key(z)) in rows:
            columns.append((before.id, z))
        columns.append((step.id, z))
    return profile_table(columns, main=main)


# ---- prediction, then measurement ----


def prediction(step_id: str, size=LARGEST) -> Markdown:
    """What the chapter's model predicts for a step, what the compiler made of it, and
    what the profiler and the bench measured, at one size."""
    from autograder.measure import sass

    step = registry.step(step_id)
    ev = sass.evidence(step, "sm_90")
    floats = model_shared_floats(step)
    requested = flops(size) / requested_intensity(step)
    lds = ev.per_math(sass.SHARED_LOADS)
    ldg = ev.per_math(sass.GLOBAL_LOADS)
    p = profile_row(step, size)
    r = bench_row(step, size)
    w = wavefronts_per_ffma(step, size) if p["shared_load_wavefronts"] else 0.0
    occ = ev.occupancy
    lines = [
        "| | the model | the compiler (SASS, sm_90) | measured (H100) |",
        "|---|---|---|---|",
        (
            f"| global memory | {requested / 1e9:,.1f} GB requested | {ldg:.3g} global loads "
            f"per FFMA | {dram_bytes(step, size) / 1e9:,.2f} GB from DRAM, L2 hit "
            f"{_pct(p['l2_hit_pct'])} |"
        ),
        (
            f"| shared-memory reads | {floats:.3g} floats per FMA | {lds:.3g} load "
            f"instructions per FFMA | {w:.3g} wavefronts per warp FFMA |"
            if floats
            else "| shared-memory reads | none | none | none |"
        ),
        (
            f"| what shared memory allows | {_allows(floats)} | | {_allows(w)}; reached: "
            f"{r.pct_peak:.1f}% of FP32 peak |"
        ),
        (
            f"| occupancy | | {occ.warps}/{occ.max_warps} warps ({occ.fraction:.0%}), limited "
            f"by {' and '.join(occ.limited_by)} | {_pct(p['occupancy_achieved_pct'])} "
            f"achieved of {_pct(p['occupancy_theoretical_pct'])} |"
        ),
    ]
    return Markdown(
        "\n".join(lines) + f"\n\nAt {_size_label(size)}. *The model*: the chapter's "
        "arithmetic, from the registry's tile parameters (`book/figures/models.py`): bytes "
        "the block tile requests from global memory, floats each thread reads from shared "
        "memory per FMA, and what that allows if shared memory serves 32 floats per clock "
        "against 128 FMAs. *The compiler*: the main loop's instructions, compiled with "
        f"{ev.compiler} as this page was built. *Measured*: Nsight Compute and the bench "
        f"({p['gpu']}, {p['date']}); *what shared memory allows* there uses the measured "
        "wavefronts (one per clock, against 4 warp FFMAs)."
    )


def grid_fill(step_ids, sizes, gpu_name: str = "H100 SXM") -> Markdown:
    """Blocks per grid against the GPU's SMs, with the theoretical and achieved
    occupancy where profiled: how much of the GPU a small problem can keep busy."""
    n = sms(gpu_name)
    lines = [
        (
            "| step | block tile | size | blocks | SMs with a block | blocks per SM (at most) "
            "| occupancy: theoretical, achieved | GFLOP/s |"
        ),
        "|---|---|---|---:|---:|---:|---|---:|",
    ]
    for step_id in step_ids:
        step = registry.step(step_id)
        occ = theoretical_occupancy(step)
        for z in sizes:
            count = blocks(step, z)
            try:
                p = profile_row(step, z)
                achieved = _pct(p["occupancy_achieved_pct"])
            except KeyError:
                achieved = "not profiled"
            lines.append(
                f"| {step.name} | {step.geometry.tile[0]}×{step.geometry.tile[1]} | "
                f"{_size_label(z)} | {count} | {min(count, n)} of {n} | {occ.blocks} | "
                f"{occ.fraction:.0%}, {achieved} | {bench_row(step, z).gflops:,.0f} |"
            )
    return Markdown(
        "\n".join(lines) + f"\n\nBlocks: the grid the registry launches. SMs: an {gpu_name} "
        f"has {n}. Theoretical occupancy from this build's compile "
        "(`autograder/ladder/hardware.py`); "
        f"achieved from Nsight Compute, averaged over the cycles an SM was active. "
        f"{provenance(results())}"
    )
