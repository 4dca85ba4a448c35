"""What each trick of a step is worth: its kernel with one trick taken out at a
time, timed beside the whole kernel and cuBLAS (`bench --ablation [STEP]`): the
last FP32 step's (08), and the Hopper steps' (12 and 13).

A variant is the kernel's own source with substitutions, each of which must
apply exactly once (as the planted bugs of tests/planted.py do), so that a
change to the kernel cannot leave a variant that silently takes nothing out.
Every variant is still a right kernel: the tests check each one, on the CPU
where it runs there, else on a GPU that runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..ladder import registry
from ..run.kernel import KernelSpec, NotOnce, substituted

# The step `bench --ablation` measures unless told: the last FP32 step of the ladder.
STEP = "08"
SIZES = ("4096", "4095x4097x4093")


@dataclass(frozen=True)
class Variant:
    trick: str  # what the variant takes out, in words
    substitutions: tuple[tuple[str, str], ...] = ()
    params: Mapping[str, int] = field(default_factory=dict)  # changed template parameters
    step: str = STEP  # whose kernel it changes
    # Whether the variant reads C where beta = 0, which its step does not: the
    # checker then gives it a C it may read (checker.c_where_beta_is_0).
    reads_c: bool = False

    @property
    def label(self) -> str:
        return f"{self.step} without {self.trick}"


VARIANTS = (
    Variant(
        "the next slice's loads spread over the slice (all issued at its first k)",
        (
            (
                "if (next != NONE && k == p * BK / LOADS) {\n"
                "          if (p > 0) stash(buf ^ 1, p - 1, next);",
                "if (next != NONE && k == 0) {",
            ),
            (
                "stash(buf ^ 1, LOADS - 1, next);",
                "for (int p = 0; p < LOADS; ++p) stash(buf ^ 1, p, next);",
            ),
        ),
    ),
    Variant(
        "the serpentine order of the FMAs",
        (("const int m = n % 2 ? WMITER * TM - 1 - i : i;", "const int m = i;"),),
    ),
    Variant(
        "bounds-free loops for blocks inside the matrices",
        (
            (
                "const bool interior = blockRow + BM <= M && blockCol + BN <= N;",
                "const bool interior = false;",
            ),
        ),
    ),
    # Its __launch_bounds__ and BK = 16 have no variant at these tiles: without
    # the bounds, a block of 512 threads at more than 128 registers each cannot
    # launch, and with BK = 8 its 512 threads cannot share a slice evenly.
    Variant("256x128 block tiles (128x128: two blocks of 256 threads per SM)", params={"BM": 128}),
    # Step 12 (kernels/12_wgmma_tf32.cu): Hopper's units and the choices around them.
    Variant(
        "TMA (every slice copied float by float with cp.async)",
        (
            (
                "const bool tmaA = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;",
                "const bool tmaA = false;",
            ),
            (
                "const bool tmaB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;",
                "const bool tmaB = false;",
            ),
        ),
        step="12",
    ),
    Variant("the second consumer warpgroup (BN = 64)", params={"BN": 64}, step="12"),
    # 3 stages, not 2: the epilogue lays C out in the pipeline's buffers, and two
    # slices do not hold it (a static_assert in the kernel says so).
    Variant("4 stages (3)", params={"STAGES": 3}, step="12"),
    Variant(
        "conflict-free fragment loads (row r of Bᵀ is column r)",
        (
            (
                "return (gg & 3) + 16 * (gg >> 2) + 4 * (j & 3) + 32 * (j >> 2);",
                "return gg + 8 * j;",
            ),
        ),
        step="12",
    ),
    Variant(
        "skipping C when beta = 0 (C read and scaled by 0)",
        (("const bool readC = beta != 0.0f;", "const bool readC = true;"),),
        step="12",
        reads_c=True,
    ),
    # Step 13 (kernels/13_wgmma_3xtf32.cu): what its FP32 accuracy costs.
    Variant(
        "promotion (one set of wgmma accumulators over all of K)",
        (
            (
                "for (int i = 0; i < BM / 2; ++i) acc[i] = 0.0f;",
                "for (int i = 0; i < BM / 2; ++i) acc[i] = part[i] = 0.0f;",
            ),
            (
                "wgmma_64xNx8<BM, false>(part, small[0], descriptor(as));",
                "wgmma_64xNx8<BM, true>(part, small[0], descriptor(as));",
            ),
            (
                "for (int i = 0; i < BM / 2; ++i) acc[i] += part[i];",
                "for (int i = 0; i < BM / 2; ++i) acc[i] = part[i];",
            ),
        ),
        step="13",
    ),
    # Its search for numbers far from 1, made as its numbers are split: without it, every
    # largest magnitude stays 0 and every block is ordinary (as every block of the
    # benchmark's inputs is anyway).
    Variant(
        "noting each row's and column's largest magnitude (every block taken as ordinary)",
        (("largest = fmaxf(largest, fabsf(x));", ""),),
        step="13",
    ),
    Variant(
        "the shortcut for ordinary blocks (every block multiplied twice, the second time "
        "scaled)",
        (("    far = 0;\n", "    far = 1;\n"),),
        step="13",
    ),
)
# The steps that have an ablation.
STEPS = tuple(dict.fromkeys(v.step for v in VARIANTS))


class StaleVariant(ValueError):
    """A substitution that no longer applies exactly once to the kernel."""


def kind(step: str = STEP) -> str:
    """What its data file is called, book/data/<kind>_<gpu>.csv: one run per file, so
    that each file's rows share one cuBLAS baseline per shape ('ablation' for 08)."""
    return "ablation" if step == STEP else f"ablation{step}"


def variants(step: str = STEP) -> tuple[Variant, ...]:
    """A step's variants, in the order the book shows them."""
    return tuple(v for v in VARIANTS if v.step == step)


def spec(variant: Variant) -> KernelSpec:
    step = registry.step(variant.step).with_params(**variant.params)
    try:
        spec = substituted(KernelSpec.from_step(step), variant.substitutions)
    except NotOnce as e:
        raise StaleVariant(
            f"'{variant.label}': {e}: update autograder/measure/ablation.py"
        ) from None
    return replace(spec, leaves_c_unread=spec.leaves_c_unread and not variant.reads_c)


def specs(step: str = STEP) -> dict[str, KernelSpec]:
    """The step's whole kernel, then each variant, by the label its rows carry."""
    whole = registry.step(step)
    chosen = variants(whole.id)
    if not chosen:
        raise ValueError(f"{whole.name} has no ablation; these do: {', '.join(STEPS)}")
    return {whole.name: KernelSpec.from_step(whole), **{v.label: spec(v) for v in chosen}}
