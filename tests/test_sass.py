"""The compiler's evidence: the main loop of every step's kernel, found in its SASS and
counted, on the T4's and the H100's architectures, with no GPU."""

import re
from pathlib import Path

import pytest

from autograder.course import cli
from autograder.ladder import registry
from autograder.measure import sass

ROOT = Path(__file__).resolve().parent.parent


def _disassembler_reason():
    try:
        sass.find_tool()
    except sass.DisassemblerUnavailable as e:
        return str(e)
    return None


needs_nvdisasm = pytest.mark.skipif(
    _disassembler_reason() is not None, reason=f"{_disassembler_reason()}"
)
CASES = [
    pytest.param(step, arch, id=f"{step.name}-{arch}")
    for step in sass.gemm_steps()
    for arch in sass.DEFAULT_ARCHS
    if step.runs_on(arch)
]
THREAD_TILED = [c for c in CASES if "TM" in c.values[0].params]


def test_the_pinned_disassembler_is_installed_and_found():
    learner = (ROOT / "requirements-learner.txt").read_text()  # requirements.txt includes it
    pins = dict(re.findall(r"^([\w.-]+)==(\S+)", learner, re.MULTILINE))
    assert sass.WHEEL in pins, f"requirements-learner.txt pins no {sass.WHEEL}"
    tool = sass.find_tool()  # CI installs requirements.txt: nvdisasm must be there
    if tool.where == f"the {sass.WHEEL} wheel":
        assert tool.version == pins[sass.WHEEL], (tool, pins[sass.WHEEL])
    # The same CUDA release as NVRTC, whose cubins it reads.
    assert pins[sass.WHEEL] == pins["nvidia-cuda-nvrtc"]


@needs_nvdisasm
@pytest.mark.parametrize(("step", "arch"), CASES)
def test_every_steps_main_loop_is_found_and_counted_per_k(step, arch):
    e = sass.evidence(step, arch)
    assert e.loop.math > 0 and not e.loop.nested, e.table()
    assert e.notes == (), e.table()
    for name in ("BK", "BS"):  # the main loop advances k0 by the K-slice parameter
        if name in step.params:
            assert e.k_per_iteration == step.params[name]
    if step.input_roundoff == 0:  # FP32: every k costs each element of C one FFMA
        geometry = step.geometry
        assert e.per_k("FFMA") == geometry.tile[0] * geometry.tile[1] / geometry.threads
    assert e.resources.spill_store_bytes + e.resources.spill_load_bytes == 0
    assert e.occupancy.blocks >= 1 and 0 < e.occupancy.fraction <= 1


@needs_nvdisasm
@pytest.mark.parametrize(("step", "arch"), THREAD_TILED)
def test_thread_tiled_steps_do_tm_times_tn_ffma_per_k(step, arch):
    p = step.params
    per_thread = p["TM"] * p.get("TN", 1)
    if "WM" in p:  # each thread holds WMITER x WNITER thread tiles of its warp's tile
        per_thread = p["WM"] * p["WN"] // 32
    ffma_per_k = sass.evidence(step, arch).per_k("FFMA")
    assert ffma_per_k == per_thread, f"{ffma_per_k} FFMA per k; the registry says {per_thread}"


@needs_nvdisasm
@pytest.mark.parametrize("rows", registry.block_rows(registry.step("12")))
def test_the_wgmma_step_multiplies_with_hgmma_fed_by_tma_copies(rows):
    """Step 12 on sm_90a, with blocks of each height it races: per slice of K, one
    64 x rows x 8 wgmma per 8 of k in each warp, and one TMA copy of A and one of B per 32
    of its columns (the producer's loop's, counted beside the consumers' main loop); no
    FFMA does its product."""
    step = registry.step("12").with_params(BM=rows)
    e = sass.evidence(step, "sm_90a")
    assert e.k_per_iteration == registry.WGMMA_BK
    assert e.loop.counts["HGMMA"] == registry.WGMMA_BK // 8, e.table()
    assert not e.loop.counts["FFMA"] and not e.loop.counts["UTMALDG"], e.table()
    assert e.copying and e.per_iteration("UTMALDG") == 1 + step.params["BN"] // 32, e.table()
    assert e.loop.opcodes[f"HGMMA.64x{rows}x8.F32.TF32"] == registry.WGMMA_BK // 8
    assert e.math_name == "HGMMA"
    assert e.resources.spill_store_bytes + e.resources.spill_load_bytes == 0


