"""python -m autograder tune STEP: search a step's tile parameters on the GPU at hand.

Four stages, cheapest first, so that the dearer ones see fewer configurations:

1. rules: every combination of the candidate values that the registry declares
   for the step (`Tuning.space`) is checked against what the kernel assumes
   (its static_asserts) and against the limits of the smallest GPU the course
   targets (threads per block, static shared memory, a floor on registers),
   without compiling anything. Each rejection says why.
2. compile: the survivors are compiled for the GPU at hand, in parallel; a
   configuration that spills registers or exceeds a limit is dropped.
3. check: each is run on the checker's small shapes and must be right.
4. time: each is timed at one size (CUDA events, median, as `bench` does),
   cuBLAS once in the same process.

Stages 3 and 4 run in a child process, configuration after configuration; a
configuration that crashes or hangs costs only itself (a fresh child takes the
rest). Every configuration lands in a CSV with its verdict, and the best one
in a JSON file, by default book/data/tune_<step>_<gpu>.csv and .json.
"""

from __future__ import annotations

import csv
import datetime
import itertools
import json
import multiprocessing
import os
import random
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from ..isolate.child import Child, Died, Hung
from ..judge.timing import gflops, median_seconds
from ..ladder import hardware
from ..ladder.registry import STEPS, Step
from ..run import compiler, gpu, gpu_lock
from ..run.compiler import CompileError
from ..run.device_clock import Throttled
from ..run.kernel import KernelSpec
from .bench import DATA_DIR

CONFIG_TIMEOUT_S = 60.0  # compile, check and time one configuration in the child
DEFAULT_BUDGET_S = 240.0  # stop timing new configurations after this long


class TimingFailed(RuntimeError):
    """The timing process failed between configurations: no configuration to blame."""


@dataclass
class Trial:
    """One configuration and what became of it."""

    params: dict[str, int]
    # Block size, and what the registry's formulas say before compiling; None
    # where the parameters break the kernel's rules and sizes mean nothing.
    threads: int | None = None
    shared_bytes: int | None = None
    min_registers: int | None = None
    verdict: str = "candidate"  # until a stage rules on it: rejected, spills, ..., timed
    reason: str = ""
    registers: int | None = None  # from the compiler, for those compiled
    spill_bytes: int | None = None
    gflops: float | None = None
    pct_cublas: float | None = None

    @property
    def alive(self) -> bool:
        """Not yet ruled out by an earlier stage."""
        return self.verdict == "candidate"


@dataclass
class Search:
    """A step's configurations, and where they are judged and timed."""

    step: Step
    trials: list[Trial]
    size: tuple[int, int, int] = (4096, 4096, 4096)
    gpu: str = ""
    arch: str = ""
    cuda: str = ""
    cupy: str = ""
    cublas_gflops: float | None = None
    date: str = field(default_factory=lambda: datetime.date.today().isoformat())

    @property
    def best(self) -> Trial | None:
        timed = [t for t in self.trials if t.gflops]
        return max(timed, key=lambda t: t.gflops) if timed else None


def limits(threads: int, shared_bytes: int, min_registers: int) -> list[str]:
    """Why a block of this size cannot be launched on the course's smallest GPU (a T4),
    by the limits of autograder/ladder/hardware.py."""
    return hardware.launch_problems(
        hardware.SMALLEST, threads, min_registers, static_shared=shared_bytes, registers_floor=True
    )


def candidates(step: Step) -> list[Trial]:
    """Every combination of the step's candidate values, judged before compiling."""
    if step.tuning is None:
        tunable = ", ".join(s.name for s in _tunable_steps())
        raise ValueError(f"step {step.name} has no tile parameters to tune; tunable: {tunable}")
    tuning = step.tuning
    names = list(tuning.space)
    trials = []
    for values in itertools.product(*tuning.space.values()):
        params = {**step.params, **dict(zip(names, values))}
        reasons = tuning.rules(params)
        if reasons:
            trials.append(Trial(params, verdict="rejected", reason="; ".join(reasons)))
            continue
        trial = Trial(
            params,
            step.layout(params).threads,
            tuning.shared_bytes(params),
            tuning.registers(params),
        )
        reasons = limits(trial.threads, trial.shared_bytes, trial.min_registers)
        if reasons:
            trial.verdict, trial.reason = "rejected", "; ".join(reasons)
        trials.append(trial)
    return trials


