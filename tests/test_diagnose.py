"""describe_mismatch must point a beginner at the right place, in readable English."""

import time

import numpy as np

from autograder.judge.diagnose import describe_mismatch


def wrong(bad):
    """Describe a mask whose elements were all written, just with wrong values."""
    return describe_mismatch(bad, np.zeros_like(bad))


def unwritten(bad):
    """Describe a mask whose wrong elements were all left unwritten."""
    return describe_mismatch(bad, bad.copy())


def blank(m, n):
    return np.zeros((m, n), dtype=bool)


def test_all_wrong_says_every_element():
    msg = wrong(np.ones((64, 64), dtype=bool))
    assert msg == "every element of C is wrong"


def test_nothing_written_asks_whether_the_kernel_stores_to_c():
    msg = unwritten(np.ones((64, 64), dtype=bool))
    assert msg.startswith("no element of C was written")
    assert "is the kernel launched" in msg
    assert "store to C" in msg


def test_one_by_one_matrix_counts_as_every_element():
    assert wrong(np.ones((1, 1), dtype=bool)) == "every element of C is wrong"


def test_single_element_is_named_by_row_and_column():
    bad = blank(16, 16)
    bad[3, 7] = True
    assert wrong(bad) == "element (3, 7) is wrong"


def test_single_unwritten_element_uses_was_never_written():
    bad = blank(16, 16)
    bad[0, 5] = True
    assert unwritten(bad) == "element (0, 5) was never written"


def test_missing_n_bound_names_the_last_columns():
    bad = blank(100, 73)
    bad[:, -9:] = True
    msg = wrong(bad)
    assert msg.startswith("the last 9 columns of every row are wrong")
    assert "bound on N" in msg
    assert "column index" in msg


def test_too_few_column_blocks_asks_about_the_launch():
    bad = blank(100, 73)
    bad[:, -9:] = True
    msg = unwritten(bad)
    assert "the last 9 columns of every row were never written" in msg
    assert "bound on N" in msg
    assert "blocks launched along the columns" in msg


def test_one_missing_column_is_singular():
    bad = blank(100, 73)
    bad[:, -1] = True
    msg = wrong(bad)
    assert msg.startswith("the last column of every row is wrong")
    assert "bound on N" in msg


def test_missing_m_bound_names_the_last_rows():
    bad = blank(67, 64)
    bad[-3:, :] = True
    msg = wrong(bad)
    assert msg.startswith("the last 3 rows are wrong")
    assert "bound on M" in msg
    assert "row index" in msg


def test_too_few_row_blocks_asks_about_the_launch():
    bad = blank(67, 64)
    bad[-3:, :] = True
    msg = unwritten(bad)
    assert msg.startswith("the last 3 rows were never written")
    assert "blocks launched along the rows" in msg


def test_one_missing_row_is_singular():
    bad = blank(67, 64)
    bad[-1, :] = True
    assert wrong(bad).startswith("the last row is wrong")


def test_both_bounds_missing_names_last_rows_and_columns():
    bad = blank(67, 73)
    bad[-3:, :] = True
    bad[:, -9:] = True
    msg = wrong(bad)
    assert msg.startswith("the last 3 rows and the last 9 columns are wrong")
    assert "bounds on M and N" in msg


def test_last_rows_with_a_few_stray_elements_is_not_a_bound_error():
    bad = blank(67, 73)
    bad[-3:, :] = True
    bad[:, -9:] = True
    bad[0, 0] = True
    assert "bound" not in wrong(bad)


def test_first_columns_are_named():
    bad = blank(32, 32)
    bad[:, :2] = True
    assert wrong(bad) == "the first 2 columns of every row are wrong"


def test_first_rows_are_named():
    bad = blank(32, 32)
    bad[:2, :] = True
    assert wrong(bad) == "the first 2 rows are wrong"


def test_first_row_is_singular():
    bad = blank(32, 32)
    bad[0, :] = True
    assert wrong(bad) == "the first row is wrong"


def test_whole_columns_are_listed_as_ranges():
    bad = blank(64, 128)
    bad[:, 32:64] = True
    assert wrong(bad) == "columns 32–63 of every row are wrong"


def test_several_column_ranges_use_commas_and_and():
    bad = blank(64, 128)
    bad[:, [3, 7]] = True
    bad[:, 32:64] = True
    assert wrong(bad) == "columns 3, 7 and 32–63 of every row are wrong"


def test_one_middle_column_is_singular():
    bad = blank(64, 128)
    bad[:, 40] = True
    assert wrong(bad) == "column 40 of every row is wrong"


def test_long_column_listing_stops_after_four_ranges():
    bad = blank(8, 100)
    bad[:, [1, 3, 5, 7, 9, 11, 13, 15, 17]] = True
    msg = wrong(bad)
    assert "columns 1, 3, 5, 7 and 5 more ranges" in msg
    assert "9" not in msg.split("and")[0]


def test_one_extra_range_is_singular():
    bad = blank(8, 100)
    bad[:, [1, 3, 5, 7, 9]] = True
    assert "and 1 more range of" in wrong(bad)


def test_whole_rows_are_listed_as_ranges():
    bad = blank(256, 64)
    bad[64:128, :] = True
    assert wrong(bad) == "rows 64–127 are wrong"


