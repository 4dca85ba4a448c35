"""Device buffers with nothing mapped around them, so that a kernel's stray access
faults on every GPU.

Timed launches once wrote C and read A and B in CuPy's memory pool, beside whatever
else the process had mapped: a kernel that wrote a gigabyte past C at the timed size
faulted on an H100 and, on an H200 (more memory, more of it mapped around C), wrote
into memory nobody checked and kept its speed points. Here each buffer is placed in
a reservation of the device's virtual addresses with GUARD bytes left unmapped on
either side (the CUDA driver's virtual memory management, through cuda-bindings:
cuMemAddressReserve, cuMemCreate, cuMemMap), its data ending where the mapping ends.
Any access the guards hold faults, whatever the card and whatever else is mapped.
"""

from __future__ import annotations

import functools
import math

# Every index of 32 bits, signed or not, counted in floats from a buffer's first
# element (4 bytes times 2**32) lands in the buffer or in a guard.
GUARD = 4 << 32
_ALIGN = 256  # what cudaMalloc gives, and more than a float4 access needs


class _Mapping:
    """A reservation of GUARD + size + GUARD bytes, the middle mapped; released with
    the last array that uses it."""

    base = handle = _driver = None  # what release() has to give back, so far
    mapped = False

    def __init__(self, size: int, device: int):
        from cuda.bindings import driver

        self._driver, self.size = driver, size
        prop = _properties(device)
        try:
            self.base = _ok(driver.cuMemAddressReserve(size + 2 * GUARD, 0, 0, 0))
            self.handle = _ok(driver.cuMemCreate(size, prop, 0))
            _ok(driver.cuMemMap(self.pointer, size, 0, self.handle, 0))
            self.mapped = True
            access = driver.CUmemAccessDesc()
            access.location = prop.location
            access.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            _ok(driver.cuMemSetAccess(self.pointer, size, [access], 1))
        except BaseException:
            self.release()
            raise

    @property
    def pointer(self) -> int:
        return int(self.base) + GUARD

    def release(self) -> None:
        """Unmap and give back, once no launch uses it. After a kernel's fault the
        context is lost and each call fails: the process that ran it ends, and its
        mappings with it."""
        driver = self._driver
        if driver is None:
            return
        if self.mapped:
            driver.cuCtxSynchronize()
            driver.cuMemUnmap(self.pointer, self.size)
        if self.handle is not None:
            driver.cuMemRelease(self.handle)
        if self.base is not None:
            driver.cuMemAddressFree(self.base, self.size + 2 * GUARD)
        self.base, self.handle, self.mapped = None, None, False

    def __del__(self):
        self.release()


def _ok(result):
    err, *value = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise MemoryError(f"the CUDA driver refused a guarded buffer: {err.name}")
    return value[0] if value else None


@functools.lru_cache(maxsize=None)
def _properties(device: int):
    from cuda.bindings import driver

    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = device
    return prop


@functools.lru_cache(maxsize=None)
def _granularity(device: int) -> int:
    from cuda.bindings import driver

    flag = driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
    return _ok(driver.cuMemGetAllocationGranularity(_properties(device), flag))


# Why the last buffer asked for came from CuPy's pool instead, or '' (see empty).
refused = ""


def empty(shape: tuple[int, ...]):
    """An uninitialised float32 CuPy array on the current device, with GUARD bytes
    unmapped before it and nothing mapped past its last element but the few bytes
    that keep it aligned. Where the driver gives no such memory (cuda-bindings missing
    or made for a newer CUDA than the driver's; a driver without virtual memory
    management), one from CuPy's pool, as before, and `refused` says why: a timing must
    not fail a learner for what the grader's machine lacks."""
    import cupy

    global refused
    try:
        array = _guarded(shape)
    except Exception as e:  # ImportError, the driver's refusal, a binding it lacks
        refused = f"{type(e).__name__}: {e}"
        return cupy.empty(shape, dtype=cupy.float32)
    refused = ""
    return array


def _guarded(shape: tuple[int, ...]):
    import cupy

    device = cupy.cuda.Device().id
    nbytes = max(4 * math.prod(shape), 4)
    grain = _granularity(device)
    size = -(-nbytes // grain) * grain
    mapping = _Mapping(size, device)
    offset = (size - nbytes) // _ALIGN * _ALIGN  # the data ends where the mapping does
    memory = cupy.cuda.UnownedMemory(mapping.pointer, size, mapping)
    return cupy.ndarray(shape, cupy.float32, cupy.cuda.MemoryPointer(memory, offset))
