"""On a GPU: the CPU backend gives the same verdicts, with the same message kinds,
as the GPU on every reference kernel and every planted bug.

Each case prints one line (GPU verdict | CPU verdict), so `pytest -s` gives
the comparison table.
"""

import pytest
from planted import PLANTED, RACES, UNSAFE

from autograder import KernelSpec, judge
from autograder.isolate import isolation
from autograder.judge.checker import SMALL
from autograder.ladder import registry

pytestmark = [
    pytest.mark.gpu,
    # A GPU machine need not have what confines the CPU backend's native code.
    pytest.mark.skipif(
        isolation.available() is not None,
        reason=f"the CPU backend cannot confine a kernel here: {isolation.available()}",
    ),
]

CASES = {s.name: (KernelSpec.from_step(s), None) for s in registry.STEPS}
CASES.update(PLANTED)
CASES.update(UNSAFE)
CASES.update({bug: (spec, None) for bug, spec in RACES.items()})


def verdict(report, expected):
    messages = " / ".join([c.message for c in report.failures] + [report.error])
    kind = "" if expected is None else f", says {expected!r}: {expected in messages}"
    return f"{'PASS' if report.ok else 'FAIL'} ({len(report.failures)} failed cases{kind})"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_cpu_and_gpu_agree(case):
    spec, expected = CASES[case]
    # SMALL holds checker.EXACT_SIZE, which a GPU runs again under compute-sanitizer:
    # a race, or a read outside A or B whose value goes unused, fails there.
    gpu = judge.check(spec, shapes=SMALL, case_timeout_s=10, backend="gpu")
    cpu = judge.check(spec, shapes=SMALL, case_timeout_s=10, backend="cpu")
    print(f"\n{case:<40} GPU {verdict(gpu, expected):<60} CPU {verdict(cpu, expected)}")
    assert gpu.ok == cpu.ok
    if expected is not None:
        for report in (gpu, cpu):
            assert expected in " / ".join([c.message for c in report.failures] + [report.error])
