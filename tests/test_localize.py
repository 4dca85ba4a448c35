"""A learner's mistake gets its cause and its line, found by evidence (judge.localize).

The five mistakes here are one line each of step 05, none of them a pattern the
checker was written for (issue 47 found each worded wrongly: a race, a bound, or
no cause at all). Each must give one cause, of the right kind, naming the line the
mistake is on; the reference beside them gets none. The CPU backend's diagnostic
builds are checked on their own too: the races, floats without a value and
endless loops they name, and the reference kernels they must pass.
"""

import ctypes
from dataclasses import replace

import numpy as np
import pytest
from planted import planted, planted_all

from autograder import KernelSpec, judge
from autograder.judge import aligned, checker, edits, localize, mutant_schema, suspects, trials
from autograder.judge.causes import by_cause
from autograder.judge.checker import SMALL, Shape
from autograder.ladder import registry
from autograder.run import cpu
from autograder.run.syntax import Source


def check(spec, backend="cpu"):
    return judge.check(spec, shapes=SMALL, backend=backend)


# (old, new) in kernels/05_blocktiling_2d.cu, the line it is on, and what the cause says.
MISTAKES = {
    "accumulators never zeroed": (
        ("float acc[TM][TN] = {{0.0f}};", "float acc[TM][TN];"), 29, "has no initial value"
    ),
    "beta added instead of beta times the old C": (
        ("+ beta * C[row * N + col];", "+ beta;"), 82, "C's old value is used wrongly"
    ),
    "the column bound compared against M": (
        ("col < N) {", "col < M) {"), 81, "uses M where it should use N"
    ),
    "A's bound on K without the slice's offset": (
        ("&& k0 + c < K;", "&& c < K;"), 40, "lacks a term"
    ),
    "the thread's column without its factor TN": (
        ("Bs[k][threadCol * TN + n]", "Bs[k][threadCol + n]"), 60, "lacks a factor"
    ),
}  # fmt: skip


# (old, new) in kernels/09_by_shape.cu, step 09's reduction, and what the cause says. Its
# repairs run the reduction alone, on layers drawn at random (judge.trials.Layers).
REDUCTION_MISTAKES = {
    "the loop over the layers starts at 1": (
        ("for (int s = 0; s < splits; ++s)", "for (int s = 1; s < splits; ++s)"), "is off"
    ),
    "the bounds joined by && (threads past C's last column go on)": (
        ("if (row >= M || col >= N)", "if (row >= M && col >= N)"), "is the wrong one"
    ),
    "an element of each layer one past its own": (
        ("partial[s * layer + i]", "partial[s * layer + i + 1]"), "has a term too many"
    ),
    "alpha times the old C": (
        ("? beta * C[i]", "? alpha * C[i]"), "uses alpha for beta"
    ),
    # No single-point rule turns N into the local `layer`; the step's statement, one
    # token apart, does, and the message names the learner's token, not the step's.
    "each layer N floats after the one before, not M * N": (
        ("partial[s * layer + i]", "partial[s * N + i]"), "should not use N there"
    ),
    # A reduction written for the number of layers it was tried with: the size the
    # contract gives it is named, not "a constant".
    "four layers, whatever splits is": (
        ("s < splits; ++s)", "s < 4; ++s)"), "uses 4 where it should use splits"
    ),
}  # fmt: skip


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("name", REDUCTION_MISTAKES)
def test_a_one_line_mistake_in_the_reduction_gets_one_cause_that_names_its_line(name, backend):
    (old, new), said = REDUCTION_MISTAKES[name]
    spec = planted("09", old, new)
    line = 1 + spec.source[: spec.source.index(new)].count("\n")
    causes = by_cause(check(spec, backend).cases)
    assert len(causes) == 1, [str(c) for c in causes]
    assert causes[0].diagnosis.line == line and said in str(causes[0]), str(causes[0])


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_reduction_that_reads_c_where_beta_is_0_is_told_so_at_its_line(backend):
    # As steps 01 to 07 compute it, and right while C is finite: step 09 leaves C unread
    # where beta = 0 (BLAS lets C hold anything then), and its checker's C is infinity.
    new = "C[i] = alpha * sum + beta * C[i];"
    spec = planted("09", "C[i] = alpha * sum + (beta != 0.0f ? beta * C[i] : 0.0f);", new)
    line = 1 + spec.source[: spec.source.index(new)].count("\n")
    report = check(spec, backend)
    assert all(c.ok for c in report.cases if c.beta), str(report)
    (cause,) = by_cause(report.cases)
    assert cause.diagnosis.line == line, str(cause)
    assert "the kernel reads C although beta = 0" in str(cause), str(cause)


