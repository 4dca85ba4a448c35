"""What the notebook explorers compute (the widgets only draw it)."""

import itertools
import re

import pytest

from autograder.course import explorers
from autograder.ladder import registry
from autograder.measure import tune


def test_a_warp_walking_rows_needs_32_sectors_and_one_walking_columns_needs_four():
    rows = {a.matrix: a.sectors for a in explorers.warp_accesses("rows", N=1024, K=1024)}
    columns = {a.matrix: a.sectors for a in explorers.warp_accesses("columns", N=1024, K=1024)}
    assert rows == {"A": 32, "B": 1, "C": 32}
    assert columns == {"A": 1, "B": 4, "C": 4}


def test_an_odd_row_length_can_split_a_warps_row_over_five_sectors():
    columns = {a.matrix: a.sectors for a in explorers.warp_accesses("columns", 777, 513, warp=1)}
    assert columns["C"] == 5  # row 1 of C starts 777 floats in: not on a 32-byte boundary


def test_a_warp_tile_reads_as_few_floats_per_fma_as_its_thread_tiles_say():
    # Step 08: per k, 1 x 8 values of A and 2 x 4 of B for 1 x 2 sub-tiles of 8 x 4 FMAs.
    assert explorers.tile_costs("08").shared_loads_per_fma == 0.25


def test_tile_costs_of_the_registered_parameters_fit_a_t4():
    costs = explorers.tile_costs("05")
    assert costs.threads == 256 and costs.shared_bytes == (128 + 128) * 8 * 4
    assert costs.accumulators == 64 and costs.shared_loads_per_fma == 0.25
    assert costs.problems == ()


def test_tile_costs_name_what_does_not_fit():
    costs = explorers.tile_costs("05", BM=256, BN=256, TM=2, TN=2)
    assert costs.rejected and any("threads per block" in p for p in costs.problems)
    odd = explorers.tile_costs("05", BM=100)
    assert odd.rejected and "TM = 8 does not divide BM = 100" in odd.problems


def test_floors_say_a_large_sgemm_is_compute_bound_and_a_thin_one_memory_bound():
    square = explorers.floors(4096, 4096, 4096, "H100 SXM")
    assert square["bound"] == "compute" and square["flops"] == 2 * 4096**3
    thin = explorers.floors(4096, 4096, 1, "Tesla T4")
    assert thin["bound"] == "memory"


@pytest.mark.parametrize("name", ["00_cpu_triple_loop", "01_naive", "05_blocktiling_2d"])
def test_every_notebook_gets_an_explorer_widget(name):
    pytest.importorskip("ipywidgets")
    assert explorers.explorer_for(name) is not None


TUNED = [s for s in registry.ALL_STEPS if s.tuning]


