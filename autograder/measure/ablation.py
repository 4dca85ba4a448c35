"""What each trick of the last FP32 step is worth: its kernel with one trick taken
out at a time, timed beside the whole kernel and cuBLAS (`bench --ablation`).

A variant is the kernel's own source with substitutions, each of which must
apply exactly once (as the planted bugs of tests/planted.py do), so that a
change to the kernel cannot leave a variant that silently takes nothing out.
Every variant is still a right kernel: the tests check each one on the CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..ladder import registry
from ..run.kernel import KernelSpec, NotOnce, substituted

# The step whose tricks are measured: the last FP32 step of the ladder.
STEP = "08"
SIZES = ("4096", "4095x4097x4093")


@dataclass(frozen=True)
class Variant:
    trick: str  # what the variant takes out, in words
    substitutions: tuple[tuple[str, str], ...] = ()
    params: Mapping[str, int] = field(default_factory=dict)  # changed template parameters

    @property
    def label(self) -> str:
        return f"{STEP} without {self.trick}"


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
)


class StaleVariant(ValueError):
    """A substitution that no longer applies exactly once to the kernel."""


def spec(variant: Variant) -> KernelSpec:
    step = registry.step(STEP).with_params(**variant.params)
    try:
        return substituted(KernelSpec.from_step(step), variant.substitutions)
    except NotOnce as e:
        raise StaleVariant(
            f"'{variant.label}': {e}: update autograder/measure/ablation.py"
        ) from None


def specs() -> dict[str, KernelSpec]:
    """The whole kernel, then each variant, by the label its rows carry."""
    whole = registry.step(STEP)
    return {whole.name: KernelSpec.from_step(whole), **{v.label: spec(v) for v in VARIANTS}}