def test_a_loop_bound_written_otherwise_than_the_steps_is_put_as_the_step_has_it():
    # `s < 2` for `s < splits`: no rule changes a constant into a name, but the step's
    # own loop condition does (judge.aligned), and the cases' account of the layers
    # stays in the message. The CPU backend runs the failing cases' plans again when it
    # looks for a race: in other layers of K, C would change, and read as one.
    spec = planted("09", "s < splits", "s < 2")
    report = check(spec)
    (cause,) = by_cause(report.cases)
    line = 1 + spec.source[: spec.source.index("s < 2")].count("\n")
    assert cause.diagnosis.line == line, str(cause)
    assert "C holds the sum of the first 2 only" in str(cause), str(cause)
    assert not any(checker.RACED in c.message for c in report.failures), str(report)


def test_a_bound_missing_from_the_reduction_is_put_back_where_it_was():
    # The step's `if (...) return;` put back (judge.aligned), though the learner's kernel
    # has no `if` and no `return` left: the names a statement needs are its identifiers.
    bound = "  if (row >= M || col >= N) return;\n"
    spec = planted("09", bound, "")
    before = registry.step("09").source().split(bound)[0].count("\n")  # the line above it
    (cause,) = by_cause(check(spec).cases)
    assert f"a statement the step needs is missing next to 09_by_shape.cu:{before}" in str(cause)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("name", MISTAKES)
def test_a_one_line_mistake_gets_one_cause_that_names_its_line(name, backend):
    # On a GPU too: the cases run there, the evidence comes from the CPU backend.
    (old, new), line, said = MISTAKES[name]
    report = check(planted("05", old, new), backend)
    causes = by_cause(report.cases)
    assert len(causes) == 1, str(report)
    diagnosis = causes[0].diagnosis
    assert diagnosis.line == line, str(report)
    assert said in str(diagnosis), str(report)
    assert f"05_blocktiling_2d.cu:{line}" in str(diagnosis), str(report)
    assert "race" not in str(diagnosis), str(report)


