"""What the compiler made of a kernel, compiled as the page is built: its main loop's
instruction mix in SASS, its registers and occupancy, what ptxas says of other parameters,
and the hardware limits these are held against.
"""

from __future__ import annotations

from IPython.display import Markdown

from autograder.ladder import registry

from .common import (
    _kernel,
    glue,
)

# ---- hardware limits: autograder/ladder/hardware.py ----


def hardware_limits() -> Markdown:
    """The per-architecture limits that the compiler's report, the tuner, the explorers and
    the SASS report all read."""
    from autograder.ladder import hardware

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


# ---- the compiler's evidence: autograder/measure/sass.py ----


def sass_mix(step_id: str, archs=("sm_75", "sm_90")) -> Markdown:
    """A step's main loop in machine code, counted as the page is built: each class of
    instruction per iteration, per k and per FFMA (LDS.128 per FFMA...), with registers,
    spills, shared memory and occupancy on a T4 and an H100. Fails the build, saying what
    to install, where nvdisasm is missing."""
    from autograder.measure import sass

    return Markdown(sass.markdown(step_id, archs))


def sass_ladder(arch: str = "sm_90") -> Markdown:
    """Every CUDA step's main loop on one architecture, per value of k."""
    from autograder.measure import sass

    return Markdown(sass.ladder_markdown(arch))


def sass_per(step, kinds, per: str = "k", arch: str = "sm_90") -> float:
    """Instructions of these classes in the step's main loop per value of k (per="k") or
    per FFMA (per="FFMA"), from its SASS compiled as the page is built."""
    from autograder.measure import sass

    e = sass.evidence(registry.step(_kernel(step)), arch)
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if per == "k":
        return sum(e.per_k(k) for k in kinds)
    return e.per_math(kinds)


def theoretical_occupancy(step, arch: str = "sm_90"):
    """hardware.Occupancy of the step's kernel as this build compiles it."""
    from autograder.measure import sass

    return sass.evidence(registry.step(_kernel(step)), arch).occupancy


def glue_occupancy(prefix: str, step, arch: str = "sm_90") -> None:
    """Glue a step's theoretical occupancy as this build compiles it: {prefix}_regs,
    _blocks, _threads, _warps, _max_warps and _pct."""
    occ = theoretical_occupancy(step, arch)
    glue(**{
        f"{prefix}_regs": occ.registers, f"{prefix}_blocks": occ.blocks,
        f"{prefix}_threads": occ.threads, f"{prefix}_warps": occ.warps,
        f"{prefix}_max_warps": occ.max_warps, f"{prefix}_pct": 100 * occ.fraction,
    })  # fmt: skip


def loop_versions(versions) -> Markdown:
    """Main loops side by side: for each (label, step id, parameter changes, measured row or
    None), the instructions per k of its SASS (sm_90, compiled as the page is built), its
    registers, and what was measured at 4096³ with where."""
    from autograder.measure import sass

    kinds = ("FFMA", "LDS.128", "LDG", "LDG.128", "STS", "STS.128", "BAR", "other")
    lines = [
        "| kernel | BK | " + " | ".join(f"{k} per k" for k in kinds)
        + " | registers | GFLOP/s at 4096³ |",
        "|---|---:|" + "---:|" * len(kinds) + "---:|---:|",
    ]  # fmt: skip
    for label, step_id, change, measured in versions:
        step = registry.step(step_id).with_params(**change)
        e = sass.evidence(step, "sm_90")
        cells = " | ".join(
            (f"{e.per_k(k):.3g}" + ("\\*" if e.loop.skippable[k] else ""))
            if e.loop.counts[k]
            else ""
            for k in kinds
        )  # fmt: skip
        lines.append(
            f"| {label} | {step.params['BK']} | {cells} | {e.resources.registers} | {measured} |"
        )
    return Markdown(
        "\n".join(lines) + "\n\nInstructions per value of k in each main loop, compiled with "
        f"{sass.evidence(registry.step(versions[0][1]), 'sm_90').compiler} for sm_90 as this "
        "page was built. \\* Some of these sit behind a branch (the scalar fallback of the "
        "float4 loads) and do not run where the rows are aligned, as at 4096³."
    )


def compile_report(step_id: str, changes: list[dict], arch: str = "sm_80") -> None:
    """Compile the step's kernel with each change of its parameters with NVRTC for arch,
    as the page is built, and print what ptxas reports: registers and shared memory, or
    why it refused."""
    from autograder.run import compiler

    for change in changes:
        step = registry.step(step_id).with_params(**change)
        try:
            r = compiler.compile_for_arch(
                step.source(), [step.name_expression], arch, step.path.name
            ).resources[step.name_expression]
            said = f"{r.registers} registers, {r.shared_bytes:,} bytes of static shared memory"
        except Exception as e:  # noqa: BLE001 -- whatever failed, its message says why
            import re

            errors = [line.strip() for line in str(e).splitlines() if "error" in line]
            said = "does not compile: " + (errors[-1] if errors else str(e).splitlines()[0])
            m = re.search(r"too much shared data \((0x[0-9a-f]+) bytes, (0x[0-9a-f]+) max\)", said)
            if m:
                used, most = (int(x, 16) for x in m.groups())
                said = (f"does not compile: ptxas says it uses too much shared data, "
                        f"{used:,} bytes where {most:,} is the most")  # fmt: skip
        print(f"{step.name_expression} on {arch}: {said}")
    print(f"(NVRTC {compiler.nvrtc_version()}; a block may declare at most 48 KB = 49,152 "
          "bytes of static shared memory)")  # fmt: skip
