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

Warm means the caches as the same work left them (NVBench's warm samples are launches of
one kernel back to back): `warm` queues one untimed run behind the hold before the timed
one. Without it, a sample taken in a round robin finds the caches as another kernel left
them, and that moved figures by up to 14 points of cuBLAS on an H100 (2026-11-27): step
09's plan at 1024^3 ran at 88.7% of cuBLAS after the previous kernel of the round robin
and 102.8% after itself, step 08 at 2048^3 97.3% and 99.6%. Work sampled alone (tune,
the clocks table) follows itself anyway, and `time` is enough there; the grader's timing
flushes the L2 before each launch.

While it holds, the hold also reads the SM's clock: its cycle counter against the
device's nanosecond timer, over at least HOLD_AT_LEAST_NS. A GPU that throttles
(too hot, or at its power limit) runs its SMs slower, every kernel alike, and
the time of a sample taken then says nothing about the kernel: NVBench's answer,
reproduced by `throttled`, is to refuse samples taken below 75% of the clock the
GPU is meant to run at.
"""

from __future__ import annotations

import ctypes
from typing import Callable

HOLD_LIMIT_S = 0.5
TRIES = 3
# Long enough that the device's timer, which may tick once a microsecond, reads
# the clock to within a few per cent.
HOLD_AT_LEAST_NS = 50_000
# NVBench's threshold: samples taken with the SMs below this share of the
# GPU's boost clock are throttled.
THROTTLED = 0.75

_HOLD = r"""
extern "C" __global__ void hold(const volatile int* release, volatile int* gave_up,
                                volatile unsigned long long* clock,
                                unsigned long long at_least_ns,
                                unsigned long long limit_ns) {
  const long long cycles = clock64();
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > limit_ns) { *gave_up = 1; return; }
  } while (!*release || now - start < at_least_ns);
  clock[0] = clock64() - cycles;  // the SM's cycles ...
  clock[1] = now - start;         // ... in this many nanoseconds
}
"""


class Throttled(RuntimeError):
    """Samples were taken while the GPU throttled: their times are not the kernels'."""


class HoldFailed(RuntimeError):
    """The stream could not be held while the work was queued: no GPU-only time."""


def throttled(readings_mhz: list[float], boost_mhz: float) -> str:
    """Why samples taken at these SM clocks say nothing, or '' when they do: their
    median below THROTTLED of the boost clock. (A single low reading is the timer's
    jitter; a median that low is a GPU that throttled for half the samples or more.)"""
    if not readings_mhz:
        return ""
    median = sorted(readings_mhz)[len(readings_mhz) // 2]
    if median >= THROTTLED * boost_mhz:
        return ""
    return (
        f"the GPU's SMs ran at {median:.0f} MHz (median of {len(readings_mhz)} samples), "
        f"under {THROTTLED:.0%} of its {boost_mhz:.0f} MHz boost clock: it is throttling "
        "(too hot, or at its power limit), so its timings say nothing of the kernels"
    )


class DeviceClock:
    """time(run): seconds of device time that run()'s queued work takes (needs CuPy).
    readings_mhz: the SM clock before each sample since the last require_steady, as the
    hold read it."""

    def __init__(self):
        import cupy

        runtime = cupy.cuda.runtime
        self._kernel = cupy.RawKernel(_HOLD, "hold")
        # Two ints, [release, gave_up], then two u64, [cycles, ns] (the clock the hold
        # read), that the host and the GPU both see.
        mapped_portable = 2 | 1  # cudaHostAllocMapped | cudaHostAllocPortable
        self._host = runtime.hostAlloc(24, mapped_portable)
        # Under unified addressing (every 64-bit platform CUDA runs on) the GPU reads
        # mapped host memory at the host's own address.
        device_pointer = getattr(runtime, "hostGetDevicePointer", None)
        self._device = device_pointer(self._host, 0) if device_pointer else self._host
        self._flags = (ctypes.c_int * 2).from_address(self._host)
        self._clock = (ctypes.c_uint64 * 2).from_address(self._host + 8)
        self.readings_mhz: list[float] = []
        self._events = cupy.cuda.Event(), cupy.cuda.Event()
        self._free = runtime.freeHost

    def __del__(self):
        if getattr(self, "_host", None):
            self._free(self._host)

    def time(self, run: Callable[[], object]) -> float:
        """Seconds of run()'s work, the caches as whatever ran before left them."""
        return self._held(run)

    def warm(self, run: Callable[[], object]) -> float:
        """Seconds of run()'s work right after an untimed run() of its own, queued behind
        the same hold: the caches as this work leaves them, whatever ran before."""
        return self._held(run, before=run)

    def _held(self, run: Callable[[], object], before: Callable[[], object] | None = None) -> float:
        import cupy
        import numpy as np

        start, stop = self._events
        for _ in range(TRIES):
            self._flags[0] = self._flags[1] = 0
            self._kernel(
                (1,),
                (1,),
                (
                    np.uintp(self._device),
                    np.uintp(self._device + 4),
                    np.uintp(self._device + 8),
                    np.uint64(HOLD_AT_LEAST_NS),
                    np.uint64(HOLD_LIMIT_S * 1e9),
                ),
            )
            if before:
                before()
            start.record()
            run()
            stop.record()
            self._flags[0] = 1  # go: everything is queued behind the hold
            stop.synchronize()
            if not self._flags[1]:
                cycles, ns = self._clock
                self.readings_mhz.append(1e3 * cycles / ns)
                return cupy.cuda.get_elapsed_time(start, stop) / 1e3
        raise HoldFailed(
            f"the stream could not be held while the work was queued ({TRIES} tries of "
            f"{HOLD_LIMIT_S} s): does it synchronize with the device?"
        )

    def throttled(self, boost_mhz: float) -> str:
        """Why the samples since the last call say nothing (see throttled), or ''; then
        a new set starts."""
        why = throttled(self.readings_mhz, boost_mhz)
        self.readings_mhz.clear()
        return why

    def require_steady(self, boost_mhz: float, where: str) -> None:
        """Raise Throttled where the samples since the last call were taken while the GPU
        throttled; then start a new set."""
        if why := self.throttled(boost_mhz):
            raise Throttled(f"{where}, {why}")