@pytest.mark.parametrize("step, old, new, line", [
    # A block's index left out of a product: the factor added back is blockIdx.x.
    ("02", "blockIdx.x * blockDim.x + threadIdx.x", "blockDim.x + threadIdx.x", 16),
    # A float left out of what a sum adds (acc[m] += a where acc[m] += a * b belongs).
    ("04", "As[threadRow * TM + m][k] * b", "As[threadRow * TM + m][k]", 57),
])  # fmt: skip
def test_a_factor_left_out_is_found_where_the_mutants_once_found_none(step, old, new, line):
    causes = by_cause(check(planted(step, old, new)).cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == line, [str(c) for c in causes]
    assert "lacks a factor" in str(causes[0].diagnosis)


A_TILE_LOAD = "    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;\n"


@pytest.mark.parametrize("old, new, line, said", [
    # No single-point rule adds a statement; the step's own, where the kernel aligns, does.
    # Named next to the statement that follows where it belongs (Bs's load).
    (A_TILE_LOAD, "\n", 31, "a statement the step needs is missing next to"),
    (A_TILE_LOAD, "", 30, "a statement the step needs is missing next to"),  # the line gone
    # Two slips in one statement: no single-point rule repairs both.
    ("acc += As[ty][k] * Bs[k][tx];", "acc += As[k][ty] * Bs[tx][k];", 36,
     "is not what the step needs there"),
])  # fmt: skip
def test_a_statement_missing_or_written_otherwise_is_found_by_aligning_with_the_step(
    old, new, line, said
):
    causes = by_cause(check(planted("03", old, new)).cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == line, [str(c) for c in causes]
    assert said in str(causes[0].diagnosis), str(causes[0].diagnosis)


@pytest.mark.parametrize("step, old, new, line, said", [
    # A barrier added at 32, 33 or 36 makes every case pass; 32 is where it was dropped.
    ("03", "__syncthreads();  // the tiles are complete", ";  // the tiles are complete", 32,
     "a __syncthreads() is missing at 03_smem_tiling.cu:32"),
    # Rows of A's tile over the wrong stride: the loop's bound (101) could make up for it.
    ("06", "const int r = (threadIdx.x + i * NUM_THREADS) / (BK / 4);",
     "const int r = (threadIdx.x + i * BM) / (BK / 4);", 102, "uses the wrong tile parameter"),
])  # fmt: skip
def test_of_repairs_on_several_lines_the_line_written_otherwise_than_the_step_is_named(
    step, old, new, line, said
):
    causes = by_cause(check(planted(step, old, new)).cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == line, [str(c) for c in causes]
    assert said in str(causes[0].diagnosis), str(causes[0].diagnosis)


def test_a_loop_left_out_whole_is_found_though_it_declares_what_it_uses():
    # The k loop of step 04 dropped, body and all: its `b` is declared inside it, so the
    # kernel without it has no `b`, and the step's loop is still a candidate.
    loop = registry.step("04").source()
    start = loop.index("    for (int k = 0; k < BK; ++k) {")
    end = loop.index("    // [docs:inner-end]")
    dropped = "    ;" + "\n" * loop[start:end].count("\n")
    causes = by_cause(check(planted("04", loop[start:end], dropped)).cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == 53, [str(c) for c in causes]


def test_only_a_kernel_that_reads_as_its_step_gets_the_steps_statements():
    step03 = cpu.preprocessed(KernelSpec.from_step(registry.step("03")))
    assert aligned.repairs(step03, step03) == []  # nothing differs: nothing to take
    dropped = step03.replace(A_TILE_LOAD, "\n")
    (restored,) = aligned.repairs(dropped, step03)
    assert restored.text.startswith(A_TILE_LOAD.strip()), restored
    # Another step's kernel does not read as step 03's: none of 03's statements is offered.
    assert aligned.repairs(cpu.preprocessed(KernelSpec.from_step(registry.step("05"))), step03) == []


def test_a_comparison_the_grammar_could_read_as_a_template_keeps_its_repairs():
    # `ty < K && col >= N` parses as ty<K && col> (a template's arguments) unless ty is
    # known for a variable: the line then had no comparison to repair.
    text = registry.step("03").source().replace("k0 + ty < K && col < N", "k0 + ty < K && col >= N")
    repairs = {e.before for e in edits.repairs(text) if e.operator == "relational"}
    assert {"k0 + ty < K", "col >= N"} <= repairs
    causes = by_cause(check(planted("03", "k0 + ty < K && col < N", "k0 + ty < K && col >= N")).cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == 31, [str(c) for c in causes]


@pytest.mark.gpu
def test_a_crash_whose_line_a_repair_confirms_leads_with_that_line_not_the_usual_advice():
    # k runs to BM: the GPU faults reading Bs past its end. "Check the bounds on M, N
    # and K in its loads and stores" would send the learner to the wrong lines.
    report = check(planted("04", "for (int k = 0; k < BK; ++k) {", "for (int k = 0; k < BM; ++k) {"), "gpu")
    said = "crashed with cudaErrorIllegalAddress: the kernel accessed memory outside what it was given; `k < BM` at 04_blocktiling_1d.cu:53"
    assert said in report.error and "check the bounds" not in report.error, report.error
    assert report.error.index(said) < report.error.index("on the CPU backend"), report.error


def test_the_reference_beside_them_gets_no_cause():
    report = check(KernelSpec.from_step(registry.step("05")))
    assert report.ok and not by_cause(report.cases), str(report)


def test_a_float_read_before_it_had_a_value_is_named_with_its_declaration():
    report = check(planted("05", *MISTAKES["accumulators never zeroed"][0]))
    said = str(by_cause(report.cases)[0])
    assert "read acc[0][0] before any value was stored in it" in said, said
    assert "acc, declared at 05_blocktiling_2d.cu:29" in said, said


def test_the_graders_own_numerics_print_nothing_into_the_report():
    # C all NaN (every accumulator without a value) once made mapping's all-NaN slice
    # warn, and the warning read as the kernel's own output.
    report = check(planted("05", *MISTAKES["accumulators never zeroed"][0]))
    assert not any("printed" in n or "Warning" in n for n in report.notes), report.notes


def test_an_index_past_the_end_of_a_threads_own_array_is_named():
    spec = planted("05", "for (int n = 0; n < TN; ++n) regN[n]", "for (int n = 0; n <= TN; ++n) regN[n]")
    report = check(spec)
    said = " ".join(c.message for c in report.failures)
    assert "regN[8], past the end of its own array regN[8] (8 elements)" in said, str(report)
    assert "05_blocktiling_2d.cu:60" in said, said


def test_a_bound_that_a_guard_elsewhere_would_hide_is_still_named():
    # `m <= TM` reads regM[8]; a condition added to the inner loop (n < TN && m < TM)
    # repairs it too, but a guard only hides the bound that line 63 gets wrong.
    spec = planted("05", "      for (int m = 0; m < TM; ++m) {\n#pragma unroll",
                   "      for (int m = 0; m <= TM; ++m) {\n#pragma unroll")  # fmt: skip
    causes = by_cause(check(spec).cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == 63, str(causes)
    assert "`m <= TM` at 05_blocktiling_2d.cu:63 is off by one" in str(causes[0])


def test_a_division_by_zero_fails_its_launch_not_the_process():
    # K / (K + 1) is 0, which the compiler cannot know.
    spec = planted("01", "acc += A[row * K + k] * B[k * N + col];",
                   "acc += A[row * K + k] * B[k * N + col] + row / (K / (K + 1));")  # fmt: skip
    report = check(spec)
    assert not report.ok and not report.error, str(report)
    said = " ".join(c.message for c in report.failures)
    assert "divided an integer by zero" in said, str(report)


def _prepared_in(conn, spec):
    conn.send(localize.prepare(spec, localize.Hints()).result(timeout=120) is not None)


def test_a_child_forked_after_a_build_builds_too():
    # A grader forked from a process that had built once (a class's workers, a test's)
    # waited for ever on a build handed to a thread that had not come with the fork.
    import multiprocessing

    spec = KernelSpec.from_step(registry.step("02"))
    assert localize.prepare(spec, localize.Hints()).result() is not None
    fork = multiprocessing.get_context("fork")
    parent, child = fork.Pipe()
    process = fork.Process(target=_prepared_in, args=(child, spec))
    process.start()
    built = parent.recv() if parent.poll(150) else None
    process.kill()
    process.join()
    assert built, "the forked child's build never ran"


@pytest.mark.parametrize("build", ["diagnose", "variants"])
@pytest.mark.parametrize("step", [s for s in registry.STEPS if s.id <= "08" and s.is_cuda],
                         ids=lambda s: s.name)  # fmt: skip
def test_every_reference_kernel_passes_the_diagnostic_builds(step, build, tmp_path):
    # No race, no float without a value, no endless loop where there is none.
    spec = KernelSpec.from_step(step)
    source = None
    if build == "variants":
        text = cpu.preprocessed(spec)
        source, _ = mutant_schema.schema(Source.parse(text), edits.repairs(text)[: localize.CAP])
    launch = cpu._launcher(spec, cpu.build(spec, build, source=source))
    rng = np.random.default_rng(0)
    for shape in (Shape(17, 19, 3), Shape(67, 131, 68), Shape(127, 129, 129)):
        result = checker.run_case(np, launch, shape, checker.BETA, rng)
        assert result.ok, result.message


def test_a_repair_that_loops_for_ever_is_stopped_by_its_budget():
    # k0 moves by 0: the loop over K never ends (a repair can do this to a kernel).
    spec = planted("03", "k0 += BS", "k0 += 0")
    library = cpu.build(spec, "variants", source=cpu.preprocessed(spec))
    configure = ctypes.CDLL(str(library)).cpu_configure
    configure.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    configure(-1, 0, 10_000, 0)
    result = checker.run_case(np, cpu._launcher(spec, library), Shape(17, 19, 3), 0.0,
                              np.random.default_rng(0))  # fmt: skip
    assert "ran far longer than the kernel as written" in result.message, result.message


# Step 05 with its outer product in a function that takes the registers as pointers, as
# siboehm's warptiling kernel does: each access through them is counted, 277 per k.
THROUGH_POINTERS = (
    ("// [docs:kernel]\n", "template <int TM, int TN>\n__device__ void outer(float* acc, "
     "const float* a, const float* b) {\n  for (int m = 0; m < TM; ++m)\n    for (int n = 0; "
     "n < TN; ++n)\n      acc[m * TN + n] = acc[m * TN + n] + a[m] * b[n];\n}\n"),
    ("for (int m = 0; m < TM; ++m) {\n#pragma unroll\n        for (int n = 0; n < TN; ++n) {\n"
     "          acc[m][n] += regM[m] * regN[n];\n        }\n      }",
     "outer<TM, TN>(&acc[0][0], regM, regN);"),
)  # fmt: skip


def test_a_kernel_that_reaches_its_registers_through_pointers_is_not_taken_for_endless():
    # Held to the rate of a kernel that uses its registers by name, the right kernel was
    # stopped as endless on a long K, and so was every repair of a mistake in it.
    spec = planted_all("05", *THROUGH_POINTERS)
    library = cpu.build(spec, "variants", source=cpu.preprocessed(spec))
    launch, configure = localize._loaded(spec, library)
    case = trials.Product.draw(Shape(64, 64, 4093), 0.0, np.random.default_rng(0))
    configure(-1, 0, localize._budget([case]), 0)
    assert not case.right(launch)
    rate = localize._rate(launch, configure, library, case)
    configure(-1, 0, localize._budget([case], rate), 0)
    assert rate > localize.RATE and case.right(launch), rate


@pytest.mark.parametrize("old, new, first, whole", [
    ("alpha * acc[m][n]", "alpha * acc[m][n]", True, True),  # the kernel as written
    ("alpha * acc[m][n]", "beta * acc[m][n]", False, False),  # wrong in every block
    # Wrong outside the first block only: the first look lets it by, the case does not.
    ("alpha * acc[m][n]", "alpha * acc[m][n] * (blockIdx.x + blockIdx.y + 1)", True, False),
])  # fmt: skip
def test_the_first_blocks_look_rejects_no_repair_that_the_whole_case_would_take(old, new, first, whole):
    # A repair runs the first block of its case alone before the whole case: judged on
    # what that block wrote, a right kernel must pass, or no repair would ever confirm.
    spec = planted("05", old, new)
    library = cpu.build(spec, "variants", source=cpu.preprocessed(spec))
    configure = ctypes.CDLL(str(library)).cpu_configure
    configure.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    launch = cpu._launcher(spec, library)
    case = trials.Product.draw(Shape(256, 384, 64), checker.BETA, np.random.default_rng(0))
    configure(-1, 0, 0, 1)
    assert case.right(launch, where_written=True) == first
    assert not case.right(launch)  # the other blocks never ran
    configure(-1, 0, 0, 0)
    assert case.right(launch) == whole


def test_every_mutant_keeps_the_kernels_lines():
    # Messages name the learner's lines: no change may move them.
    for step in ("03", "05", "08"):
        text = registry.step(step).source()
        source = Source.parse(text)
        for edit in edits.mutants(text):
            assert edit.apply(source).count("\n") == text.count("\n"), edit


def test_a_repair_switched_on_in_the_schema_computes_what_the_edited_kernel_does():
    # The schema holds every repair; switched on alone, one must run as the kernel
    # edited by it would (here: the repair of the column bound, which makes it right).
    spec = planted("05", *MISTAKES["the column bound compared against M"][0])
    text = cpu.preprocessed(spec)
    repairs = [r for r in edits.repairs(text) if r.line == 81 and r.swapped == ("M", "N")]
    schematized, candidates = mutant_schema.schema(Source.parse(text), repairs)
    library = cpu.build(spec, "variants", source=schematized)
    configure = ctypes.CDLL(str(library)).cpu_configure
    configure.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    launch = cpu._launcher(spec, library)
    fixed = [(site, choice) for site, choice, e in candidates if e.start > text.index("col < M")]
    assert len(fixed) == 1
    for switch, right in (((-1, 0), False), (fixed[0], True)):
        configure(*switch, 0, 0)
        result = checker.run_case(np, launch, Shape(257, 1, 33), 0.0, np.random.default_rng(0))
        assert result.ok == right, result.message


def test_the_split_k_gemm_runs_with_a_workstations_workers(monkeypatch):
    # Eight OS threads, two libraries (step 08's GEMM and the reduction) in one process:
    # their stacks once took more memory than the confined child may have.
    monkeypatch.setenv("SGEMM_CPU_WORKERS", "8")
    report = check(KernelSpec.from_step(registry.step("09")))
    assert report.ok, str(report)


# A kernel written as others write them, not as the course does: brace initialisers, a
# constant that sizes an array, a do-while loop, names declared after terms that use
# them, and no bounds (it is written for whole 16 x 16 tiles only).
OTHER_STYLE = """
#define TS 16
__global__ void other_style(int M, int N, int K, float alpha, const float *A,
                            const float *B, float beta, float *C) {
    const int per = TS * TS / (TS * TS);
    float staged[per];
    __shared__ float As[TS * TS], Bs[TS * TS];
    int col{blockIdx.x * TS + threadIdx.x};
    int row{blockIdx.y * TS + threadIdx.y};
    const int tx = threadIdx.x, ty = threadIdx.y;
    float acc{0.0f};
    int k0 = 0;
    do {
        staged[0] = A[row * K + k0 + tx];
        As[ty * TS + tx] = staged[0];
        Bs[ty * TS + tx] = B[(k0 + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < TS; ++k) acc += As[ty * TS + k] * Bs[k * TS + tx];
        __syncthreads();
        k0 += TS;
    } while (k0 < K);
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
"""


def other_style(old="", new=""):
    from autograder.run.kernel import from_source

    assert old in OTHER_STYLE
    spec = from_source(OTHER_STYLE.replace(old, new), "other_style.cu", kernel="other_style",
                       block=(16, 16), tile=(16, 16))  # fmt: skip
    return replace(spec, shapes=((16, 16, 16), (32, 48, 32), (48, 32, 48)))


def test_a_factor_the_kernel_multiplies_by_elsewhere_is_tried_before_any_other():
    # The store's row * N lost its row; the old C it reads still has row * N. Of the
    # dozen factors N could lack, that one is tried first: on a long kernel the rest
    # would push it past the repairs the search has time for.
    spec = other_style("C[row * N + col] = alpha", "C[N + col] = alpha")
    text = cpu.preprocessed(spec)
    order = localize._order(text, edits.repairs(text), localize.Hints(), "", spec)
    factors = [e.text for _, _, e in order if e.operator == "add factor" and e.before == "N"]
    assert factors[0] == "N * row", factors


def test_a_repair_that_makes_a_slipped_line_read_like_its_twin_is_tried_first(monkeypatch):
    # B's tile store took ty for tx; A's, on the line above, still reads `ty * TS + tx`.
    # Of the repairs on the line, the one that makes it read like its twin is tried
    # first of its rule's (one name for another, a rule that gives many: only a rule of
    # few comes before it), hundreds of repairs earlier than without the kernel's own
    # text to go by.
    spec = other_style("Bs[ty * TS + tx] = B", "Bs[ty * TS + ty] = B")
    text, right = cpu.preprocessed(spec), cpu.preprocessed(other_style())
    repairs = edits.repairs(text)
    twin = next(e for e in repairs if e.apply(Source.parse(text)) == right)

    def ranks():
        order = [e for _, _, e in localize._order(text, repairs, localize.Hints(), "", spec)]
        alike = [e for e in order if e.line == twin.line and e.operator == twin.operator]
        return alike.index(twin), order.index(twin)

    first_of_its_rule, rank = ranks()
    assert first_of_its_rule == 0
    monkeypatch.setattr(suspects, "Familiarity", lambda text: lambda edit: 0)
    assert ranks()[1] > rank + 300


def test_how_ordinary_a_repair_reads_is_judged_on_its_expression_not_its_statement():
    # Dropping a statement, or adding a barrier, leaves code around it that says
    # nothing of whether it belongs: neither scores. Making B's store read like A's does.
    spec = other_style("Bs[ty * TS + tx] = B", "Bs[ty * TS + ty] = B")
    text = cpu.preprocessed(spec)
    familiar = suspects.Familiarity(text)
    scores = {}
    for e in edits.repairs(text):
        if e.line == 16:
            scores.setdefault((e.operator, e.text.strip()), []).append(familiar(e))
    assert scores[("drop statement", ";")] == [0] and scores[("add barrier", edits.BARRIER)] == [0]
    best = max(max(v) for v in scores.values())
    assert best == max(scores[("variable", "tx")]) > 0


def test_repairs_on_two_lines_give_one_cause_that_lists_both_and_names_neither():
    # The store lost its alpha: alpha times the sum (line 22) or times each of its
    # products (line 18) makes every case pass, and nothing tells which was meant.
    spec = other_style("C[row * N + col] = alpha * acc + beta", "C[row * N + col] = acc + beta")
    causes = by_cause(judge.check(spec, backend="cpu").cases)
    assert len(causes) == 1 and causes[0].diagnosis.line is None, causes
    said = str(causes[0].diagnosis)
    assert "other_style.cu:22" in said and "other_style.cu:18" in said, said


def test_an_operator_that_binds_otherwise_is_repaired_as_the_text_reads():
    # alpha * acc + beta * C[...] written with * for its +: the text now multiplies all
    # four, and no operator of that tree gives the sum back; the token changed does.
    spec = other_style("alpha * acc + beta * C", "alpha * acc * beta * C")
    causes = by_cause(judge.check(spec, backend="cpu").cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == 22, [str(c) for c in causes]


def test_an_operator_is_named_on_its_own_line_of_an_expression_written_over_two():
    # beta + C[...] for beta * C[...], on the second line of the store: the line named
    # is the operator's, not the line the expression starts on.
    spec = other_style("alpha * acc + beta * C[row * N + col]",
                       "alpha * acc +\n                       beta + C[row * N + col]")
    causes = by_cause(judge.check(spec, backend="cpu").cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == 23, [str(c) for c in causes]


def test_a_factor_is_added_where_the_kernel_writes_its_own():
    # The kernel writes alpha first (alpha * acc[0]): the repair of the line that lost
    # it writes it so too, and reads like its twin above it.
    text = (
        "__global__ void k(float alpha, float beta, float *C) {\n"
        "    float acc[2] = {1.0f, 2.0f};\n"
        "    C[0] = alpha * acc[0] + beta * C[0];\n"
        "    C[1] = acc[1] + beta * C[1];\n"
        "}\n"
    )
    factors = [e.text for e in edits.repairs(text) if e.operator == "add factor" and e.line == 4]
    assert "alpha * acc[1]" in factors and "acc[1] * alpha" not in factors, factors
    familiar = suspects.Familiarity(text)
    ranked = sorted((e for e in edits.repairs(text) if e.operator == "add factor" and e.line == 4),
                    key=familiar, reverse=True)  # fmt: skip
    assert ranked[0].text == "alpha * acc[1]", [e.text for e in ranked]


LOOP = """__global__ void k(int n, float *x) {
    for (int i = 0;
         i <= n;
         ++i) {
        x[i] = 0.0f;
    }
}
"""


def test_a_loops_bound_and_its_step_are_one_statements_lines():
    source = Source.parse(LOOP)
    spans = {}
    for e in edits.repairs(LOOP):
        repair = localize.Repair(e.line, e.operator, e.before)
        spans.setdefault(e.line, set()).add(localize._in_statement(repair, source, e).statement)
    assert spans[3] == spans[4] == {(2, 4)}, spans
    assert (5, 5) in spans[5] and (2, 4) not in spans[5], spans


def test_repairs_on_two_lines_of_one_statement_name_the_first_tried_and_say_the_other():
    # A loop's bound (line 3) and its step (line 4) each make every case pass, and a
    # guard on line 2 would too: the statement is confirmed, its bound named.
    from autograder.judge import diagnosis

    repairs = (
        localize.Repair(2, "add condition", "i <= n", rank=0, statement=(2, 4)),
        localize.Repair(3, "relational", "i <= n", ("<=", "<"), rank=1, statement=(2, 4)),
        localize.Repair(4, "update", "++i", rank=9, statement=(2, 4)),
    )
    finding = localize.Finding("", True, repairs, 10, 100, 1.0)
    wrong = "every element of C is wrong"
    failing = [checker.CaseResult(Shape(4, 4, 4), 0.0, False, message=wrong)]
    [(cause, _)] = diagnosis.diagnose(failing, finding, "loop.cu")
    assert cause.line == 3, cause
    said = str(cause)
    assert "loop.cu:3 is off by one" in said and "so does one at loop.cu:4" in said, said
    elsewhere = tuple(replace(r, statement=(r.line, r.line)) for r in repairs)
    [(cause, _)] = diagnosis.diagnose(failing, replace(finding, repairs=elsewhere), "loop.cu")
    assert cause.line is None, cause


def test_a_kernel_that_stopped_has_its_cause_as_data_with_the_line_a_repair_confirmed():
    # A GPU crash ends the run with no failing case to group: the cause the CPU backend
    # found (what it saw, the line a repair confirmed, the repair's rule) is a Diagnosis
    # the grade records, as a failing case's is; without a repair, no line is named.
    from autograder.judge import diagnosis

    seen = ("thread (0, 0, 0) of block (0, 0, 0) indexed Bs[8][0], past the end of the "
            "shared array Bs[8][128] (1024 elements), at k.cu:61")  # fmt: skip
    repair = localize.Repair(56, "relational", "k <= BK", ("<=", "<"), statement=(56, 56))
    finding = localize.Finding(seen, True, (repair,), 10, 100, 1.0)
    cause = diagnosis.where_it_stopped(finding, "k.cu")
    assert (cause.kind, cause.line, cause.rule) == ("array", 56, "relational"), cause
    assert str(cause).startswith("the comparison `k <= BK` at k.cu:56 is off by one"), cause
    unrepaired = diagnosis.where_it_stopped(replace(finding, repairs=()), "k.cu")
    assert (unrepaired.kind, unrepaired.line, unrepaired.rule) == ("array", None, "")
    assert diagnosis.where_it_stopped(replace(finding, evidence="", repairs=()), "k.cu") is None


def test_a_mistake_in_a_macros_arguments_on_their_second_line_is_named_on_that_line():
    # The preprocessor expands AT(...) on its first line (17); the mistake is on the
    # second (18), and the message names the line the learner wrote it on.
    spec = other_style("Bs[ty * TS + tx] = B[(k0 + ty) * N + col];",
                       "Bs[ty * TS + tx] = AT(B,\n                           (k0 + ty) * M + col);")
    source = spec.source.replace("#define TS 16", "#define TS 16\n#define AT(p, i) (p)[i]")
    spec = replace(spec, source=source)
    causes = by_cause(judge.check(spec, backend="cpu").cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == 18, [str(c) for c in causes]


def test_every_repair_of_a_kernel_written_in_another_style_compiles_in_the_schema():
    # A repair the schema cannot hold is dropped with its whole line (localize.build):
    # here every line would have lost its own.
    spec = other_style()
    text = cpu.preprocessed(spec)
    source, _ = mutant_schema.schema(Source.parse(text), edits.repairs(text))
    cpu.build(spec, "variants", source=source)


@pytest.mark.parametrize("old, new, line, said", [
    ("* TS + threadIdx.x}", "* TS}", 8, "lacks a term"),  # in a brace initialiser
    ("(k0 + ty) * N", "(k0 + ty) * M", 16, "uses M where it should use N"),  # fails where M != N
    ("{blockIdx.x * TS", "{blockIdx.y * TS", 8, "takes the wrong thread or block index"),  # too
])  # fmt: skip
def test_a_kernel_written_for_whole_tiles_is_localized_within_its_own_shapes(old, new, line, said):
    # Its repairs are tried and confirmed on the shapes it is written for: on any other,
    # the kernel as it should be is wrong too, and no repair would ever be confirmed.
    report = judge.check(other_style(old, new), backend="cpu")
    causes = by_cause(report.cases)
    assert len(causes) == 1 and causes[0].diagnosis.line == line, str(report)
    assert said in str(causes[0].diagnosis), str(report)
    assert judge.check(other_style(), backend="cpu").ok


TWINS = """
__global__ void twins(int M, int N, int K, int lda, int ldb, const float *A, const float *B,
                      float *C) {
    int A_row = threadIdx.y, A_col = threadIdx.x;
    int B_row = threadIdx.y, B_col = threadIdx.x;
    float a = A[A_row * lda + A_col];
    float b = B[B_row * ldb + B_col];
    C[0] = a * b;
}
"""


def _twin_repairs(*changes: tuple[str, str]) -> list[edits.Edit]:
    """The twin repairs of line 7 (B's load) after `changes` (old, new) to TWINS."""
    from autograder.judge import twins
    from autograder.judge.scopes import Kernel

    text = TWINS
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    return [e for e in twins.repairs(Kernel.parse(text)) if e.line == 7]


DROPPED = ("B[B_row * ldb + B_col]", "B[ldb + B_col]")


def test_a_term_dropped_from_one_of_two_twins_is_given_back_in_its_own_names():
    # B's load lost `B_row *`, which the kernel writes nowhere else: A's load, aligned
    # with it, has it as A_row, and A_col standing for B_col says A_row reads B_row;
    # lda stands for ldb where the two align, whatever else they contain. Of a
    # declaration, the value is repaired (the schema of repairs keeps the name's scope).
    found = _twin_repairs(DROPPED)
    assert [(e.before, " ".join(e.text.split())) for e in found] == [
        ("B[ldb + B_col]", "B [ B_row * ldb + B_col ]")]
    assert found[0].swapped[1] == "6", "the message names the twin's line"


def test_a_twin_whose_names_the_statement_cannot_see_gives_no_repair():
    # With B_row never declared, A_row has no name to read as in B's load.
    assert not _twin_repairs(DROPPED, ("int B_row = threadIdx.y, B_col", "int B_col"))


@pytest.mark.parametrize("old, new, factor", [
    # A stride that lost its loop's counter: the counter is a factor a repair may add.
    ("B[i * N + col]", "B[N + col]", "N * i"),
    # A pointer's step that lost its factor: a step (+=) is a sum like any other.
    ("B += TS * N;", "B += N;", "N * TS"),
])  # fmt: skip
def test_a_factor_is_offered_back_where_the_kernel_wrote_none_like_it(old, new, factor):
    text = """
__global__ void f(int M, int N, int K, const float *A, const float *B, float *C) {
    constexpr int TS = 16;
    int col = blockIdx.x * TS + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        for (int i = 0; i < TS; ++i) acc += A[k0 + i] * B[i * N + col];
        B += TS * N;
    }
    C[col] = acc;
}
"""
    assert old in text
    offered = [e.text for e in edits.repairs(text.replace(old, new)) if e.operator == "add factor"]
    assert factor in offered, offered


@pytest.mark.parametrize("text, line", [
    # The step's own statement, put whole: it changes only the second line's index.
    ("copy4(&regN[wn * TN + n],\n      &Bs[k][warpCol * WN + wn * WSUBN + threadCol * TN + n]);", 160),
    # A change on both lines names neither alone: the statement's first line stays.
    ("copy4(&regN[n],\n      &Bs[k][warpCol * WN + wn * WSUBN + threadCol * TN + n]);", 159),
])  # fmt: skip
def test_a_statement_put_whole_over_two_lines_names_the_line_it_changes(text, line):
    before = "copy4(&regN[wn * TN + n],\n      &Bs[k][warpCol * WN + wn * WSUBN + n]);"
    edit = edits.Edit(0, len(before), text, 159, "replace statement", before, "statement")
    repair = localize.Repair(159, edit.operator, before)
    assert localize._where_it_changes(repair, edit).line == line


@pytest.mark.parametrize("mine, step, token", [
    ("sum += p[s * N + i];", "sum += p[s * layer + i];", ("N", "layer")),
    ("if (s <= n) x = 0;", "if (s < n) x = 0;", ("<=", "<")),  # the parser's tokens
    ("x = 1.0f * y;", "x = 2.0f * y;", ("1.0f", "2.0f")),
    ("sum += p[s * N + j];", "sum += p[s * layer + i];", ("", "")),  # two apart
    ("sum += p[N + i];", "sum += p[s * layer + i];", ("", "")),  # not one for one
])  # fmt: skip
def test_a_statement_one_token_from_the_steps_says_which(mine, step, token):
    from autograder.judge.scopes import Kernel

    def statement(body):
        k = Kernel.parse(f"__global__ void f(float* p, int N, int n) {{ {body} }}")
        block = next(n for n in k.source.root.named_children if n.type == "function_definition")
        return k, block.child_by_field_name("body").named_children[0]

    assert aligned._one_token(*statement(mine), *statement(step)) == token


def test_a_twins_name_no_pair_gives_is_read_by_the_letter_the_pairs_exchange():
    # A's tile store lost its row term. B's store has it with BN, a name no token of A's
    # statement pairs with; N standing for K in the global index says BN reads BK.
    from autograder.judge import twins
    from autograder.judge.scopes import Kernel

    text = """
__global__ void f(const float *A, const float *B, int K, int N) {
    const int BK = 8, BN = 128;
    __shared__ float As[64], Bs[64];
    int a_row = 0, a_col = 0, b_row = 0, b_col = 0;
    for (int i = 0; i < 8; ++i) { As[a_col] = A[(a_row + i) * K + a_col]; }
    for (int i = 0; i < 8; ++i) { Bs[(b_row + i) * BN + b_col] = B[(b_row + i) * N + b_col]; }
}
"""
    found = [" ".join(e.text.split()) for e in twins.repairs(Kernel.parse(text)) if e.line == 6]
    assert found == ["As [ ( a_row + i ) * BK + a_col ] = A [ ( a_row + i ) * K + a_col ] ;"]


def test_a_twin_never_subscripts_a_number():
    # b's value aligned with a's puts a's indices after k_i, a number: no repair reads
    # so (one did, on Lei Mao's kernel, and its build lost every repair of the kernel).
    from autograder.judge import twins
    from autograder.judge.scopes import Kernel

    text = """
__global__ void f(float *C) {
    __shared__ float T[4][4];
    int r = threadIdx.y, c = threadIdx.x, k_i = 0;
    float a{T[r][c]};
    float b{k_i};
    C[0] = a + b;
}
"""
    found = [" ".join(e.text.split()) for e in twins.repairs(Kernel.parse(text))]
    assert not [t for t in found if "k_i [" in t], found