@needs_nvdisasm
@pytest.mark.parametrize("rows", registry.block_rows(registry.step("13")))
def test_the_3xtf32_step_issues_three_wgmmas_where_step_12_issues_one(rows):
    """Step 13 on sm_90a, with blocks of each height it races: per 8 of k, big x small,
    small x big and big x big, each over the block's rows; the same TMA copies as step 12
    (the small parts are made in shared memory); a slice's sums promoted into FP32
    registers by the FP32 lanes (an FADD for each of a thread's rows / 2 accumulators,
    one warpgroup-wide wait a slice). The loop counted is every block's first pass (its
    numbers split as they are: no scaling, no stop at the largest TF32 value), the
    shorter of the kernel's two, where each value of B a thread splits is noted (one
    FMNMX: 4 registers of each 8 of k)."""
    step = registry.step("13").with_params(BM=rows)
    e = sass.evidence(step, "sm_90a")
    assert e.k_per_iteration == registry.WGMMA_BK
    assert e.loop.opcodes[f"HGMMA.64x{rows}x8.F32.TF32"] == 3 * registry.WGMMA_BK // 8, e.table()
    assert e.loop.opcodes["FADD"] >= rows // 2, e.table()
    assert e.loop.opcodes["FMNMX"] == registry.WGMMA_BK // 8 * 4, e.table()
    assert not e.loop.opcodes["FMUL"], e.table()
    assert e.loop.opcodes["WARPGROUP.DEPBAR.LE"] == 1, e.table()
    assert e.copying and e.per_iteration("UTMALDG") == 1 + step.params["BN"] // 32, e.table()
    assert e.math_name == "HGMMA"
    assert e.resources.spill_store_bytes + e.resources.spill_load_bytes == 0


@needs_nvdisasm
def test_the_3xtf32_loop_is_found_whole_and_not_taken_for_an_fp32_product():
    """Step 13 is FP32-accurate, yet its product is on tensor cores: its loop is not
    compared with the elements of C each thread computes. The branch back from a
    barrier's retry, which the compiler places after the kernel's end, is no loop around
    both of its copies. The caption says what the evidence shows, in sentences."""
    e = sass.evidence(registry.step("13"), "sm_90a")
    assert not e.loop.nested and not e.loop.opcodes["EXIT"], e.table()
    assert e.notes == (), e.notes
    caption = sass.markdown("13", ("sm_90a",)).split("\n\n")[-1]
    assert "Note:" not in caption and "may not be" not in caption, caption


@needs_nvdisasm
def test_the_2d_tiled_loop_loads_shared_memory_with_lds128_only_on_the_h100():
    step = registry.step("blocktiling_2d")
    e = sass.evidence(step, "sm_90")
    shared = {k: e.loop.counts[k] for k in sass.SHARED_LOADS if e.loop.counts[k]}
    assert set(shared) == {"LDS.128"}, shared
    assert e.per_k("LDS.128") == step.params["TM"] / 4 + step.params["TN"] / 4


@needs_nvdisasm
def test_the_1d_tiled_loop_reads_a_along_k_as_float4_one_lds_for_b():
    step = registry.step("blocktiling_1d")
    TM = step.params["TM"]
    e = sass.evidence(step, "sm_90")
    assert e.per_k("LDS.128") == TM / 4 and e.per_k("LDS") == 1
    assert e.per_math(sass.SHARED_LOADS) == pytest.approx((TM / 4 + 1) / TM)  # 0.31 at TM = 16


@needs_nvdisasm
def test_the_book_table_names_its_sources_and_the_cli_prints_the_report(capsys):
    table = sass.markdown("blocktiling_2d")
    assert "| LDS.128 |" in table and "sm_75: per iteration" in table and "sm_90" in table
    assert f"nvdisasm {sass.find_tool().version}" in table and "NVRTC" in table
    assert cli.main(["sass", "blocktiling_2d", "--arch", "sm_75"]) == cli.OK
    out = capsys.readouterr().out
    assert "LDS.128" in out and "theoretical occupancy: sm_75" in out


def test_without_nvdisasm_the_report_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(sass, "_from_wheel", lambda *a: None)
    monkeypatch.setattr(sass, "_from_toolkit", lambda *a: None)
    sass.find_tool.cache_clear()
    sass._evidence.cache_clear()
    try:
        with pytest.raises(sass.DisassemblerUnavailable, match="pip install nvidia-cuda-nvdisasm"):
            sass.markdown("blocktiling_2d")
        assert cli.main(["sass", "blocktiling_2d"]) == cli.UNUSABLE
        assert "pip install nvidia-cuda-nvdisasm" in capsys.readouterr().err
    finally:
        sass.find_tool.cache_clear()


