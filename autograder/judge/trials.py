"""The cases the localizer runs a kernel on (autograder.judge.localize), drawn as the
checker draws its own: NaN around the inputs, GUARD around C, C's elements at beta = 0
SENTINEL (UNREAD_C for a kernel whose step leaves C unread then). Each is run by a launch
of the kernel's own contract (autograder.run.contract):

- a GEMM's (Product): launch(M, N, K, alpha, A, B, beta, C);
- step 09's reduction's (Layers): launch(M, N, splits, alpha, partial, beta, C), its
  layers of partial sums drawn at random. The reduction runs alone, without step 08's
  GEMM around it that made its layers in the checker's cases: a repair is judged on
  what the reduction must do with any layers, in the time of a sum, not of a product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..run.composed import graded_splits
from ..run.faults import KernelFault
from ..run.kernel import KernelSpec
from .checker import (
    ALPHA, GUARD, Shape, _Inputs, _pad_for, _padded, c_where_beta_is_0,
    elementwise_tolerance, tolerance_factor,
)  # fmt: skip


@dataclass
class Trial:
    """One case: C's padded buffer before the launch, and what it must hold after."""

    shape: Shape
    beta: float
    c0: np.ndarray  # the padded buffer C starts as
    expected: np.ndarray
    tolerance: np.ndarray
    pad: int

    def run(self, launch) -> np.ndarray:
        """C's padded buffer after one launch on this case; raises KernelFault."""
        c = self.c0.copy()
        self._launch(launch, c[self.pad : self.pad + self.shape.M * self.shape.N])
        return c

    def _launch(self, launch, C: np.ndarray) -> None:
        raise NotImplementedError

    def right(self, launch, where_written: bool = False) -> bool:
        """Whether the kernel computes this case right, writing C alone (a fault: no);
        where_written: judged on the elements it wrote only (a launch of some blocks)."""
        M, N, p = self.shape.M, self.shape.N, self.pad
        try:
            c = self.run(launch)
        except KernelFault:
            return False
        got = c[p : p + M * N].reshape(M, N)
        right = np.abs(got.astype(np.float64) - self.expected) <= self.tolerance
        if where_written:
            right |= got == self.c0[p : p + M * N].reshape(M, N)
        return bool(right.all() and (c[:p] == GUARD).all() and (c[p + M * N :] == GUARD).all())


def _c0(shape: Shape, beta: float, rng, leaves_c_unread: bool) -> np.ndarray:
    """C before the launch: random where beta reads it, else SENTINEL or UNREAD_C, as the
    checker's (a thread that writes nothing leaves it so)."""
    if beta:
        return rng.standard_normal((shape.M, shape.N), dtype=np.float32)
    return np.full((shape.M, shape.N), c_where_beta_is_0(leaves_c_unread))


@dataclass
class Product(Trial):
    """A GEMM's case: C = alpha A B + beta C."""

    a: np.ndarray
    b: np.ndarray

    @classmethod
    def draw(cls, shape: Shape, beta: float, rng, leaves_c_unread: bool = False) -> Product:
        drawn = _Inputs.draw(np, shape, beta, rng, leaves_c_unread)  # as the checker's
        A64, B64 = drawn.A.astype(np.float64), drawn.B.astype(np.float64)
        C0 = drawn.C0
        expected = ALPHA * (A64 @ B64) + (beta * C0.astype(np.float64) if beta else 0.0)
        tolerance = elementwise_tolerance(np, A64, B64, ALPHA, 0.0, beta, C0)
        c0 = _padded(np, C0.astype(np.float32), GUARD, drawn.pad)
        return cls(shape, beta, c0, expected, tolerance, drawn.pad, drawn.a_buf, drawn.b_buf)

    def _launch(self, launch, C: np.ndarray) -> None:
        M, N, K, p = self.shape.M, self.shape.N, self.shape.K, self.pad
        launch(M, N, K, ALPHA, self.a[p : p + M * K], self.b[p : p + K * N], self.beta, C)


@dataclass
class Layers(Trial):
    """A reduction's case: C = alpha (partial[0] + ... + partial[splits - 1]) + beta C,
    each layer M x N, laid one after the other."""

    partial: np.ndarray
    splits: int

    @classmethod
    def draw(
        cls, shape: Shape, beta: float, splits: int, rng, leaves_c_unread: bool = False
    ) -> Layers:
        M, N = shape.M, shape.N
        layers = rng.standard_normal((splits, M, N), dtype=np.float32)
        C0 = _c0(shape, beta, rng, leaves_c_unread)
        pad = _pad_for(shape)
        layers64, old = layers.astype(np.float64), beta * C0.astype(np.float64) if beta else 0.0
        expected = ALPHA * layers64.sum(axis=0) + old
        # Rounding of a sum of `splits` terms, as the checker allows a dot product of K.
        scale = abs(ALPHA) * np.abs(layers64).sum(axis=0) + np.abs(old)
        tolerance = scale * tolerance_factor(splits) + 1e-30
        c0 = _padded(np, C0.astype(np.float32), GUARD, pad)
        partial = _padded(np, layers, np.nan, pad)
        return cls(shape, beta, c0, expected, tolerance, pad, partial, splits)

    def _launch(self, launch, C: np.ndarray) -> None:
        M, N, S, p = self.shape.M, self.shape.N, self.splits, self.pad
        launch(M, N, S, ALPHA, self.partial[p : p + S * M * N], self.beta, C)


# Layers a reduction's case is run in, besides the checker's own for its shape
# (composed.graded_splits): the fewest a split has, and more than the checker's
# cases ever give (a plan on a GPU may split K in more).
LAYERS = (2, 5)


def draw(spec: KernelSpec, shape: Shape, beta: float, rng) -> list[Trial]:
    """The trials of one case of spec's: a GEMM's one; a reduction's, one for each
    number of layers (LAYERS and the checker's own), all of which it must get right."""
    unread = spec.leaves_c_unread
    if spec.contract != "reduce":
        return [Product.draw(shape, beta, rng, unread)]
    counts = sorted({graded_splits(shape.M, shape.N, shape.K), *LAYERS})
    return [Layers.draw(shape, beta, splits, rng, unread) for splits in counts]


def drawn(spec: KernelSpec, cases, seed: int) -> list[Trial]:
    """The trials of these cases ((Shape, beta) each), in order, from one seed."""
    rng = np.random.default_rng(seed)
    return [trial for shape, beta in cases for trial in draw(spec, shape, beta, rng)]
