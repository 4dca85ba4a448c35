"""python -m autograder compile | check | bench | sass | ...: the course's command line.

Exit codes: 0 success; 1 the kernel ran but is wrong (or crashed, or hung);
2 it could not compile, the command was used wrongly, or it needs a GPU that
this machine does not have.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..grade import batch, grading
from ..isolate import isolation
from ..judge.job import GraderFault
from ..ladder import registry
from ..measure import sass
from ..measure.bench import Noisy
from ..measure.profile import ProfilerUnavailable
from ..run import backends, compiler, gpu
from ..run.backends import BackendUnavailable
from ..run.device_clock import HoldFailed, Throttled
from ..run.kernel import SpecError, from_file, global_kernels, resolve
from .assignments import ASSIGNMENTS, assignment

OK, WRONG, UNUSABLE = 0, 1, 2
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")


def _shard(text: str) -> tuple[int, int]:
    """'2/8' -> (2, 8)."""
    try:
        k, n = (int(v) for v in text.split("/"))
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N, not {text!r}")
    return k, n


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return value


def _pair(text: str) -> tuple[int, int]:
    """'256' -> (256, 1); '32x8' -> (32, 8)."""
    parts = text.lower().split("x")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) == 1:
        values += (1,)
    if len(values) != 2 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected N or AxB with positive integers, not {text!r}")
    return values


def _parser() -> argparse.ArgumentParser:
    steps = ", ".join(s.name for s in registry.STEPS)
    beyond = ", ".join(f"{s.name} ({s.needs})" for s in registry.BEYOND)
    p = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Compile, check and time SGEMM kernels written to the course's contract: "
        'extern "C" __global__ void NAME(int M, int N, int K, float alpha, '
        "const float* A, const float* B, float beta, float* C), row-major.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = sub.add_parser(
        "compile",
        help="compile kernels (no GPU needed) and report their resources",
        description="Compile each FILE.cu with NVRTC for an architecture and print "
        "registers, spills and shared memory per kernel, with a warning "
        "for anything that would spill or not fit a T4. Needs no GPU.",
    )
    c.add_argument("files", type=Path, nargs="+", metavar="FILE.cu")
    c.add_argument(
        "--arch",
        default="sm_90",
        help=f"target GPU architecture, e.g. {', '.join(ARCHS)} (default: sm_90; "
        "the T4 on Colab is sm_75)",
    )
    c.add_argument(
        "--kernel", help="the kernel to instantiate, e.g. 'sgemm_vectorized<128, 128, 8, 8, 8>'"
    )
    c.add_argument(
        "--like", metavar="STEP", help="instantiate a template with this step's parameters"
    )

    k = sub.add_parser(
        "check",
        help="check a kernel's results on awkward shapes",
        description="Run FILE.cu on shapes that are not multiples of 32 (1x1x1 up "
        "to 4095x4097x4093) against a float64 reference and say where "
        "it is wrong. Exit 0 correct, 1 wrong/crashed/hung, "
        "2 did not compile or bad usage.",
    )
    k.add_argument("file", type=Path, metavar="FILE.cu")
    k.add_argument(
        "--kernel",
        help="which __global__ function (needed if the file has several); "
        "may name template arguments",
    )
    k.add_argument("--like", metavar="STEP", help=f"launch it as this step is launched: {steps}")
    k.add_argument("--block", type=_pair, metavar="BX[xBY]", help="threads per block")
    k.add_argument(
        "--tile", type=_pair, metavar="BMxBN", help="rows x columns of C that one block covers"
    )
    k.add_argument(
        "--rows-on",
        choices=("x", "y"),
        help="the grid axis that walks the rows of C (default y: grid.x walks columns)",
    )
    k.add_argument(
        "--backend",
        choices=("auto", "gpu", "cpu"),
        default="auto",
        help="where to run it: the GPU, or the CPU (correctness only, no GPU needed); "
        "default auto: the GPU if there is one, else the CPU",
    )
    k.add_argument("--seed", type=int, help="random seed, to repeat a run exactly")
    k.add_argument("--quick", action="store_true", help="small shapes only")
    k.add_argument(
        "--verbose",
        action="store_true",
        help="also each failing case's own message, and how the process that ran the "
        "kernel was confined",
    )

    b = sub.add_parser(
        "bench",
        help="time the ladder against cuBLAS",
        description="Time reference kernels and cuBLAS (strict FP32) with CUDA "
        "events; print GFLOP/s and %% of cuBLAS; write a CSV and a plot.",
    )
    b.add_argument(
        "steps",
        nargs="*",
        metavar="STEP",
        help=f"steps to time (default: the whole ladder): {steps}; and beyond it: {beyond}",
    )
    b.add_argument(
        "--sizes",
        nargs="+",
        metavar="SIZE",
        help="N for NxNxN or MxNxK (default: 1024 2048 4096 1001x777x513 4095x4097x4093)",
    )
    b.add_argument(
        "--ablation",
        action="store_true",
        help="time a step (the last FP32 one, 08, unless STEP: 12 has one too) with each of "
        "its tricks taken out in turn (autograder/measure/ablation.py), beside the whole "
        "kernel and cuBLAS, at 4096 and 4095x4097x4093 unless --sizes; into "
        "book/data/ablation_<gpu>.csv (ablation12_<gpu>.csv for 12, and so on)",
    )
    b.add_argument(
        "--sweep",
        action="store_true",
        help="time the published sweep of shapes (bench.SWEEP: square, skinny, small K, "
        "large K, odd) instead of --sizes; by default for the last step of the ladder only; "
        "prints each kernel's geometric mean and minimum %% of cuBLAS",
    )
    b.add_argument(
        "--outside",
        action="store_true",
        help="time the shapes outside the sweep too (bench.OUTSIDE: skinny with M or N "
        "under 128, K far longer than M and N, tiny K), with --sweep or alone",
    )
    b.add_argument(
        "--first-use",
        action="store_true",
        help="step 09 as on a GPU nobody tuned on: this GPU's committed dispatch table set "
        "aside, an empty tuning cache, the first-use tuning done before each shape's "
        "samples and its seconds reported (with SGEMM_AUTOTUNE=0: the untuned rule); "
        "into sweep_first_use_<gpu>.csv (sweep_untuned_<gpu>.csv) unless --csv",
    )
    b.add_argument(
        "--csv",
        type=Path,
        metavar="F",
        help="merge results into this CSV (default: book/data/bench_<gpu>.csv, or "
        "sweep_<gpu>.csv with --sweep)",
    )
    b.add_argument(
        "--plot", type=Path, metavar="F", help="also draw GFLOP/s against size to this PNG"
    )
    g = sub.add_parser(
        "grade",
        help="grade a class's submissions for one step (instructors)",
        description="Grade every submission in SUBMISSIONS_DIR for one step with the "
        "notebooks' tests and points: nbgrader's submitted/<student>/<assignment>/ layout, "
        "<student>.ipynb or <student>.cu files, or <student>/ folders holding one. Only "
        "the kernel cell of a notebook is read; no learner Python runs. Each submission "
        "runs in its own processes with time limits; each student's grade is saved as it "
        "comes (a JSON file with the feedback, and a row of the CSV) in the class's own "
        "gradebook, beside its folder: <folder>.grades/<step>/ (the folder is "
        "SUBMISSIONS_DIR, or its submitted/). A rerun grades only students whose kernel, "
        "or the grader (its code, the rubric, grading.json), changed; the CSV keeps every "
        "student ever graded. A run that would lose or mix grades is refused before it "
        "changes anything. Exit 0 when every submission was graded, 1 when some were not "
        "(interrupted: run it again), 2 bad usage or refused.",
    )
    g.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR")
    g.add_argument("--assignment", required=True, metavar="STEP", help=f"the step: {steps}")
    g.add_argument(
        "--out",
        type=Path,
        metavar="F.csv",
        help="the grades, one row per student (default: <folder>.grades/<step>/grades.csv)",
    )
    g.add_argument(
        "--json",
        type=Path,
        metavar="DIR",
        help="one feedback file per student, the record the CSV is built from "
        "(default: <folder>.grades/<step>/feedback/)",
    )
    g.add_argument(
        "--gpus",
        metavar="LIST",
        help="GPUs to grade on: 'all' (default) or numbers like 0,1",
    )
    g.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="submissions graded at once on each GPU; each timing still has its GPU to "
        f"itself (default: one per {batch.CORES_PER_WORKER} CPU cores this process may use, "
        f"at most {batch.MAX_WORKERS_PER_GPU})",
    )
    g.add_argument(
        "--backend",
        choices=("auto", "gpu", "cpu"),
        default="auto",
        help="gpu, or cpu (correctness only: the speed test scores zero); default auto",
    )
    g.add_argument(
        "--force",
        action="store_true",
        help="regrade every student, even those whose grade is current, and replace GPU "
        "grades on the CPU",
    )
    g.add_argument(
        "--timeout",
        type=float,
        default=grading.Options.case_timeout_s,
        metavar="S",
        help="seconds one test case may run before it counts as a hang (default: %(default)g)",
    )
    g.add_argument(
        "--timings",
        type=int,
        default=1,
        metavar="N",
        help="time each kernel N times and judge the median; the summary reports the "
        "spread and the verdicts a single timing could have flipped (default: 1)",
    )
    g.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="grade only the K-th of N shares of the class and write no CSV "
        "(a Slurm array task; --merge writes the CSV afterwards)",
    )
    g.add_argument(
        "--merge",
        action="store_true",
        help="grade nothing: rebuild the CSV from the feedback files (after --shard runs)",
    )
    g.add_argument("--quiet", action="store_true", help="no progress bar")

    r = sub.add_parser(
        "report",
        help="rebuild a class's report from its gradebook (instructors)",
        description="Rebuild, from the feedback files of GRADEBOOK (<folder>.grades/<step>/, "
        "as grade writes it), the class report GRADEBOOK/report.html (each test's pass rate, "
        "the points, what the class got wrong by diagnosed cause with who, the verified "
        "speeds per GPU, who was not graded and why) and a page per student to hand back, "
        "GRADEBOOK/students/<student>.html. grade and grade --merge do it after grading. "
        "Each page is one file that needs no network.",
    )
    r.add_argument("gradebook", type=Path, metavar="GRADEBOOK")

    pr = sub.add_parser(
        "profile",
        help="read a kernel's hardware counters with Nsight Compute",
        description="Run each step's kernel (or FILE) once at SIZE under Nsight Compute (ncu, "
        "with the clocks left alone) and print DRAM bytes, L1/L2 hit rates, shared-memory bank "
        "conflicts, achieved occupancy and the top stall reasons; merge them into "
        "book/data/profile_<gpu>.csv.",
    )
    pr.add_argument(
        "steps", nargs="*", metavar="STEP|FILE", help="steps or .cu files (default: the ladder)"
    )
    pr.add_argument("--size", default="4096", metavar="SIZE", help="N or MxNxK (default 4096)")
    pr.add_argument("--no-csv", action="store_true", help="print only; write no data")

    cl = sub.add_parser(
        "clocks",
        help="how much of a launch timed from the host is the host's",
        description="Time an empty kernel and cuBLAS at a few shapes three ways: CUDA events "
        "around a launch from Python, the stream held while the launch is queued (how bench "
        "and grading time), and a CUDA graph per launch (GPU time only); write "
        "book/data/clocks_<gpu>.csv.",
    )
    cl.add_argument("--no-csv", action="store_true", help="print only; write no data")

    t = sub.add_parser(
        "tune",
        help="search a step's tile parameters on this GPU",
        description="Try every combination of a step's candidate tile parameters "
        "(autograder/ladder/registry.py): reject those that break the kernel's rules or a T4's "
        "limits before compiling, drop those that spill, check the rest on small shapes and "
        "time them against cuBLAS. Writes every configuration's verdict to a CSV and the "
        "best to a JSON file, and prints how to use it. For step 09, time every plan (tile "
        "shape and layers of K) on one shape per class and write the dispatcher's table "
        "(autograder/run/by_shape.py). Needs a GPU, except with --dry-run.",
    )
    tunable = [s.id for s in registry.STEPS if s.tuning or s.contract == "reduce"]
    t.add_argument(
        "step",
        metavar="STEP",
        help=f"the step to tune: {', '.join(tunable[:-1])} or {tunable[-1]}",
    )
    t.add_argument(
        "--size", default="4096", metavar="SIZE", help="N or MxNxK to time at (default: 4096)"
    )
    t.add_argument(
        "--dry-run",
        action="store_true",
        help="list the configurations and why some are rejected before compiling; no GPU needed",
    )
    t.add_argument(
        "--budget",
        type=float,
        default=240,
        metavar="SECONDS",
        help="stop timing new configurations after this long (default: 240)",
    )
    t.add_argument(
        "--out",
        type=Path,
        metavar="STEM",
        help="write STEM.csv and STEM.json (default: book/data/tune_<step>_<gpu>)",
    )
    a = sub.add_parser(
        "sass",
        help="count the instructions of a step's main loop in its machine code (no GPU needed)",
        description="Compile a step's kernel (kernels/, with the registry's parameters) with "
        "NVRTC, disassemble it with nvdisasm, and count the instructions of its main loop (the "
        "loop with the most FFMAs): FFMA, LDS, LDS.64, LDS.128, LDG, STS, BAR and the rest, per "
        "iteration, per value of k and per FFMA; with registers, spills, shared memory and the "
        "theoretical occupancy. Needs no GPU; needs nvdisasm (pip install nvidia-cuda-nvdisasm).",
    )
    a.add_argument(
        "steps",
        nargs="*",
        metavar="STEP",
        help="steps to count (default: every CUDA step): " + steps + "; and beyond: " + beyond,
    )
    a.add_argument(
        "--arch",
        action="append",
        help=f"architecture, e.g. {', '.join(ARCHS)}; may be repeated (default: sm_90)",
    )
    a.add_argument("--markdown", action="store_true", help="print the table the book shows instead")
    m = sub.add_parser(
        "mutants",
        help="measure the checker's feedback on every single-point mutant of a kernel",
        description="Change each step's exercise region (or, with --others, every function "
        "body of the kernels DIR/others.json lists) in every single-point way the rules of "
        "autograder/judge/edits.py give, check each mutant as a learner's kernel is checked, "
        "and count: compile errors, killed, equivalent (the same PTX as the kernel), survived, "
        "localized (the first cause names the changed line), wrong leads (it names another "
        "line) and one cause per mutant. Writes one row per mutant to a CSV and prints a table.",
    )
    m.add_argument("steps", nargs="*", metavar="STEP", help="steps to mutate (default: 01 to 09)")
    m.add_argument("--others", type=Path, metavar="DIR", help="mutate the kernels DIR/others.json lists")
    m.add_argument("--backend", choices=("cpu", "gpu"), default="cpu", help="where to check them (default: cpu)")
    m.add_argument("--sample", type=int, default=0, metavar="N", help="N mutants of each kernel, spread evenly (default: all)")
    m.add_argument("--jobs", type=int, default=0, metavar="J", help="mutants checked side by side (default: half the cores)")
    m.add_argument("--out", type=Path, metavar="CSV", help="where to write the rows (default: book/data/mutants_<backend>.csv)")
    m.add_argument("--judge", action="store_true", help="check nothing: judge the survivors of --out's rows again, after book/data/mutants_judged.csv gained rows")
    n = sub.add_parser(
        "notebooks",
        help="rebuild the exercise notebooks (instructors)",
        description="Build solutions/ from kernels/ and autograder/course/assignments.py, then "
        "exercises/ with nbgrader generate_assignment. Needs nbgrader. With --repository "
        "and --release, first set the course's public home in _config.yml: every notebook's "
        "Open in Colab badge and chapter link then point at that release. (A notebook runs "
        "without them: its setup cell carries the course.)",
    )
    n.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if solutions/ or exercises/ differ from a build",
    )
    n.add_argument(
        "--repository",
        metavar="URL",
        help="the course's public GitHub repository, https://github.com/OWNER/NAME",
    )
    n.add_argument(
        "--release",
        metavar="TAG",
        help="the git tag (or commit) of that repository the notebooks fetch and link to",
    )
    return p


def _notebooks(args) -> int:
    from . import notebooks, repository

    moved = args.repository is not None or args.release is not None
    if args.check and moved:
        raise ValueError("--check changes nothing: give --repository or --release without it")
    if moved:
        home = repository.write(args.repository, args.release)
        print(f"_config.yml: the course is {home.url} at {home.release}")
    if args.check:
        stale = notebooks.differences()
        for path in stale:
            print(f"out of date: {path}")
        if stale:
            print("rebuild with: python -m autograder notebooks")
        return WRONG if stale else OK
    notebooks.build()
    print("solutions/ and exercises/ rebuilt")
    return OK


def _compile(args) -> int:
    for path in args.files:
        source = path.read_text()
        names = [args.kernel] if args.kernel else list(global_kernels(source)) or [None]
        resolved = [resolve(source, path.name, name, args.like) for name in names]
        too_new = [step for _, step in resolved if step and not step.runs_on(args.arch)]
        if too_new:
            print(f"skipped {path.name}: {too_new[0].name} needs {too_new[0].needs}")
            continue
        result = compiler.compile_for_arch(
            source, [expr for expr, _ in resolved], args.arch, path.name
        )
        for expr, step in resolved:
            resources = result.resources[expr]
            print(resources)
            threads = step.geometry.threads if step else 1
            for problem in resources.problems(threads):
                print(f"  warning: {problem}")
            if step and resources.limits_arch == args.arch:
                occupancy = resources.occupancy(threads, step.geometry.shared_bytes)
                print(f"  occupancy with {threads} threads per block: {occupancy}")
    return OK


def _check(args) -> int:
    from .. import judge
    from ..judge import checker

    spec = from_file(
        args.file,
        kernel=args.kernel,
        like=args.like,
        block=args.block,
        tile=args.tile,
        rows_on=args.rows_on,
    )
    backend = backends.resolve(args.backend)
    if backend == "gpu":
        gpu.require("check")
    elif args.backend == "auto":
        reason = gpu.unavailable_reason()
        print(f"No GPU ({reason}): checking correctness on the CPU; timings need a GPU.")
    print(f"{spec.label}: {spec.geometry.describe()}")
    if spec.contract == "reduce":
        print(
            "  run inside the whole GEMM: step 08's kernel splits K into 2 to 4 layers of "
            "partial products on every shape, and this kernel adds them into C"
        )
    shapes = checker.SMALL if args.quick else checker.SUITE
    report = judge.check(spec, shapes=shapes, seed=args.seed, backend=backend)
    print(report.text(verbose=args.verbose))
    return OK if report.ok else WRONG


def _bench(args) -> int:
    from ..measure import ablation, bench
    from ..run import autotune
    from ..run.kernel import KernelSpec

    if (args.sweep or args.outside) and args.sizes:
        raise ValueError("give --sweep or --sizes, not both (--outside is shapes of its own too)")
    if args.ablation and (args.sweep or args.outside or len(args.steps) > 1):
        raise ValueError("--ablation times one step's variants: give at most one STEP, no --sweep")
    shaped = args.sweep or args.outside
    steps = [registry.step(s) for s in args.steps] or (
        [registry.STEPS[-1]] if shaped else list(registry.STEPS)
    )
    if args.first_use and not any(s.contract == "reduce" for s in steps):
        raise ValueError("--first-use is step 09's: give 09 among the STEPs")
    sizes = (
        (bench.sweep_sizes() if args.sweep else []) + (bench.outside_sizes() if args.outside else [])
        if shaped
        else args.sizes or (ablation.SIZES if args.ablation else bench.DEFAULT_SIZES)
    )
    for s in sizes:
        bench.parse_size(s)  # a typo is reported before anything runs
    ablated = steps[0].id if args.steps else ablation.STEP
    if args.ablation:
        specs = ablation.specs(ablated)
    else:
        specs = {s.name: KernelSpec.from_step(s) for s in steps}  # and a step with no kernel
    gpu.require("bench")
    if args.first_use:
        first_use = bench.FirstUse({})
        with bench.first_use_cache():
            rows = bench.bench(specs, sizes, first_use=first_use)
    else:
        first_use, rows = None, bench.bench(specs, sizes, paths_raced=not args.ablation)
    print(bench.sweep_table(rows) if shaped else bench.table(rows))
    if first_use is not None:
        tuned = "" if autotune.enabled() else f" ({autotune.ENV}=0: untuned rule)"
        print(f"{first_use}{tuned}")
    kind = "sweep" if shaped else ablation.kind(ablated) if args.ablation else "bench"
    if args.first_use:
        kind += "_first_use" if autotune.enabled() else "_untuned"
    path = bench.write_csv(rows, args.csv or bench.default_csv_path(rows, kind))
    print(f"results merged into {path}")
    if args.plot:
        print(f"plot written to {bench.plot(rows, args.plot)}")
    return OK


def _clocks(args) -> int:
    from ..measure import clocks

    rows = clocks.measure()
    print(clocks.table(rows))
    if not args.no_csv:
        print(f"wrote {clocks.write_csv(rows)}")
    return OK


def _profile(args) -> int:
    from ..measure import profile
    from ..measure.bench import parse_size
    from ..run.kernel import KernelSpec

    parse_size(args.size)  # a typo is reported before anything runs
    gpu.require("profile")
    targets = {}
    for key in args.steps or [s.id for s in registry.STEPS]:
        if key.endswith(".cu"):
            targets[Path(key).name] = from_file(key)
        else:
            step = registry.step(key)
            targets[step.name] = KernelSpec.from_step(step)
    profiles = []
    for name, spec in targets.items():
        with isolation.scratch() as scratch:
            profiles.append(profile.profile(name, spec, args.size, scratch))
    print(profile.table(profiles))
    if not args.no_csv:
        info = gpu.device_info()
        versions = f"CUDA {info.cuda}, CuPy {info.cupy}, {profile.ncu_version()}"
        print(f"merged into {profile.write_csv(profiles, info.name, versions)}")
    return OK


def _grade(args) -> int:
    from ..grade.gradebook import Gradebook
    from . import report

    step = registry.step(args.assignment)
    if not step.is_cuda:
        raise ValueError(f"{step.name} is graded in its notebook (nbgrader), not by grade")
    if not any(a.step == step.id for a in ASSIGNMENTS):
        raise ValueError(f"{step.name} is a bonus kernel, not a graded exercise")
    book = Gradebook.of(args.submissions, step, args.out, args.json)
    if args.merge:
        rows, missing = batch.merge(args.submissions, step, book)
        print(f"{rows} students written to {book.csv_path}")
        print(f"the class's report: {report.write(book, missing)}")
        if missing:
            print(f"not graded yet: {', '.join(missing)} (run grade again to finish)")
        return WRONG if missing else OK
    backend = backends.resolve(args.backend)
    if backend == "gpu":
        gpu.require("grading on the GPU")
    else:
        isolation.require("grading on the CPU")
    gpus = batch.visible_gpus(args.gpus) if backend == "gpu" else None
    where = "the CPU (one worker; no timings: speed scores zero)"
    workers = args.workers or batch.workers_per_gpu(len(gpus or []))
    if gpus:
        where = f"GPUs {','.join(gpus)}, {workers} worker{'s' * (workers > 1)} each"
    print(f"grading {step.name} from {args.submissions} on {where}")
    options = grading.Options(backend, args.timeout, args.timings)
    summary = batch.run(
        args.submissions,
        step,
        book,
        options,
        gpus,
        force=args.force,
        part=args.shard,
        write_csv=not args.shard,
        progress=not args.quiet,
        workers=workers,
    )
    print(summary)
    grades = "" if args.shard else f", grades in {book.csv_path}"
    print(f"feedback in {book.feedback_dir}/{grades}")
    if not args.shard:  # the shards' merge writes it, with every shard's grades
        try:
            print(f"the class's report: {report.write(book, summary.not_graded)}")
        except KeyboardInterrupt:  # every grade is kept; only the report is left to write
            print(f"interrupted: the report was not written; python -m autograder report "
                  f"{book.feedback_dir.parent} writes it")  # fmt: skip
            return WRONG
    return WRONG if summary.not_graded else OK


def _report(args) -> int:
    from . import report

    path = report.write(report.gradebook_of(args.gradebook))
    print(f"the class's report: {path}, a page per student in {path.parent / report.PAGES}/")
    return OK


def _tune(args) -> int:
    from ..measure import bench, tune

    step = registry.step(args.step)
    if step.contract == "reduce":
        return _tune_plans(args)
    size = bench.parse_size(args.size)
    if args.dry_run:
        print(tune.dry_run_report(step, tune.candidates(step)))
        return OK
    try:
        search = tune.run(step, size, args.budget)
    except tune.TimingFailed as e:
        print(f"tune: {e}", file=sys.stderr)
        return WRONG
    csv_path, json_path = tune.default_paths(search)
    if args.out:
        csv_path, json_path = args.out.with_suffix(".csv"), args.out.with_suffix(".json")
    print(tune.summary(search))
    print(f"every configuration: {tune.write_csv(search, csv_path)}")
    if search.best:
        print(f"the best: {tune.write_json(search, json_path)}")
    return OK if search.best else WRONG


def _tune_plans(args) -> int:
    """tune 09: the dispatcher's table for this GPU."""
    from ..ladder import hardware
    from ..measure import tune_plans
    from ..run import by_shape

    if args.dry_run:
        if gpu.unavailable_reason():
            where, sms = "an H100 SXM", hardware.GPUS["H100 SXM"]["sms"]
        else:
            info = gpu.device_info()
            where, sms = info.name, info.sms
        print(f"the plans tune 09 would time on {where} ({sms} SMs):")
        for cls in tune_plans.classes():
            shape = by_shape.measured_shape(cls, sms)
            plans = tune_plans.candidates(shape, sms)
            layers = sorted({p.splits for p in plans})
            where = ", ".join("x".join(map(str, s)) for s in by_shape.sample_shapes(cls, sms))
            print(
                f"  {'x'.join(map(str, shape)):<18} {len(plans):3d} plans: "
                f"{len(by_shape.CHOICES)} tile shapes, K in {', '.join(map(str, layers))} layers"
                f" here; timed at {where}"
            )
        return OK
    table, timings = tune_plans.run()
    print(tune_plans.summary(table, timings))
    json_path, csv_path = tune_plans.write(table, timings)
    print(f"every timing: {csv_path}\nthe table the dispatcher reads on this GPU: {json_path}")
    return OK if table.plans else WRONG