# A loop nest as nvdisasm prints it: an outer loop around an inner one that holds the
# FFMAs, a forward branch over a scalar fallback, and a counter advanced by 4.
SYNTHETIC = """\
.text.k:
        /*0000*/                   MOV R0, RZ ;
.L_x_0:
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
.L_x_1:
        /*0020*/                   LDS.128 R8, [R1] ;
        /*0030*/               @P1 BRA `(.L_x_2) ;
        /*0040*/                   LDG.E R12, desc[UR4][R2.64] ;
.L_x_2:
        /*0050*/                   FFMA R20, R8, R4, R20 ;
        /*0060*/                   FFMA R21, R9, R5, R21 ;
        /*0070*/                   IADD3 R0, R0, 0x4, RZ ;
        /*0080*/                   ISETP.GE.AND P0, PT, R0, UR6, PT ;
        /*0090*/              @!P0 BRA `(.L_x_1) ;
        /*00a0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*00b0*/              @P2 BRA `(.L_x_0) ;
        /*00c0*/                   EXIT ;
.L_x_3:
        /*00d0*/                   BRA `(.L_x_3);
"""


def test_the_main_loop_is_the_innermost_loop_with_the_most_ffmas():
    instructions, labels = sass.functions(SYNTHETIC)["k"]
    found = sass.loops(instructions, labels)
    assert [(lp.start, lp.end) for lp in found] == [(0x20, 0x90), (0x10, 0xB0), (0xD0, 0xD0)]
    outer = found[1]
    assert outer.nested and outer.counts["FFMA"] == 2 and outer.counts["BAR"] == 1
    inner = sass.main_loop(instructions, labels)
    assert (inner.start, inner.end, inner.nested) == (0x20, 0x90, False)
    assert inner.counts == {"FFMA": 2, "LDS.128": 1, "LDG": 1, "other": 4}
    assert inner.skippable == {"LDG": 1}  # the branch at 0x30 jumps over it
    assert inner.counter_step == 4


# A warp-specialized kernel as NVRTC lays it out: the consumers' loop (FFMAs), the
# producer's (a TMA copy), and a barrier wait's retry placed after the EXIT, branching
# back to the top, around both loops and more FFMAs than either holds.
RETRY = """\
.text.k:
.L_x_0:
        /*0000*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R0 ;
        /*0010*/              @!P0 BRA `(.L_x_9) ;
.L_x_1:
        /*0020*/                   FFMA R20, R8, R4, R20 ;
        /*0030*/                   FFMA R21, R9, R5, R21 ;
        /*0040*/              @P1 BRA `(.L_x_1) ;
.L_x_2:
        /*0050*/                   UTMALDG.2D [UR8], [UR10] ;
        /*0060*/              @P2 BRA `(.L_x_2) ;
        /*0070*/                   FFMA R22, R8, R4, R22 ;
        /*0080*/                   EXIT ;
.L_x_9:
        /*0090*/                   BRA `(.L_x_0) ;
"""


def test_a_branch_back_from_past_the_kernels_end_is_no_main_loop():
    instructions, labels = sass.functions(RETRY)["k"]
    assert (0x00, 0x90) in [(lp.start, lp.end) for lp in sass.loops(instructions, labels)]
    main = sass.main_loop(instructions, labels)
    assert (main.start, main.end) == (0x20, 0x40)
    copying = sass.copying_loop(instructions, labels, main)
    assert (copying.start, copying.end) == (0x50, 0x60) and copying.counts["UTMALDG"] == 1


def test_a_kernel_without_a_multiply_add_loop_is_refused_with_why():
    instructions, labels = sass.functions(".text.k:\n        /*0000*/  EXIT ;\n")["k"]
    with pytest.raises(sass.NoMainLoop, match="no loop"):
        sass.main_loop(instructions, labels)


@needs_nvdisasm
@pytest.mark.parametrize(("step", "arch"), CASES)
def test_line_numbers_leave_the_machine_code_as_it_is(step, arch):
    """The GPU backend builds with -lineinfo (backends.GPU_OPTIONS), the SASS counts of
    the book without: both must be the same instructions, or the counts would describe
    another kernel than the one graded and timed."""
    from autograder import KernelSpec
    from autograder.run import backends, compiler

    spec = KernelSpec.from_step(step)

    def instructions(options):
        built = compiler.compile_for_arch(
            spec.source, [spec.name_expression], arch, spec.filename, options
        )
        return sass.functions(sass.disassemble(built.cubin))[built.symbols[spec.name_expression]][0]

    plain = instructions(compiler.DEFAULT_OPTIONS)
    assert "-lineinfo" in backends.GPU_OPTIONS
    assert plain and instructions(backends.GPU_OPTIONS) == plain
