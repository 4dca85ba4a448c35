"""What do the tensor cores keep when they add? Measured for book/13_wgmma_3xtf32.md.

A probe of sums whose every product is exact (autograder.measure.accuracy.questions): 1 plus a
small power of two, added inside one wgmma, by the next wgmma into its
accumulators, or in the next slice of K, run through step 08's kernel (the FP32
lanes), step 12's (TF32 wgmma, one accumulator over all of K) and step 13's (the
tensor cores sum a slice, the FP32 lanes add the slices). For each, how many
bits below the leading one an addend keeps, and which way the sum rounds.
Needs an H100 or H200 and CuPy; run from the repository root:

    python book/tf32_accumulator.py book/data/accumulator_<gpu>.csv
"""

import dataclasses
import datetime
import sys

import cupy

from autograder import KernelSpec
from autograder.ladder import registry
from autograder.measure import accuracy
from autograder.run import gpu
from autograder.run.backends import gpu_launcher

info = gpu.device_info()
if not registry.step("13").runs_on_gpu(info.arch):
    sys.exit(f"steps 12 and 13 need {registry.step('13').needs}; this is {info.name}")
asked = accuracy.questions()
A, B = (cupy.asarray(x) for x in accuracy.probe_inputs(asked))
M, K = A.shape
N = B.shape[1]
rows = []
for step in ("08", "12", "13"):
    s = registry.step(step)
    C = cupy.zeros((M, N), dtype=cupy.float32)
    # tune=False: the tensor cores at every shape, never step 09's FP32 path (run.paths).
    gpu_launcher(KernelSpec.from_step(s), tune=False)(M, N, K, 1.0, A, B, 0.0, C)
    for r in accuracy.kept(s.name, asked, C[:, 0].astype(cupy.float64).get()):
        rows.append(
            dataclasses.replace(
                r, gpu=info.name, date=datetime.date.today().isoformat(), cuda=info.cuda
            )
        )
accuracy.write(sys.argv[1], rows)
for r in rows:
    print(f"{r.kernel:<18} {r.place:<20} {r.bits:>3} bits  {r.rounding}")
