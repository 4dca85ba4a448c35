"""What step 09's reduction made of its layers, where C is wrong.

The GEMM around a reduction (autograder.run.composed.compose) runs step 08's kernel in
layers of K, each into its own partial sums, then the learner's reduction adds them
into C; its launch keeps the last launch's layers (launch.splits()). Step 08's layers
are the course's own and right, so a C that is not alpha times their sum plus beta C
is the reduction's doing, and how it differs says what the reduction got wrong.
"""

from __future__ import annotations


def explain(splits, xp, got, C0, alpha, beta, tolerance) -> str:
    """What the reduction made of the layers of `splits` (composed.Split, the last
    launch's), where C (`got`) is wrong; '' when C is their sum, or nothing was split.
    tolerance: one per element of C, or one for all."""
    for done in splits:
        first, end = done.row0, done.row0 + done.rows
        band = slice(first, end)
        where = ""
        if done.rows != got.shape[0]:
            where = (
                f"C's rows {first} to {end - 1} were a product of their own "
                f"(M = {done.rows} there, row i of it C's row {first} + i); "
            )
        tol = tolerance[band] if getattr(tolerance, "ndim", 0) == 2 else tolerance
        said = _explain_split(xp, got[band], C0[band], alpha, beta, tol, done)
        if said:
            return where + said
    return ""


def _explain_split(xp, got, C0, alpha, beta, tolerance, done) -> str:
    """What C's rows hold of the layers of one split product, `done`; '' their sum."""
    S = done.splits
    M, N = got.shape
    layers = done.partial.reshape(S, M, N).astype(xp.float64)
    old = beta * xp.asarray(C0, dtype=xp.float64) if beta else 0.0
    got = got.astype(xp.float64)

    def holds(candidate) -> bool:
        return bool((xp.abs(got - candidate) <= tolerance).all())

    if holds(alpha * layers.sum(axis=0) + old):
        return ""
    said = f"K was split in {S} layers (partial[0] ... partial[{S - 1}])"
    # Layers of zeros (those whose run of K is empty, as where K < S) are what a C that no
    # layer reached holds too: they say nothing of which layers the reduction read.
    for j in (j for j in range(1, S) if layers[:j].any()):
        if holds(alpha * layers[:j].sum(axis=0) + old):
            return (
                f"{said} and C holds the sum of the first {j} only: the loop over the "
                "layers must run s = 0 ... splits - 1"
            )
    for s in (s for s in range(S) if layers[s].any()):
        if holds(alpha * layers[s] + old):
            return f"{said} and C holds layer {s} alone: add every layer"
        if holds(S * alpha * layers[s] + old):
            return (
                f"{said} and C holds {S} times layer {s}: every pass of the loop reads "
                "the same layer, where layer s starts at partial[s * M * N]"
            )
    # Not within the tolerance, NaN included (a NaN compares false with everything).
    wrong = ~(xp.abs(got - alpha * layers.sum(axis=0) - old) <= tolerance)
    i, j = (int(v) for v in xp.argwhere(wrong)[0])
    return (
        f"{said} and C is not alpha times their sum plus beta C: at ({i}, {j}) the "
        f"layers are {', '.join(f'{float(v):.6g}' for v in layers[:, i, j][:4])}"
        f"{', ...' if S > 4 else ''} (partial[s * M * N + {i} * N + {j}] for s = 0 ... "
        f"{S - 1}), and C there is {float(got[i, j]):.6g}"
    )