def _sass(args) -> int:
    from ..measure import sass

    archs = args.arch or ["sm_90"]
    steps = [registry.step(s) for s in args.steps] or sass.gemm_steps()
    no_loop = [s.name for s in steps if s not in sass.gemm_steps()]
    if no_loop:
        raise ValueError(
            f"{', '.join(no_loop)} has no GEMM main loop to disassemble (step 00 is Python; "
            "step 09's kernel is split-K's reduction, which runs step 08's)"
        )
    if args.markdown:
        for step in steps:
            print(sass.markdown(step, archs), end="\n\n")
        return OK
    for step in steps:
        for arch in archs:
            if not step.runs_on(arch):
                print(f"skipped {step.name} on {arch}: it needs {step.needs}\n")
                continue
            print(sass.evidence(step, arch), end="\n\n")
    return OK


def _mutants(args) -> int:
    from ..measure import mutants

    if args.others:
        kernels = mutants.other_kernels(args.others)
    else:
        chosen = args.steps or [s.id for s in registry.STEPS if s.is_cuda and s.id <= "09"]
        kernels = mutants.step_kernels(chosen, lambda name: assignment(name).regions)
    out = args.out or mutants.default_path(args.backend, bool(args.others))
    if args.judge:
        rows = mutants.judge_survivors(mutants.read(out), kernels)
    else:
        rows = mutants.run(kernels, args.backend, args.jobs or mutants.default_jobs(), args.sample)
    mutants.write(rows, out)
    print(mutants.table(rows))
    print(f"rows: {out}")
    return OK


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    run = {
        "mutants": _mutants,
        "compile": _compile,
        "check": _check,
        "bench": _bench,
        "notebooks": _notebooks,
        "grade": _grade,
        "report": _report,
        "tune": _tune,
        "profile": _profile,
        "sass": _sass,
        "clocks": _clocks,
    }[args.command]
    try:
        return run(args)
    except compiler.CompileError as e:
        print(e, file=sys.stderr)
    except (
        sass.DisassemblerUnavailable,
        sass.NoMainLoop,
        gpu.NoGPU,
        compiler.NvrtcUnavailable,
        SpecError,
        BackendUnavailable,
        GraderFault,
        isolation.IsolationUnavailable,
        ProfilerUnavailable,
        HoldFailed,
        Throttled,
        Noisy,
    ) as e:
        print(f"{args.command}: {e}", file=sys.stderr)
    except OSError as e:
        print(f"{args.command}: cannot read {e.filename}: {e.strerror}", file=sys.stderr)
    except (KeyError, ValueError) as e:
        print(f"{args.command}: {e.args[0] if e.args else e}", file=sys.stderr)
    return UNUSABLE
