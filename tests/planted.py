"""Bugs planted in the reference kernels, for proving that the checker catches them.

A planted bug is one substitution in a reference kernel's source (nothing is
re-typed), and each substitution must apply exactly once, so a change to the
kernel cannot silently leave a "bug" that is no bug. Each comes with a phrase
the checker's message must contain, on every backend.
"""

from dataclasses import replace

from autograder import KernelSpec, registry


def planted(step_id: str, old: str, new: str) -> KernelSpec:
    step = registry.step(step_id)
    source = step.source()
    assert source.count(old) == 1, f"{old!r} must occur once in {step.path.name}"
    return replace(KernelSpec.from_step(step), source=source.replace(old, new))


BOUNDS = "if (row < M && col < N) {"
PLANTED = {
    "missing N bound": (planted("02", BOUNDS, "if (row < M) {"), "past the end of C"),
    "missing M bound": (planted("05", BOUNDS, "if (col < N) {"), "past the end of C"),
    "unwritten element": (
        planted("01", BOUNDS, "if (row < M && col < N && !(row == 0 && col == 5)) {"),
        "element (0, 5) was never written",
    ),
    "beta ignored": (
        planted("04", "alpha * acc[m] + beta * C[row * N + col]", "alpha * acc[m]"),
        "ignores beta",
    ),
    "K loop one short": (planted("01", "k < K;", "k < K - 1;"), "wrong"),
    "missing K bound in the tile load": (
        planted("03", "(row < M && k0 + tx < K)", "(row < M)"),
        "read outside A",
    ),
    "float4 without the alignment fallback": (
        planted("06", "const bool vecB = N % 4 == 0 && aligned16(B);", "const bool vecB = true;"),
        "cudaErrorMisalignedAddress",
    ),
    "endless loop": (
        planted(
            "02",
            "float acc = 0.0f;",
            "float acc = 0.0f;\n    while (*(volatile float*)A == *(volatile float*)A) {}",
        ),
        "did not finish within",
    ),
}
RACES = {
    "missing first __syncthreads": planted(
        "03", "__syncthreads();  // the tiles are complete", "// the tiles are complete"
    ),
    "missing second __syncthreads": planted(
        "03", "__syncthreads();  // everyone is done reading", "// everyone is done reading"
    ),
}
