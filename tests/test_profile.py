"""Nsight Compute's counters, read into the columns the book shows.

tests/data/ncu_05_1024.csv is what ncu 2025.3.1 printed for step 05 at 1024^3
on an H100 (`--csv --page raw`, the sections and metrics of autograder.measure.profile).
"""

from pathlib import Path

import pytest

from autograder import KernelSpec
from autograder.ladder import registry
from autograder.measure import profile

RAW = (Path(__file__).parent / "data" / "ncu_05_1024.csv").read_text()


def test_the_counters_are_read_in_base_units():
    row = profile._row(RAW)
    values = profile._values(row)
    assert values["duration_us"] == pytest.approx(206.656, abs=0.01)  # 206,656 ns
    assert values["dram_read_mb"] == pytest.approx(12.61, abs=0.01)  # 12,605,696 bytes
    assert values["shared_load_conflicts"] == 4194304
    assert values["occupancy_theoretical_pct"] == 25
    assert 0 < values["l2_hit_pct"] <= 100


def test_the_top_stalls_are_stalls_not_issuing():
    stalls = profile._stalls(profile._row(RAW))
    assert len(stalls) == profile.TOP_STALLS
    assert all("selected" not in reason for reason, _ in stalls)
    assert [v for _, v in stalls] == sorted((v for _, v in stalls), reverse=True)


def test_output_without_counters_is_none():
    assert profile._row('==PROF== Connected to process\n"ID","Kernel Name"\n') is None


def test_a_profile_is_merged_into_the_data_with_the_fingerprint_of_the_kernel_it_ran(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(profile, "DATA_DIR", tmp_path)
    stalls = profile._stalls(profile._row(RAW))
    kept = profile.Profile("04_blocktiling_1d", "1024x1024x1024", {"ffma": 1.0}, stalls, "a" * 12)
    profile.write_csv([kept], "NVIDIA H200", "CUDA 13.2")
    step = registry.step("05")
    new = profile.Profile(step.name, "1024x1024x1024", {"ffma": 2.0}, stalls, step.fingerprint)
    profile.write_csv([new], "NVIDIA H200", "CUDA 13.2")
    rows = {r["kernel"]: r for r in profile.read_csv("NVIDIA H200")}
    assert rows["05_blocktiling_2d"]["source"] == step.fingerprint
    assert rows["04_blocktiling_1d"]["source"] == "a" * 12  # another kernel's row is kept


@pytest.mark.gpu
def test_profiling_a_step_reads_its_counters(tmp_path):
    if profile.find() is None:
        pytest.skip("Nsight Compute (ncu) is not installed")
    spec = KernelSpec.from_step(registry.step("03"))
    result = profile.profile("03_smem_tiling", spec, "512", tmp_path)
    # Step 03 reads A and B once per 32-wide tile: at least A, B and C's bytes move.
    assert result.values["dram_read_mb"] + result.values["dram_write_mb"] > 0
    # One FFMA per multiply-add, and at most one more per element of C (the epilogue).
    assert 512**3 <= result.values["ffma"] <= 512**3 + 512**2
    assert result.source == registry.step("03").fingerprint
