"""The device's time for queued work, without the host's launch work in it.

A CUDA event recorded on an idle GPU fires at once, so whatever Python does before
the launch reaches the GPU (argument packing, CuPy's and cuBLAS's host code: 3 to
20 µs) lands between the two events and is counted as kernel time. NVBench's
answer, reproduced here: a tiny kernel holds the stream until the host says go;
the start event, the work and the stop event are queued behind it meanwhile, and
the host releases the hold only when all of them are queued. The events then time
the device's work alone, back to back.

The hold waits on a flag in pinned host memory that the GPU reads over the bus,
and gives up after HOLD_LIMIT_S (queuing the work took that long, or run()
synchronized, which would otherwise wait for the hold forever). A sample whose
hold gave up is taken again; three in a row raise HoldFailed.
"""

from __future__ import annotations

import ctypes
from typing import Callable

HOLD_LIMIT_S = 0.5
TRIES = 3

_HOLD = r"""
extern "C" __global__ void hold(const volatile int* release, volatile int* gave_up,
                                unsigned long long limit_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (!*release) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > limit_ns) { *gave_up = 1; return; }
  }
}
"""


class HoldFailed(RuntimeError):
    """The stream could not be held while the work was queued: no GPU-only time."""


class DeviceClock:
    """time(run): seconds of device time that run()'s queued work takes (needs CuPy)."""

    def __init__(self):
        import cupy

        runtime = cupy.cuda.runtime
        self._kernel = cupy.RawKernel(_HOLD, "hold")
        # Two ints, [release, gave_up], that the host and the GPU both see.
        mapped_portable = 2 | 1  # cudaHostAllocMapped | cudaHostAllocPortable
        self._host = runtime.hostAlloc(8, mapped_portable)
        # Under unified addressing (every 64-bit platform CUDA runs on) the GPU reads
        # mapped host memory at the host's own address.
        device_pointer = getattr(runtime, "hostGetDevicePointer", None)
        self._device = device_pointer(self._host, 0) if device_pointer else self._host
        self._flags = (ctypes.c_int * 2).from_address(self._host)
        self._events = cupy.cuda.Event(), cupy.cuda.Event()
        self._free = runtime.freeHost

    def __del__(self):
        if getattr(self, "_host", None):
            self._free(self._host)

    def time(self, run: Callable[[], object]) -> float:
        import cupy
        import numpy as np

        start, stop = self._events
        for _ in range(TRIES):
            self._flags[0] = self._flags[1] = 0
            self._kernel(
                (1,),
                (1,),
                (np.uintp(self._device), np.uintp(self._device + 4), np.uint64(HOLD_LIMIT_S * 1e9)),
            )
            start.record()
            run()
            stop.record()
            self._flags[0] = 1  # go: everything is queued behind the hold
            stop.synchronize()
            if not self._flags[1]:
                return cupy.cuda.get_elapsed_time(start, stop) / 1e3
        raise HoldFailed(
            f"the stream could not be held while the work was queued ({TRIES} tries of "
            f"{HOLD_LIMIT_S} s): does it synchronize with the device?"
        )
