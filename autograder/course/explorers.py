"""Interactive explorers for the exercise notebooks (ipywidgets 7 and 8).

Each explorer is a pure function that computes what it shows (tested without
a notebook) and a small widget around it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..ladder import hardware, registry
from ..run import by_shape

# Since Pascal, global loads are served in 32-byte sectors: a warp reading 32
# consecutive floats needs 4, one reading 32 scattered floats needs 32.
SECTOR_BYTES = 32
# NVIDIA's datasheet figures, for orientation: autograder/ladder/hardware.py's table.
GPUS = hardware.GPUS


@dataclass(frozen=True)
class WarpAccess:
    matrix: str
    offsets: tuple[int, ...]  # element offsets the 32 lanes touch, lane by lane
    sectors: int  # distinct 32-byte sectors the warp's request needs


def warp_accesses(threads_walk: str, N: int, K: int, warp: int = 0, k: int = 0):
    """The elements one warp of a 32x32 block touches in A, B and C at step k of
    the naive kernel, when threadIdx.x walks the 'rows' or the 'columns' of C."""
    accesses = []
    lanes = range(32)
    # Warp w of the block holds threads 32w ... 32w + 31: threadIdx.y = w.
    if threads_walk == "rows":  # step 01: row = threadIdx.x, col = threadIdx.y
        rows, cols = list(lanes), [warp] * 32
    elif threads_walk == "columns":  # step 02: col = threadIdx.x, row = threadIdx.y
        rows, cols = [warp] * 32, list(lanes)
    else:
        raise ValueError("threads_walk is 'rows' or 'columns'")
    for matrix, offsets in (
        ("A", [r * K + k for r in rows]),
        ("B", [k * N + c for c in cols]),
        ("C", [r * N + c for r, c in zip(rows, cols, strict=True)]),
    ):
        sectors = len({o * 4 // SECTOR_BYTES for o in offsets})
        accesses.append(WarpAccess(matrix, tuple(offsets), sectors))
    return accesses


def sector_story(access: WarpAccess, row_floats: int) -> str:
    """Why a warp's access needs its sectors, in a sentence. row_floats: the length
    of a row of the access's matrix (N for B and C, K for A)."""
    first, *_ = access.offsets
    if len(set(access.offsets)) == 1:
        return f"{access.matrix}: every lane reads the same float, one sector for the warp"
    if list(access.offsets) != list(range(first, first + 32)):
        return (
            f"{access.matrix}: lanes {4 * row_floats} bytes apart (a row of {row_floats} "
            f"floats), so each float needs a sector of its own: {access.sectors}"
        )
    start = 4 * first % SECTOR_BYTES
    if start == 0:
        return f"{access.matrix}: 32 floats side by side, 128 bytes in {access.sectors} sectors"
    return (
        f"{access.matrix}: 32 floats side by side, but they start {start} bytes into a "
        f"sector, so their 128 bytes straddle {access.sectors} sectors, not 4: a row of "
        f"{row_floats} floats is {4 * row_floats} bytes, not a multiple of 32, so most rows "
        "start inside a sector"
    )


@dataclass(frozen=True)
class TileCosts:
    threads: int
    shared_bytes: int
    accumulators: int  # registers for C per thread, the largest part of the register budget
    flops_per_global_byte: float  # arithmetic intensity of the block tile
    shared_loads_per_fma: float
    # Why these parameters cannot work: first the kernel's own rules (the registry's
    # Tuning.rules, its static_asserts), then the limits of the smallest GPU the
    # course targets (autograder/ladder/hardware.py); then what would make it slow.
    problems: tuple[str, ...]
    # The registry's rules and the hardware's limits reject it: it does not compile,
    # or cannot be launched. (problems may also hold warnings about speed.)
    rejected: bool = False


def _shared_bytes(step: registry.Step, p: dict) -> int:
    """Shared memory per block: the registry's formula where the step is tuned; the
    launch's dynamic shared memory, or two BS x BS tiles, otherwise."""
    if step.tuning:
        return step.tuning.shared_bytes(p)
    if step.geometry.shared_bytes:
        return step.geometry.shared_bytes
    if "BS" in p:
        return 2 * p["BS"] * p["BS"] * 4
    return 0