def _off_the_grid(step):
    """Parameter sets around the registry's: each value halved, doubled, times 3/2 and
    plus one, one parameter at a time, and every combination of the tuning space."""
    for name, value in step.params.items():
        for other in {value // 2, value * 2, value * 3 // 2, value + 1} - {0, value}:
            yield {name: other}
    names = list(step.tuning.space)
    for values in itertools.product(*step.tuning.space.values()):
        yield dict(zip(names, values, strict=True))


@pytest.mark.parametrize("step", TUNED, ids=lambda s: s.name)
def test_the_explorer_accepts_the_registrys_parameters(step):
    costs = explorers.tile_costs(step.id)
    assert not costs.rejected, costs.problems


@pytest.mark.parametrize("step", TUNED, ids=lambda s: s.name)
def test_the_explorer_rejects_exactly_what_the_registrys_rules_and_the_t4_reject(step):
    rejected_by_rules = 0
    for change in _off_the_grid(step):
        p = {**step.params, **change}
        rules = step.tuning.rules(p)
        limits = (
            []
            if rules
            else tune.limits(
                step.layout(p).threads, step.tuning.shared_bytes(p), step.tuning.registers(p)
            )
        )
        costs = explorers.tile_costs(step.id, **change)
        assert costs.rejected == bool(rules or limits), (change, rules, limits, costs.problems)
        assert set(rules) <= set(costs.problems), (change, costs.problems)
        rejected_by_rules += bool(rules)
    assert rejected_by_rules, f"no parameter set tried breaks {step.name}'s rules"


def test_the_explorer_refuses_what_the_kernels_static_asserts_refuse():
    # The examples of issue 14: a 48-row warp tile, and BK = 4 for float4 copies of A.
    for step in TUNED:
        if "WM" in step.params:
            assert explorers.tile_costs(step.id, WM=48).rejected, step.name
        if step.tuning.rules(step.params | {"BK": 4}):
            assert explorers.tile_costs(step.id, BK=4).rejected, step.name
    assert any(s.tuning.rules(s.params | {"BK": 4}) for s in TUNED)


def test_a_misaligned_row_is_explained_where_it_needs_five_sectors():
    a, b, c = explorers.warp_accesses("columns", N=777, K=513, warp=1)
    assert c.sectors == 5 and "straddle 5 sectors, not 4" in explorers.sector_story(c, 777)
    assert "a row of 777 floats is 3108 bytes" in explorers.sector_story(c, 777)
    assert "the same float" in explorers.sector_story(a, 513)
    aligned = explorers.warp_accesses("columns", N=768, K=513, warp=1)[2]
    assert explorers.sector_story(aligned, 768).endswith("128 bytes in 4 sectors")
    rows = explorers.warp_accesses("rows", N=777, K=513)[0]
    assert "2052 bytes apart" in explorers.sector_story(rows, 513)


def test_each_warp_explorer_opens_on_the_layout_its_notebook_teaches_with_plain_labels():
    pytest.importorskip("ipywidgets")
    for name, walk in (("01_naive", "rows"), ("02_coalescing", "columns")):
        controls = explorers.explorer_for(name).children[:-1]  # the last is the output
        assert controls[0].value == walk, name
        labels = [c.description for c in controls]
        assert labels == ["threads walk", "N", "K", "warp"], labels
        assert controls[0].style.description_width == "initial"  # shown whole
    gpu = explorers.explorer_for("00_cpu_triple_loop").children[3]
    assert gpu.description == "GPU"


REFERENCE_05 = registry.step("05")


def test_the_compile_button_compiles_the_learners_kernel_beside_the_reference(tmp_path):
    mine = tmp_path / f"{REFERENCE_05.name}.cu"
    said = explorers.compiled("05", mine, **REFERENCE_05.params)
    assert said[0].startswith(f"no {mine.name} here yet") and len(said) == 2
    assert said[1].startswith("the course's reference kernel: ") and "registers" in said[1]

    mine.write_text(REFERENCE_05.source().replace("// Step 05", "#error not yet\n// Step 05", 1))
    said = explorers.compiled("05", mine, **REFERENCE_05.params)
    assert said[0].startswith(f"your kernel ({mine.name}) did not compile: ")
    assert "#error" in said[0]
    assert said[1].startswith("the course's reference kernel: ")

    mine.write_text(REFERENCE_05.source())  # the learner's, done
    mine_said, reference_said = explorers.compiled("05", mine, **REFERENCE_05.params)
    assert mine_said.startswith(f"your kernel ({mine.name}): ") and "registers" in mine_said
    assert reference_said.startswith("the course's reference kernel: ")
    too_many = dict(REFERENCE_05.params, TM=16, TN=16)  # 288 registers a thread and more
    assert explorers.compiled("05", mine, **too_many)[0].startswith("not compiled")


@pytest.mark.parametrize("step", [s for s in TUNED if s.id <= "08"], ids=lambda s: s.name)
def test_a_tile_explorer_redraws_the_steps_picture_for_the_chosen_parameters(step, monkeypatch):
    pytest.importorskip("ipywidgets")
    from autograder.course import pictures

    drawn = []
    real = pictures.picture
    monkeypatch.setattr(pictures, "picture", lambda s: drawn.append(s.params) or real(s))
    explorer = explorers.explorer_for(step.name)
    assert drawn == [step.params]  # drawn as it opens
    changes = _off_the_grid(step)
    accepted = next(c for c in changes if not explorers.tile_costs(step.id, **c).rejected)
    dropdowns = {c.description: c for c in explorer.children[0].children if hasattr(c, "options")}
    for name, value in accepted.items():
        dropdowns[name].value = value
    assert drawn[-1] == {**step.params, **accepted}, (drawn, accepted)
    dropdowns["BM"].value = 1  # rejected: no picture, the reasons instead
    assert drawn[-1] == {**step.params, **accepted}


def test_the_dispatch_explorer_prints_a_table_that_fits_a_narrow_column(capsys):
    pytest.importorskip("ipywidgets")
    explorers.explorer_for("09_by_shape")
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.split()[0] in explorers.by_shape.CHOICES]
    assert len(rows) == len(explorers.by_shape.CHOICES)
    assert max(map(len, lines)) <= 72, max(lines, key=len)


def test_the_sentence_for_a_front_end_that_cannot_draw_an_explorer_is_hidden_until_then():
    for version, fix in (("7.7.1", '%pip install -q "ipywidgets>=8"'), ("8.1.9", "where")):
        html = explorers.front_end_help(version)
        assert ".sgemm-widgets-help { display: none; }" in html  # shown only by the rule below
        assert ":has(.jupyter-widgets-error-widget) .sgemm-widgets-help" in html
        said = re.sub(r"<[^>]+>", "", html.split("</style>")[1]).replace("&gt;", ">")
        assert version in said and fix in said, said


@pytest.mark.parametrize(
    "step_id, params, fits",
    [
        ("12", {}, True),
        ("12", {"BN": 192, "STAGES": 6}, False),
        ("13", {}, True),
        ("13", {"STAGES": 5}, False),  # 48 KB a slice with A's small parts
    ],
)
def test_the_pipeline_explorer_says_what_fits_a_block_of_an_h100(step_id, params, fits):
    step = registry.step(step_id)
    said = explorers.pipeline_costs(step_id, **{**step.params, **params})
    (shared,) = [line for line in said if line.startswith("shared memory: ")]
    assert ("cannot be launched" not in shared) == fits, shared
    assert f"({step.with_params(**params).geometry.threads} threads)" in said[0]


def test_the_compile_button_of_a_hopper_step_compiles_for_sm_90a(tmp_path):
    """Steps 12 and 13 are built for sm_90a alone: the button compiles for it, GPU or not."""
    step = registry.step("13")
    mine = tmp_path / step.path.name
    mine.write_text(step.source())
    said = explorers.compiled("13", mine, **step.params)
    assert all(" on sm_90a: " in line and "0 bytes spilled" in line for line in said), said