def _tunable_steps() -> list[Step]:
    return [s for s in STEPS if s.tuning]


def spec_for(step: Step, params: dict[str, int]) -> KernelSpec:
    return KernelSpec.from_step(step.with_params(**params))


def _resources(spec: KernelSpec, arch: str):
    """Compile one configuration (in a worker process); its resources or the error."""
    try:
        result = compiler.compile_for_arch(spec.source, [spec.name_expression], arch, spec.filename)
    except CompileError as e:
        return e.errors.splitlines()[0] if e.errors else "did not compile"
    return result.resources[spec.name_expression]


def compile_stage(search: Search, progress: bool = True) -> None:
    """Compile the survivors for the GPU's architecture; drop what spills or does not fit."""
    from tqdm import tqdm

    alive = [t for t in search.trials if t.alive]
    specs = [spec_for(search.step, t.params) for t in alive]
    workers = max(1, min(len(alive), os.cpu_count() or 1))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        results = pool.map(partial(_resources, arch=search.arch), specs)
        bar = tqdm(results, total=len(alive), desc="compiling", unit="config", disable=not progress)
        for trial, result in zip(alive, bar):
            if isinstance(result, str):
                trial.verdict, trial.reason = "does not compile", result
                continue
            trial.registers = result.registers
            trial.spill_bytes = result.spill_store_bytes + result.spill_load_bytes
            problems = result.problems(trial.threads)
            if trial.spill_bytes or result.stack_bytes:
                trial.verdict, trial.reason = "spills", "; ".join(problems)
            elif problems:
                trial.verdict, trial.reason = "over limits", "; ".join(problems)


@dataclass(frozen=True)
class _Cublas:
    gflops: float


@dataclass(frozen=True)
class _Throttled:
    why: str  # device_clock.Throttled's message: the timings since say nothing


@dataclass(frozen=True)
class _Started:
    trial: int


@dataclass(frozen=True)
class _Settled:
    trial: int
    verdict: str
    reason: str
    gflops: float | None = None


def _time_child(conn, specs: list[KernelSpec], size: tuple[int, int, int], seed: int) -> None:
    """Check and time each spec in turn, reporting over conn; cuBLAS first."""
    import cupy

    from ..judge import checker
    from ..judge.advice import explain_cuda_error
    from ..run.backends import gpu_launcher
    from ..run.device_clock import DeviceClock

    M, N, K = size
    rng = cupy.random.default_rng(seed)
    A = rng.standard_normal((M, K), dtype=cupy.float32)
    B = rng.standard_normal((K, N), dtype=cupy.float32)
    C = cupy.zeros((M, N), dtype=cupy.float32)
    clock, boost = DeviceClock(), gpu.device_info().clock_mhz
    here = gpu_lock.identity()
    with gpu_lock.alone(here):  # nothing of a `grade` on this GPU beside the samples
        cublas = median_seconds(partial(cupy.matmul, A, B, out=C), clock.time)
    try:
        clock.require_steady(boost, "cuBLAS")
    except Throttled as e:
        return conn.send(_Throttled(str(e)))
    conn.send(_Cublas(gflops(M, N, K, cublas)))
    sync = cupy.cuda.Device().synchronize
    for i, spec in enumerate(specs):
        conn.send(_Started(i))
        try:
            launch = gpu_launcher(spec)
            events = checker.iter_suite(cupy, launch, checker.SMALL, seed, sync)
            wrong = next(
                (r for r in events if isinstance(r, checker.CaseResult) and not r.ok), None
            )
            if wrong:
                conn.send(_Settled(i, "wrong", f"{wrong.label}: {wrong.message}"))
                continue
            with gpu_lock.alone(here):
                seconds = median_seconds(partial(launch, M, N, K, 1.0, A, B, 0.0, C), clock.time)
            clock.require_steady(boost, spec.name_expression)
        except Throttled as e:  # a hot GPU: no timing from here on says anything
            return conn.send(_Throttled(str(e)))
        except CompileError as e:
            conn.send(_Settled(i, "does not compile", e.errors.splitlines()[0]))
            continue
        except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as e:
            conn.send(_Settled(i, "crashed", explain_cuda_error(e)))
            return  # the CUDA context is gone: a fresh child takes the rest
        conn.send(_Settled(i, "timed", "", gflops(M, N, K, seconds)))
    conn.send(None)  # done