def shared_floats_per_fma(p: dict) -> float:
    """The course's model: floats each thread reads from shared memory per FMA. Per k
    a thread reads TM values of A and TN of B for each of its thread tiles (WMITER x
    WNITER of them in a warp tile) and does TM x TN FMAs with each; one element per
    thread (step 03) reads 2 floats per FMA; steps without tiles read none."""
    if not p:
        return 0.0
    TM, TN = p.get("TM", 1), p.get("TN", 1)
    a_tiles, b_tiles = 1, p.get("WNITER", 1)
    if "WM" in p:
        a_tiles = max(1, registry.warp_m_iterations(p))  # 0: a set the rules reject
    return (a_tiles * TM + b_tiles * TN) / (a_tiles * b_tiles * TM * TN)


def tile_costs(step_id: str, **params: int) -> TileCosts:
    """What a choice of tile parameters costs for a step of the ladder, and whether the
    step's kernel accepts it at all: the registry's rules decide, as the tuner's do."""
    step = registry.step(step_id).with_params(**params)
    p = {**step.params}
    bad = [f"{k} = {v} must be a positive whole number" for k, v in p.items() if v < 1]
    if bad:
        return TileCosts(0, 0, 0, 0.0, 0.0, tuple(bad), rejected=True)
    rules = list(step.tuning.rules(p)) if step.tuning else []
    try:
        geometry = step.geometry
    except (ValueError, ZeroDivisionError) as e:
        return TileCosts(0, 0, 0, 0.0, 0.0, (*rules, f"invalid: {e}"), rejected=True)
    threads = geometry.threads
    BM, BN = geometry.tile
    BK = p.get("BK", p.get("BS", 32))
    shared = _shared_bytes(step, p)
    floor = step.tuning.registers(p) if step.tuning else None
    limits = hardware.launch_problems(
        hardware.SMALLEST,
        threads,
        floor,
        static_shared=shared - geometry.shared_bytes,
        dynamic_shared=geometry.shared_bytes,
        registers_floor=True,
    )
    accumulators = BM * BN // max(threads, 1)
    loads_per_fma = shared_floats_per_fma(p)
    intensity = 2 * BM * BN * BK / ((BM + BN) * BK * 4)
    warnings = []
    if accumulators > 128:
        warnings.append(f"{accumulators} accumulators per thread: expect register spills")
    return TileCosts(
        threads,
        shared,
        accumulators,
        round(intensity, 2),
        round(loads_per_fma, 3),
        tuple(rules + limits + warnings),
        rejected=bool(rules or limits),
    )


def floors(M: int, N: int, K: int, gpu_name: str) -> dict[str, float]:
    """The two lower bounds on an SGEMM's time on a GPU, in milliseconds."""
    spec = GPUS[gpu_name]
    flops = 2 * M * N * K
    bytes_moved = 4 * (M * K + K * N + 2 * M * N)  # read A, B, C once; write C once
    compute_ms = flops / (spec["fp32_tflops"] * 1e12) * 1e3
    memory_ms = bytes_moved / (spec["bandwidth_gbs"] * 1e9) * 1e3
    return {
        "flops": flops,
        "bytes": bytes_moved,
        "intensity": flops / bytes_moved,
        "compute_ms": compute_ms,
        "memory_ms": memory_ms,
        "bound": "compute" if compute_ms >= memory_ms else "memory",
    }


@dataclass(frozen=True)
class PlanCosts:
    """What a step-09 plan costs on a GPU: how its blocks fill the SMs, and split-K's traffic."""

    plan: by_shape.Plan
    blocks: int  # tiles times layers
    waves: float  # blocks per SM, as if an SM ran one block at a time
    busy: float  # the share of the SMs' time busy over all waves (1: whole waves)
    product_bytes: int  # reading A and B once and writing C once: the least any plan moves
    split_bytes: int  # what the layers add: S matrices of M x N written, then read back


