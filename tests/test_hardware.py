"""The one table of hardware limits, and the occupancy arithmetic, against cases worked
by hand from the Programming Guide's table and the occupancy calculator's rules."""

import pytest

from autograder.course import explorers
from autograder.ladder import hardware
from autograder.measure import tune
from autograder.run import compiler


def test_the_table_holds_the_programming_guides_numbers():
    t4, a100, ga10x, ada, h100 = (hardware.arch(a) for a in hardware.ARCHS)
    assert [a.max_warps_per_sm for a in (t4, a100, ga10x, ada, h100)] == [32, 64, 48, 48, 64]
    assert [a.max_blocks_per_sm for a in (t4, a100, ga10x, ada, h100)] == [16, 32, 16, 24, 32]
    assert [a.shared_per_sm // 1024 for a in (t4, a100, ga10x, ada, h100)] == [
        64, 164, 100, 100, 228,
    ]  # fmt: skip
    assert h100.shared_per_block_optin == 227 * 1024 and t4.shared_per_block_static == 48 * 1024
    assert {a.registers_per_sm for a in hardware.ARCHS.values()} == {65536}
    assert {a.max_threads_per_block for a in hardware.ARCHS.values()} == {1024}


def test_an_architecture_is_found_by_any_of_its_names_and_an_unknown_one_is_named():
    assert hardware.arch("sm_90a") is hardware.arch("9.0") is hardware.arch(90)
    with pytest.raises(KeyError, match="sm_75, sm_80"):
        hardware.arch("sm_100")


def test_every_module_reads_its_limits_from_the_one_table():
    assert compiler.REGISTERS_PER_SM == hardware.arch(hardware.SMALLEST).registers_per_sm
    assert compiler.MAX_STATIC_SHARED_BYTES == hardware.arch("sm_75").shared_per_block_static
    assert explorers.GPUS is hardware.GPUS
    assert all(g["arch"] in hardware.ARCHS for g in hardware.GPUS.values())


def test_registers_limit_a_256_thread_block_at_128_registers_to_two_blocks():
    # 128 x 32 = 4096 registers per warp; a sub-partition (16384) holds 4 such warps,
    # the SM 16: two blocks of 8 warps. A T4 holds 32 warps, an H100 64.
    t4 = hardware.occupancy("sm_75", threads=256, registers=128, shared_bytes=8192)
    assert (t4.blocks, t4.warps, t4.fraction) == (2, 16, 0.5)
    assert t4.limited_by == ["registers"] and t4.by_shared == 8  # 64 KB / 8 KB
    h100 = hardware.occupancy("sm_90", threads=256, registers=128, shared_bytes=8192)
    assert (h100.blocks, h100.warps, h100.fraction) == (2, 16, 0.25)
    assert h100.by_shared == 233472 // (8192 + 1024)  # 1 KB reserved per block: 25


def test_registers_are_counted_per_sub_partition_not_per_sm():
    # One warp at 200 registers: 6400 per warp. 65536 / 6400 would say 10 warps, but a
    # sub-partition's 16384 holds only 2 of them: 8 warps per SM.
    one_warp = hardware.occupancy("sm_90", threads=32, registers=200)
    assert one_warp.by_registers == 8 and one_warp.blocks == 8
    # 33 registers round up to 40 per thread (1280 per warp, units of 256).
    assert hardware.occupancy("sm_80", threads=32, registers=33).by_registers == 4 * (16384 // 1280)


def test_a_1024_thread_block_fills_two_thirds_of_an_ampere_ga10x_sm():
    # sm_86 holds 48 warps: one block of 32 warps, whatever the registers allow.
    ga10x = hardware.occupancy("sm_86", threads=1024, registers=32)
    assert (ga10x.blocks, ga10x.warps, ga10x.limited_by) == (1, 32, ["warps"])
    assert ga10x.fraction == pytest.approx(2 / 3)


def test_shared_memory_and_block_slots_limit_small_blocks():
    # 48 KB of shared memory per block: one block on a T4 (64 KB per SM).
    big = hardware.occupancy("sm_75", threads=128, registers=32, shared_bytes=48 * 1024)
    assert (big.blocks, big.limited_by) == (1, ["shared memory"])
    # 32-thread blocks with nothing else: the block slots run out (16 on a T4).
    tiny = hardware.occupancy("sm_75", threads=32, registers=16)
    assert (tiny.blocks, tiny.warps, tiny.limited_by) == (16, 16, ["blocks per SM"])
    assert hardware.occupancy("sm_89", threads=32, registers=16).blocks == 24


def test_what_cannot_launch_has_no_occupancy_and_says_why():
    assert hardware.occupancy("sm_90", threads=2048, registers=32).blocks == 0
    assert hardware.occupancy("sm_90", threads=1024, registers=128).blocks == 0  # 128 K regs
    assert (
        hardware.occupancy("sm_86", threads=128, registers=32, shared_bytes=100 * 1024).blocks == 0
    )
    assert hardware.launch_problems("sm_86", 128, 32, dynamic_shared=100 * 1024) == [
        "102400 bytes of shared memory per block; a sm_86 block may have at most 101376 (99 KB)"
    ]
    assert hardware.launch_problems("sm_90", 128, 32, dynamic_shared=100 * 1024) == []
    assert str(hardware.occupancy("sm_90", 2048, 32)) == "sm_90: does not fit on an SM"


def test_the_tuner_and_the_compiler_report_use_the_same_limits():
    assert tune.limits(2048, 0, 32) == hardware.launch_problems(
        "sm_75", 2048, 32, registers_floor=True
    )
    report = compiler.Resources("k", "sm_90", 128, 8192, 0, 0, 0)
    assert report.occupancy(256).blocks == 2
    assert str(report.occupancy(256)) == (
        "sm_90: 2 blocks per SM, 16/64 warps (25%), limited by registers"
    )