def time_stage(search: Search, budget_s: float = DEFAULT_BUDGET_S, progress: bool = True) -> None:
    """Check and time the survivors in child processes, in a fixed shuffled order
    (the registry's own parameters first), until the time budget runs out."""
    from tqdm import tqdm

    alive = [t for t in search.trials if t.alive]
    random.Random(0).shuffle(alive)
    alive.sort(key=lambda t: t.params != search.step.params)  # stable: the default first
    bar = tqdm(total=len(alive), desc="timing", unit="config", disable=not progress)
    deadline = time.monotonic() + budget_s
    seed = random.randrange(2**32)
    while alive and time.monotonic() < deadline:
        done = _run_child(search, alive, seed, deadline, bar)
        alive = alive[done:]
    for trial in alive:
        trial.verdict, trial.reason = "not timed", f"the time budget ({budget_s:.0f} s) ran out"
    bar.close()


def _run_child(search: Search, trials: list[Trial], seed: int, deadline: float, bar) -> int:
    """Time trials in one child until it finishes, breaks, or the budget ends;
    return how many trials it settled."""
    specs = [spec_for(search.step, t.params) for t in trials]
    running, settled = None, 0  # the trial in progress; how many are done
    with Child(
        _time_child, specs, search.size, seed, messages=(_Cublas, _Started, _Settled, _Throttled)
    ) as child:
        while time.monotonic() < deadline:
            message = child.receive(CONFIG_TIMEOUT_S, "timing")
            if isinstance(message, (Hung, Died)):
                what = "hung" if isinstance(message, Hung) else "crashed"
                why = f"{message.doing}: " + (
                    f"did not finish within {message.seconds:.0f} s"
                    if what == "hung"
                    else f"the process died (exit code {message.exitcode})"
                )
                if running is None:
                    raise TimingFailed(f"{why}, between configurations")
                _settle(trials[running], what, why)
                bar.update()
                return running + 1
            if isinstance(message, _Throttled):
                raise Throttled(f"tune at {'x'.join(map(str, search.size))}: {message.why}")
            if isinstance(message, _Cublas):
                search.cublas_gflops = search.cublas_gflops or message.gflops
            elif isinstance(message, _Started):
                running = message.trial
            elif isinstance(message, _Settled):
                _settle(trials[message.trial], message.verdict, message.reason, message.gflops,
                        search.cublas_gflops)  # fmt: skip
                running, settled = None, message.trial + 1
                bar.update()
                if message.verdict == "crashed":  # the child stops: its CUDA context is gone
                    break
            else:
                break
    return settled


def _settle(trial: Trial, verdict: str, reason: str, rate=None, cublas=None) -> None:
    trial.verdict, trial.reason = verdict, reason
    if rate:
        trial.gflops = round(rate, 1)
        trial.pct_cublas = round(100 * rate / cublas, 1) if cublas else None


def run(
    step: Step,
    size=(4096, 4096, 4096),
    budget_s: float = DEFAULT_BUDGET_S,
    progress: bool = True,
) -> Search:
    """The whole search on this machine's GPU. Raises gpu.NoGPU without one."""
    trials = candidates(step)
    gpu.require("tune")
    info = gpu.device_info()
    search = Search(step, trials, tuple(size), info.name, info.arch, info.cuda, info.cupy)
    compile_stage(search, progress)
    time_stage(search, budget_s, progress)
    return search


# ---- reports -------------------------------------------------------------------------------

_COLUMNS = (
    "threads",
    "shared_bytes",
    "min_registers",
    "registers",
    "spill_bytes",
    "verdict",
    "gflops",
    "pct_cublas",
    "reason",
)


def default_paths(search: Search) -> tuple[Path, Path]:
    stem = f"tune_{search.step.id}_{gpu.slug(search.gpu)}"
    return DATA_DIR / f"{stem}.csv", DATA_DIR / f"{stem}.json"