def plan_costs(M: int, N: int, K: int, plan: by_shape.Plan, sms: int) -> PlanCosts:
    blocks = by_shape.tile_count(M, N, plan.tiles) * plan.splits
    waves = blocks / sms
    split = 2 * 4 * plan.splits * M * N if plan.splits > 1 else 0
    return PlanCosts(
        plan,
        blocks,
        waves,
        waves / math.ceil(waves),
        4 * (M * K + K * N + M * N),
        split,
    )


# Widgets. Imported lazily: the functions above must work without Jupyter.


# A control's label shows whole at a notebook's default width.
LABEL = {"description_width": "initial"}


def warp_explorer(threads_walk: str = "rows"):
    import ipywidgets as w
    from IPython.display import Image, display
    from matplotlib.figure import Figure

    from . import pictures

    def show(threads_walk, N, K, warp):
        accesses = warp_accesses(threads_walk, N, K, warp)
        # Not pyplot's: this runs on a widget's thread (pictures.picture says why).
        fig = Figure(figsize=(11, 2.8))
        axes = fig.subplots(1, 3)
        for ax, access in zip(axes, accesses, strict=True):
            first = access.offsets[0]
            ax.scatter(range(32), [4 * (o - first) for o in access.offsets], s=12)
            if len(set(access.offsets)) == 1:  # one address: no range to scale to
                ax.set_ylim(-SECTOR_BYTES, SECTOR_BYTES)
            ax.set_title(
                f"{access.matrix}: {access.sectors} sector{'s' * (access.sectors != 1)} of 32 B"
            )
            ax.set_xlabel("lane (threadIdx.x)")
        axes[0].set_ylabel("bytes after lane 0's")
        fig.suptitle(f"one warp, threadIdx.x walking the {threads_walk} of C")
        fig.tight_layout()
        display(Image(pictures.png(fig)))
        for access in accesses:
            print(sector_story(access, K if access.matrix == "A" else N))

    return w.interactive(
        show,
        threads_walk=w.Dropdown(
            options=["rows", "columns"], value=threads_walk, description="threads walk", style=LABEL
        ),
        N=w.IntSlider(value=777, min=32, max=4096, step=1, description="N"),
        K=w.IntSlider(value=513, min=1, max=4096, step=1, description="K"),
        warp=w.IntSlider(value=0, min=0, max=31, description="warp"),
    )


def compiled(step_id: str, mine: Path, **params) -> list[str]:
    """What the compile button says: the learner's kernel (mine: the file the notebook's
    kernel cell writes) and the course's reference, each compiled for a T4 (or for the
    one GPU the step's kernel is built for, sm_90a) at these parameters, with their
    registers and spills, or why it did not compile."""
    from ..run import compiler

    step = registry.step(step_id).with_params(**params)
    arch = step.target or hardware.SMALLEST  # a T4, unless the kernel is for one GPU alone
    if not step.target and tile_costs(step_id, **params).rejected:
        return ["not compiled: these parameters are rejected (see the problems above)"]
    kernels = [("the course's reference kernel", step.source(), step.path.name)]
    said = []
    if mine.exists():
        kernels.insert(0, (f"your kernel ({mine.name})", mine.read_text(), mine.name))
    else:
        said.append(f"no {mine.name} here yet (its cell above writes it): the reference only")
    for who, source, filename in kernels:
        try:
            result = compiler.compile_for_arch(source, [step.name_expression], arch, filename)
        except compiler.CompileError as e:  # a static_assert names the broken constraint
            said.append(f"{who} did not compile: {e.errors.strip().splitlines()[0]}")
            continue
        resources = result.resources[step.name_expression]
        said.append(f"{who}: {resources}")
        said += [f"  problem: {p}" for p in resources.problems(step.geometry.threads)]
    return said


