"""What the notebook explorers compute (the widgets only draw it)."""

import pytest

from autograder import explorers


def test_a_warp_walking_rows_needs_32_transactions_and_one_walking_columns_needs_one():
    rows = {a.matrix: a.segments for a in explorers.warp_accesses("rows", N=1024, K=1024)}
    columns = {a.matrix: a.segments for a in explorers.warp_accesses("columns", N=1024, K=1024)}
    assert rows == {"A": 32, "B": 1, "C": 32}
    assert columns == {"A": 1, "B": 1, "C": 1}


def test_an_odd_row_length_can_split_a_warps_row_over_two_segments():
    columns = {a.matrix: a.segments for a in explorers.warp_accesses("columns", 777, 513, warp=1)}
    assert columns["C"] == 2  # row 1 of C starts 777 floats in: not on a 128-byte boundary


def test_tile_costs_of_the_registered_parameters_fit_a_t4():
    costs = explorers.tile_costs("05")
    assert costs.threads == 256 and costs.shared_bytes == (128 + 128) * 8 * 4
    assert costs.accumulators == 64 and costs.shared_loads_per_fma == 0.25
    assert costs.problems == ()


def test_tile_costs_name_what_does_not_fit():
    costs = explorers.tile_costs("05", BM=256, BN=256, TM=2, TN=2)
    assert any("threads per block" in p for p in costs.problems)
    assert any("not a multiple" in p for p in explorers.tile_costs("05", BM=100).problems)


def test_floors_say_a_large_sgemm_is_compute_bound_and_a_thin_one_memory_bound():
    square = explorers.floors(4096, 4096, 4096, "H100 SXM")
    assert square["bound"] == "compute" and square["flops"] == 2 * 4096**3
    thin = explorers.floors(4096, 4096, 1, "Tesla T4")
    assert thin["bound"] == "memory"


@pytest.mark.parametrize("name", ["00_cpu_triple_loop", "01_naive", "05_blocktiling_2d"])
def test_every_notebook_gets_an_explorer_widget(name):
    pytest.importorskip("ipywidgets")
    assert explorers.explorer_for(name) is not None