def write_csv(search: Search, path: Path) -> Path:
    """Every configuration, best first, then by how far it got."""
    order = {"timed": 0, "wrong": 1, "crashed": 2, "hung": 3, "not timed": 4}
    rows = sorted(search.trials, key=lambda t: (order.get(t.verdict, 5), -(t.gflops or 0)))
    names = list(search.step.params)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["step", *names, *_COLUMNS, "M", "N", "K", "cublas_gflops", "gpu", "date"])
        for t in rows:
            record = asdict(t)
            writer.writerow(
                [search.step.id, *(t.params[n] for n in names)]
                + ["" if record[c] is None else record[c] for c in _COLUMNS]
                + [*search.size, search.cublas_gflops and round(search.cublas_gflops, 1)]
                + [search.gpu, search.date]
            )
    return path


def write_json(search: Search, path: Path) -> Path:
    """The best configuration, with where and how it was measured."""
    best = search.best
    spec = spec_for(search.step, best.params)
    counts = {}
    for t in search.trials:
        counts[t.verdict] = counts.get(t.verdict, 0) + 1
    record = {
        "step": search.step.id,
        "kernel": spec.name_expression,
        "params": best.params,
        "registers": best.registers,
        "gflops": best.gflops,
        "pct_cublas": best.pct_cublas,
        "cublas_gflops": search.cublas_gflops and round(search.cublas_gflops, 1),
        "size": list(search.size),
        "gpu": search.gpu,
        "arch": search.arch,
        "cuda": search.cuda,
        "cupy": search.cupy,
        "date": search.date,
        "verdicts": counts,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path


def _params_text(trial: Trial) -> str:
    return " ".join(f"{k}={v}" for k, v in trial.params.items())


def describe(trial: Trial, width: int = 48) -> str:
    """One line: the parameters (padded to width), the block's size, the verdict."""
    sizes = (
        f"{trial.threads:5d} threads {trial.shared_bytes:6d} B smem" if trial.threads else " " * 25
    )
    return f"{_params_text(trial):<{width}} {sizes}  {trial.verdict:<9} {trial.reason}"


def dry_run_report(step: Step, trials: list[Trial]) -> str:
    """The space and each configuration's verdict before compiling."""
    alive = sum(t.alive for t in trials)
    head = (
        f"{step.name}: {len(trials)} configurations, {alive} to compile and time, "
        f"{len(trials) - alive} rejected before compiling"
    )
    width = max(len(_params_text(t)) for t in trials)
    ordered = sorted(trials, key=lambda t: not t.alive)
    return "\n".join([head] + [describe(t, width) for t in ordered])


def summary(search: Search) -> str:
    """The best configuration, how the others fared, and how to use the best."""
    counts = {}
    for t in search.trials:
        counts[t.verdict] = counts.get(t.verdict, 0) + 1
    M, N, K = search.size
    lines = [
        f"{search.step.name} on {search.gpu} at {M}x{N}x{K}: "
        + ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1])),
    ]
    timed = sorted((t for t in search.trials if t.gflops), key=lambda t: -t.gflops)
    for t in timed[:5]:
        mark = "  (the registry's)" if t.params == search.step.params else ""
        kernel = spec_for(search.step, t.params).name_expression
        lines.append(f"  {t.gflops:9.0f} GFLOP/s {t.pct_cublas:5.1f}% of cuBLAS  {kernel}{mark}")
    best = search.best
    if best is None:
        lines.append("no configuration was timed")
        return "\n".join(lines)
    params = ", ".join(f"{k}={v}" for k, v in best.params.items())
    kernel_file = f"kernels/{search.step.path.name}"
    lines += [
        f"cuBLAS: {search.cublas_gflops:.0f} GFLOP/s",
        f"to use the best, set step {search.step.id}'s parameters in "
        "autograder/ladder/registry.py to",
        f"    params=dict({params}),",
        f"then check and time it: python -m autograder check {kernel_file}",
        f"                         python -m autograder bench {search.step.id}",
        f"and see that it fits a T4: python -m autograder compile --arch sm_75 {kernel_file}",
    ]
    return "\n".join(lines)