def tile_explorer(step_id: str):
    import ipywidgets as w

    step = registry.step(step_id)
    sliders = {
        name: w.Dropdown(
            options=sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, value}),
            value=value,
            description=name,
            style=LABEL,
        )
        for name, value in step.params.items()
    }
    out = w.Output()

    def show(**params):
        from IPython.display import display

        from . import pictures

        costs = tile_costs(step_id, **params)
        out.clear_output()
        with out:
            print(
                f"threads per block: {costs.threads}\nshared memory: {costs.shared_bytes} bytes"
                f"\naccumulators per thread: {costs.accumulators}\n"
                f"FLOPs per byte loaded from global memory: {costs.flops_per_global_byte}\n"
                f"shared-memory loads per FMA: {costs.shared_loads_per_fma}"
            )
            for problem in costs.problems:
                print("problem:", problem)
            if costs.rejected:
                print("rejected: the kernel's rules or a T4's limits say no (see above)")
            else:  # the book's picture of the step, at these parameters
                display(pictures.picture(step.with_params(**params)))

    shown = w.interactive(show, **sliders)
    return w.VBox([shown, _compile_button(step, sliders, out, "a T4 (sm_75)"), out])


def _compile_button(step: registry.Step, sliders: dict, out, arch: str):
    """The button that compiles the learner's kernel (the file its notebook's kernel
    cell writes) and the reference at the sliders' parameters, for `arch` in words,
    and prints what `compiled` says into out."""
    import ipywidgets as w

    button = w.Button(
        description=f"compile your kernel and the reference for {arch}",
        layout=w.Layout(width="auto"),
    )

    def compile_now(_):
        chosen = {k: s.value for k, s in sliders.items()}
        with out:
            print("\n".join(compiled(step.id, Path(f"{step.name}.cu"), **chosen)))

    button.on_click(compile_now)
    return button


def pipeline_costs(step_id: str, **params: int) -> list[str]:
    """What a choice of BN and STAGES means for a Hopper step (12, 13): its warpgroups,
    its shared memory against what a block of an H100 may have, and its slices in flight."""
    step = registry.step(step_id).with_params(**params)
    shared, most = step.geometry.shared_bytes, hardware.arch("sm_90").shared_per_block_optin
    consumers = step.params["BN"] // 64
    return [
        f"warpgroups: 1 producer and {consumers} consumer{'s' * (consumers > 1)} "
        f"({step.geometry.threads} threads)",
        f"shared memory: {shared} bytes of the {most} a block may have on an H100"
        + ("" if shared <= most else ": too much, it cannot be launched"),
        f"slices in flight while one is multiplied: {step.params['STAGES'] - 1}",
    ]


def pipeline_explorer(step_id: str):
    """Steps 12 and 13: the pipeline's timeline at a choice of BN and STAGES, and the
    learner's kernel compiled for sm_90a beside the reference (no GPU needed)."""
    import ipywidgets as w

    step = registry.step(step_id)
    choices = {"BN": [64, 128, 192], "STAGES": [1, 2, 3, 4, 5, 6]}
    sliders = {
        name: w.Dropdown(options=options, value=step.params[name], description=name, style=LABEL)
        for name, options in choices.items()
    }
    out = w.Output()

    def show(**params):
        from IPython.display import display

        from . import pictures

        out.clear_output()
        with out:
            print("\n".join(pipeline_costs(step_id, **params)))
            if params["STAGES"] >= 2:
                display(pictures.timeline(step.with_params(**params)))
            else:
                print("one buffer: the kernel's static_assert asks for two, one to multiply and "
                      "one arriving")  # fmt: skip

    button = _compile_button(step, sliders, out, step.target)
    return w.VBox([w.interactive(show, **sliders), button, out])


def roofline_explorer():
    import ipywidgets as w

    def show(M, N, K, gpu_name):
        f = floors(M, N, K, gpu_name)
        print(
            f"{f['flops'] / 1e9:.2f} GFLOP, {f['bytes'] / 1e6:.1f} MB at least, "
            f"{f['intensity']:.1f} FLOP per byte\n"
            f"no faster than {f['compute_ms']:.3f} ms (arithmetic) and "
            f"{f['memory_ms']:.3f} ms (memory): {f['bound']}-bound on the {gpu_name}"
        )

    return w.interactive(show, **_shape_and_gpu(w, 1024, 1024, 1024))