def test_column_pattern_repeating_every_block_points_at_the_index_formula():
    bad = blank(64, 256)
    bad[:32, :] = np.arange(256) % 32 < 4
    msg = wrong(bad)
    assert "repeat every 32 columns" in msg
    assert "columns 0–3 of each group of 32" in msg
    assert "column index" in msg
    assert "blockIdx and threadIdx" in msg


def test_repetition_picks_the_smallest_period():
    bad = blank(64, 256)
    bad[:8, :] = np.arange(256) % 16 == 5
    assert "repeat every 16 columns (column 5 of each group of 16)" in wrong(bad)


def test_row_pattern_repeating_every_block_names_rows():
    bad = blank(256, 64)
    bad[:, :10] = (np.arange(256) % 64 >= 60)[:, None]
    msg = wrong(bad)
    assert "repeat every 64 rows" in msg
    assert "rows 60–63 of each group of 64" in msg
    assert "row index" in msg


def test_one_period_of_bad_columns_is_not_called_repeating():
    bad = blank(64, 256)
    bad[:10, 0:4] = True
    msg = wrong(bad)
    assert "repeat" not in msg


def test_wrong_tile_is_bounded_by_its_rectangle():
    bad = blank(128, 128)
    bad[96:128, 0:32] = True
    bad[100, 5] = False
    msg = wrong(bad)
    assert msg == f"the {32 * 32 - 1} wrong elements all lie in rows 96–127, columns 0–31"


def test_rectangle_in_one_row_says_row_singular():
    bad = blank(128, 128)
    bad[5, 10:20:3] = True
    bad[5, 11] = True
    assert "lie in row 5, columns 10–19" in wrong(bad)


def test_scattered_elements_give_count_and_percentage():
    rng = np.random.default_rng(0)
    bad = rng.random((1001, 777)) < 0.0005
    bad[0, 0] = bad[-1, -1] = True
    n = int(bad.sum())
    msg = wrong(bad)
    assert msg.startswith(f"{n} of 1001×777 elements (")
    assert "%) are wrong, scattered over rows 0–1000 and columns 0–776" in msg


def test_tiny_fraction_never_shows_zero_percent():
    bad = blank(4096, 4096)
    bad[0, 0] = bad[-1, -1] = bad[7, 9] = True
    msg = wrong(bad)
    assert "(<0.01%)" in msg
    assert "0.00%" not in msg


def test_percentage_has_two_significant_digits():
    bad = blank(1000, 1000)
    bad.flat[::997] = True  # 1004 elements spread over all rows and columns
    assert "(0.1%)" in wrong(bad)


def test_almost_everything_wrong_never_shows_100_percent():
    bad = np.ones((100, 100), dtype=bool)
    bad[50, 50] = False
    bad[0, 99] = False
    assert "(>99%)" in wrong(bad)


def test_mixed_unwritten_and_wrong_counts_the_unwritten():
    bad = blank(100, 73)
    bad[:, -9:] = True
    never = np.zeros_like(bad)
    never[:5, -9:] = True
    msg = describe_mismatch(bad, never)
    assert "are wrong (45 of them never written)" in msg
    assert "bound on N" in msg


def test_mixed_scattered_counts_the_unwritten():
    bad = blank(50, 50)
    bad[0, 0] = bad[49, 49] = bad[20, 30] = True
    never = np.zeros_like(bad)
    never[20, 30] = True
    assert "are wrong (1 of them never written), scattered" in describe_mismatch(bad, never)


def test_unwritten_rectangle_says_unwritten_elements():
    bad = blank(128, 128)
    bad[96:128, 0:32] = True
    bad[100, 5] = False
    assert unwritten(bad).startswith("the 1023 unwritten elements all lie in")


def test_single_row_matrix_missing_columns():
    bad = blank(1, 50)
    bad[0, -2:] = True
    msg = wrong(bad)
    assert msg.startswith("the last 2 columns of every row are wrong")
    assert "bound on N" in msg


def test_single_row_matrix_scattered_columns_are_listed():
    bad = blank(1, 50)
    bad[0, [3, 20]] = True
    assert wrong(bad) == "columns 3 and 20 of every row are wrong"


def test_single_column_matrix_missing_rows():
    bad = blank(50, 1)
    bad[-4:, 0] = True
    msg = unwritten(bad)
    assert msg.startswith("the last 4 rows were never written")
    assert "bound on M" in msg


def test_messages_have_no_trailing_period():
    bad = blank(67, 64)
    bad[-3:, :] = True
    assert not wrong(bad).endswith(".")
    assert not unwritten(np.ones((4, 4), dtype=bool)).endswith(".")


def test_large_scattered_mask_is_fast():
    rng = np.random.default_rng(1)
    bad = rng.random((4096, 4096)) < 0.01
    never = bad & (rng.random((4096, 4096)) < 0.5)
    start = time.perf_counter()
    msg = describe_mismatch(bad, never)
    elapsed = time.perf_counter() - start
    assert "scattered over rows 0–4095 and columns 0–4095" in msg
    assert elapsed < 0.5


def test_large_periodic_mask_is_fast():
    bad = blank(4096, 4096)
    bad[:2048, :] = np.arange(4096) % 128 >= 120
    start = time.perf_counter()
    msg = wrong(bad)
    elapsed = time.perf_counter() - start
    assert "repeat every 128 columns (columns 120–127 of each group of 128)" in msg
    assert elapsed < 0.5
