"""Tensor maps: how Hopper's bulk tensor copy engine (TMA) finds a tile of A or B.

A kernel that copies with TMA names a box of a matrix by its coordinates; the map
says where the matrix lies, its shape and row stride, the box's size and how to lay
the box out in shared memory (here the 128-byte swizzle that wgmma reads). The
driver encodes maps on the host (cuTensorMapEncodeTiled, through cuda-bindings),
128 opaque bytes each, which the kernel takes by value (contract.TMA).

The engine describes only rows that start at 16-byte multiples. For a matrix whose
rows do not (K or N not a multiple of 4, or a base address off 16), the map is
all zeros, and the kernel copies that matrix float by float instead: the kernel
tests the same condition as `describable`.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

MAP_BYTES = 128
NONE = np.void(bytes(MAP_BYTES))  # a map the kernel will not use


def describable(pointer: int, cols: int) -> bool:
    """Whether TMA can describe a row-major float matrix at `pointer` with `cols`
    columns: every row starts at a multiple of 16 bytes."""
    return pointer % 16 == 0 and cols % 4 == 0


# A map depends only on where the matrix lies, its shape and the box: the timed
# launches of one shape reuse theirs instead of asking the driver each time.
@functools.lru_cache(maxsize=64)
def encode(pointer: int, rows: int, cols: int, box: tuple[int, int]) -> np.void:
    """The map of a rows x cols row-major float matrix at device address `pointer`,
    copied a box of (columns, rows) at a time into 128-byte-swizzled shared memory,
    with zeros for what lies outside the matrix; NONE where TMA cannot describe it."""
    if not describable(pointer, cols):
        return NONE
    from cuda.bindings import driver

    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    err, tensor_map = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        2,
        pointer,
        [u64(cols), u64(rows)],
        [u64(4 * cols)],  # bytes from one row to the next
        [u32(box[0]), u32(box[1])],
        [u32(1), u32(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    if err != driver.CUresult.CUDA_SUCCESS:
        raise ValueError(f"cuTensorMapEncodeTiled refused a {rows}x{cols} matrix: {err.name}")
    return np.void(ctypes.string_at(tensor_map.getPtr(), MAP_BYTES))


def maps(M: int, N: int, K: int, A, B, boxes) -> tuple[np.void, np.void]:
    """The maps of A (M x K) and B (K x N), CuPy arrays, for boxes (of A, of B). B's map
    holds the rows B has, up to K: a GEMM whose K was rounded up past them (split_k.described
    pads A's rows with zeros, not B's columns) reads zeros beyond them, never past B."""
    rows_of_b = min(K, B.size // N) if N else K
    return encode(A.data.ptr, M, K, boxes[0]), encode(B.data.ptr, rows_of_b, N, boxes[1])