def _shape_and_gpu(w, M: int, N: int, K: int, max_K: int = 8192) -> dict:
    """Sliders for M, N and K (starting at these) and a menu of GPUs."""
    size = dict(min=1, max=8192, step=1)
    return dict(
        M=w.IntSlider(value=M, **size),
        N=w.IntSlider(value=N, **size),
        K=w.IntSlider(value=K, **{**size, "max": max_K}),
        gpu_name=w.Dropdown(options=list(GPUS), description="GPU"),
    )


def dispatch_explorer():
    """Step 09: what the dispatcher chooses for a shape, and what each plan costs."""
    import ipywidgets as w

    def show(M, N, K, gpu_name, splits):
        sms = GPUS[gpu_name]["sms"]
        chosen = by_shape.rule_of_thumb(M, N, K, sms)
        print(f"rule of thumb on the {gpu_name} ({sms} SMs): {chosen}")
        print(f"each tile shape in {splits} layer{'s' * (splits > 1)} of K:")
        print(f"{'tiles':<11}{'blocks':>7}{'waves':>7}{'SMs busy':>9}{'traffic':>9}")
        for tiles in by_shape.CHOICES:
            c = plan_costs(M, N, K, by_shape.Plan(tiles, splits), sms)
            extra = c.split_bytes / c.product_bytes
            print(f"{tiles:<11}{c.blocks:>7}{c.waves:>7.2f}{c.busy:>9.0%}{f'+{extra:.0%}':>9}")
        print("traffic: what split-K adds to the least a product moves (A, B, C once)")

    return w.interactive(
        show,
        **_shape_and_gpu(w, 512, 512, 8192, max_K=65536),
        splits=w.IntSlider(value=1, min=1, max=by_shape.MAX_SPLITS, description="layers of K"),
    )


# Shown only where Jupyter's widget front end failed to draw the explorer beside it: the
# front end then puts ipywidgets' error view in the output (seen in JupyterLab 4.6 with a
# kernel's ipywidgets 7). Where that never happens, or where each output is a page of its
# own (Colab, whose front end matches its ipywidgets), the sentence stays hidden.
_FRONT_END_HELP = """<style>
.sgemm-widgets-help {{ display: none; }}
:has(.jupyter-widgets-error-widget) .sgemm-widgets-help {{ display: block; }}
</style>
<p class="sgemm-widgets-help"><b>The explorer above could not be drawn:</b> {why}</p>"""


def front_end_help(ipywidgets_version: str) -> str:
    """The HTML shown below an explorer that says, only when Jupyter's widget front end
    cannot draw it, what to do: the front end and the kernel's ipywidgets (of this
    version) speak different versions of the widget protocol."""
    if ipywidgets_version.startswith("7."):
        why = (
            f"this Jupyter draws widgets for ipywidgets 8, and this kernel has ipywidgets "
            f'{ipywidgets_version}. Run <code>%pip install -q "ipywidgets>=8"</code> in a '
            "cell, restart the kernel (Kernel &gt; Restart) and run the notebook again."
        )
    else:
        why = (
            f"this Jupyter draws widgets for an older ipywidgets than this kernel's "
            f'{ipywidgets_version}. Run <code>pip install "ipywidgets>=8"</code> where '
            "Jupyter itself is installed, restart Jupyter and reload this page."
        )
    return _FRONT_END_HELP.format(why=why)


def explore(assignment: str) -> None:
    """What a notebook's explore cell runs: the explorer, and below it the sentence a
    learner needs if their Jupyter cannot draw it."""
    import ipywidgets
    from IPython.display import HTML, display

    display(explorer_for(assignment), HTML(front_end_help(ipywidgets.__version__)))


def explorer_for(assignment: str):
    """The explorer a notebook shows, by its assignment name."""
    step = registry.step(assignment[:2])
    if not step.is_cuda:  # step 00: how far the CPU is from the GPU's floors
        return roofline_explorer()
    if step.contract == "reduce":  # step 09: the dispatcher's choices
        return dispatch_explorer()
    if not step.params:  # steps 01 and 02: one thread per element, no tiles
        return warp_explorer(step.geometry.x_walks)  # the layout its notebook teaches
    if step.contract == "tma":  # steps 12 and 13: Hopper's pipeline
        return pipeline_explorer(step.id)
    return tile_explorer(step.id)
