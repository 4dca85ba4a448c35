"""The book's evidence: every chapter shows its step's picture, the compiler's
instruction mix (kernel chapters) and the profiler's counters beside the previous
step's (steps 02-08); the data behind them is committed; and what the reader sees
of the kernels carries no build-machine paths and no [docs:] anchors. All on the
CPU: the figures draw from committed data and compile with NVRTC."""

import ast
import math
import re
import sys
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest

from autograder.ladder import registry

# The book's figures display through IPython, and its code excerpts are a Sphinx
# extension: both come with Jupyter Book, which the README's setup installs.
pytest.importorskip("IPython", reason="IPython is not installed (it comes with jupyter-book)")
pytest.importorskip(
    "sphinx.directives", reason="Sphinx is not installed (it comes with jupyter-book)"
)
matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
sys.path.insert(0, str(BOOK))
sys.path.insert(0, str(BOOK / "_ext"))
import figures  # noqa: E402
import kernel_code  # noqa: E402


def chapter(step: registry.Step) -> str:
    path = BOOK / f"{step.name}.md"
    assert path.exists(), f"step {step.id} has no chapter {path.relative_to(ROOT)}"
    return path.read_text()


@pytest.fixture(autouse=True)
def _no_window(monkeypatch):
    monkeypatch.setattr(plt, "show", lambda: None)
    yield
    plt.close("all")


@pytest.mark.parametrize("step", registry.ALL_STEPS, ids=lambda s: s.name)
def test_every_chapter_shows_the_picture_of_its_step(step):
    assert f'pictures.picture("{step.id}")' in chapter(step), (
        f"book/{step.name}.md does not show its picture: add a cell with "
        f'`pictures.picture("{step.id}")` where the idea is explained'
    )


# Kernels that are a whole GEMM: step 09's is split-K's reduction, whose chapter's
# evidence is the sweep (below).
GEMM_KERNELS = [s for s in registry.KERNELS if s.contract == "gemm"]


@pytest.mark.parametrize("step", GEMM_KERNELS, ids=lambda s: s.name)
def test_every_kernel_chapter_shows_the_compilers_instruction_mix(step):
    assert f'figures.sass_mix("{step.id}")' in chapter(step), (
        f"book/{step.name}.md has no 'in numbers' evidence from the SASS: add "
        f'`figures.sass_mix("{step.id}")` and reason from its counts'
    )


@pytest.mark.parametrize("step", figures.GEMM_STEPS[1:], ids=lambda s: s.name)
def test_every_optimisation_chapter_shows_its_profile_beside_the_previous_steps(step):
    text = chapter(step)
    assert f'figures.profile_compare("{step.id}", main=(' in text, (
        f"book/{step.name}.md does not show the profiler's evidence: add "
        f'`figures.profile_compare("{step.id}", main=(...))`, naming the rows its text uses'
    )
    assert f'figures.prediction("{step.id}")' in text, (
        f"book/{step.name}.md shows no prediction against measurement: add "
        f'`figures.prediction("{step.id}")`'
    )


def test_every_step_has_the_bench_and_profile_rows_its_figures_need():
    missing = figures.missing_data()
    assert not missing, "the book's evidence lacks data:\n" + "\n".join(missing)


def test_a_step_without_a_profile_at_4096_is_reported_with_the_command_that_adds_it(
    monkeypatch,
):
    rows = figures.profile_rows()
    monkeypatch.setattr(
        figures.common,  # where missing_data looks it up
        "profile_rows",
        lambda: {k: v for k, v in rows.items() if k != ("06_vectorized", "4096x4096x4096")},
    )
    missing = figures.missing_data()
    assert len(missing) == 1 and "06_vectorized" in missing[0], missing
    assert "python -m autograder profile 06 --size 4096x4096x4096" in missing[0]


def test_every_committed_profile_names_the_version_of_the_kernel_it_profiled():
    for (kernel, size), row in figures.profile_rows().items():
        assert re.fullmatch(r"[0-9a-f]{12}", row.get("source") or ""), (
            f"{row['file']}: the profile of {kernel} at {size} does not record its kernel's "
            "fingerprint (autograder profile writes it)"
        )


def test_a_profile_of_an_earlier_kernel_says_so_under_its_table_and_one_of_todays_does_not(
    monkeypatch,
):
    rows = figures.profile_rows()
    current = registry.step("07").fingerprint
    today = {k: dict(v, source=current) if k[0] == "07_warptiling" else v for k, v in rows.items()}
    monkeypatch.setattr(figures.common, "profile_rows", lambda: today)
    honest = figures.profile_compare("07").data
    assert "earlier version" not in honest
    # The same row, recorded for a kernel whose code has since changed.
    before = {
        k: dict(v, source="0" * 12) if k[0] == "07_warptiling" else v for k, v in rows.items()
    }
    monkeypatch.setattr(figures.common, "profile_rows", lambda: before)
    planted = figures.profile_compare("07").data
    assert "The figures of 07 are of an earlier version of its kernel, profiled on" in planted
    assert figures.profiled_earlier(figures.profile_row("07")).startswith("The figures of 07")


def test_a_step_without_a_bench_row_is_reported(monkeypatch):
    rows = figures.results()
    monkeypatch.setattr(
        figures.common,  # where missing_data looks it up
        "results",
        lambda: [r for r in rows if not (r.kernel == "04_blocktiling_1d" and r.M == 1024)],
    )
    missing = figures.missing_data()
    assert any("04_blocktiling_1d at 1024³" in m for m in missing), missing


def main_rows(text: str) -> tuple[str, ...]:
    """The rows a chapter's profile table shows outside the box (its `main=`)."""
    found = re.search(r"figures\.profile_(?:compare|table)\(.*?main=(\(.*?\))\)", text, re.S)
    assert found, "no profile table with main= rows"
    return ast.literal_eval(found.group(1))


PROFILED = [registry.step("01"), *figures.GEMM_STEPS[1:]]

# What a chapter's numbers read from the profile, and the row that shows it: a number
# the text cites must be in the table the reader sees, not only in the closed box.
READS = {
    r"\bduration_us\b": "time",
    r"\bdram_bytes\(": "dram",
    r"\bmeasured_intensity\(": "intensity",
    r"\bl1_hit_pct\b": "l1",
    r"\bl2_hit_pct\b": "l2",
    r"\bwavefronts_per_ffma\(|\bshared_load_(wavefronts|conflicts)\b": "wavefronts",
    r"\bshared_store_conflicts\b": "store conflicts",
    r"\boccupancy_(achieved|theoretical)_pct\b": "occupancy",
    r"\bsm_throughput_pct\b": "sm throughput",
    r"\[.stalls.\]": "stalls",
}


@pytest.mark.parametrize("step", PROFILED, ids=lambda s: s.name)
def test_a_profile_table_shows_the_counters_its_chapter_cites_and_boxes_the_rest(step):
    text = chapter(step)
    main = main_rows(text)
    assert set(READS.values()) == set(figures.PROFILE_KEYS), "READS misses a row"
    for pattern, key in READS.items():
        if re.search(pattern, text):
            assert key in main, (
                f"book/{step.name}.md cites the profile's {key!r} (it reads "
                f"/{pattern}/) but its profile table keeps that row in the box: add it to main="
            )
    call = re.search(r"(figures\.profile_(?:compare|table)\(.*?main=\(.*?\)\))", text, re.S)
    table = eval(call.group(1), {"figures": figures}).data
    shown, box = table.split("````{admonition} More counters", 1)
    box, provenance = box.split("\n````\n", 1)
    assert ":class: dropdown" in box, "the box of more counters is not closed"
    lines = {
        key: [line for line in table.splitlines() if line.startswith(f"| {label} |")]
        for key, label, _ in figures.profile._PROFILE_ROWS
    }
    for key, label, _ in figures.profile._PROFILE_ROWS:
        if not lines[key]:
            continue  # a counter none of these kernels has
        where = shown if key in main else box
        assert f"| {label} |" in where, f"{step.name}: {label!r} is not where main= puts it"
        assert table.count(f"| {label} |") == 1, f"{step.name}: {label!r} is shown twice"
    assert "Nsight Compute" in provenance and "python -m autograder profile" in provenance
    if "wavefronts" in main:
        assert "A wavefront is" in provenance
    elif "wavefront" in box:
        assert "A wavefront is" in box, f"{step.name}: the box's wavefronts are not explained"


def test_a_profile_table_names_its_rows_when_asked_for_one_it_does_not_have():
    with pytest.raises(ValueError, match="the rows are time, dram"):
        figures.profile_compare("03", main=("time", "sm"))


@pytest.mark.parametrize("step", figures.GEMM_STEPS[1:], ids=lambda s: s.name)
def test_a_profile_table_says_where_and_how_it_was_measured(step):
    table = figures.profile_compare(step.id).data
    before = figures.GEMM_STEPS[figures.GEMM_STEPS.index(step) - 1]
    row = figures.profile_row(step.id)
    assert f"{before.id} at 4096³" in table and f"{step.id} at 4096³" in table
    for fact in (row["gpu"], row["date"], row["versions"], "python -m autograder profile"):
        assert fact in table, f"the profile table of {step.name} does not say {fact!r}"
    for metric in ("DRAM", "L1 hit", "L2 hit", "occupancy", "stall reason"):
        assert metric in table, f"the profile table of {step.name} has no {metric!r} row"
    shared = any(figures.profile_row(s.id)["shared_load_wavefronts"] for s in (before, step))
    assert ("bank conflicts" in table) == bool(shared), (
        f"the profile table of {step.name} should show bank conflicts exactly where one of "
        "its kernels reads shared memory"
    )


def test_a_profile_table_leaves_out_rows_no_kernel_in_it_can_have():
    table = figures.profile_table([("01", 4096), ("02", 4096)]).data
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert "shared-memory" not in table.split("\n\n")[0], "step 01 and 02 use no shared memory"
    assert not any(all(c.strip() in ("", "—") for c in r.split("|")[2:-1]) for r in rows), rows


def test_the_shape_chapter_shows_the_sweep_against_cublas_and_the_plans():
    text = chapter(registry.step("09"))
    assert 'figures.sweep_plot(["06", "07", "08", "09"])' in text
    assert 'figures.sweep_summary(["06", "07", "08", "09"])' in text
    assert "figures.dispatch_plans(" in text
    summary = figures.sweep_summary(["08", "09"]).data
    if "09_by_shape" in figures.NOT_YET_MEASURED:
        assert "| 09_by_shape | not yet measured |" in summary
    r = figures.sweep_row("08", "512x512x32768")
    assert f"{r.pct_cublas:.1f}%" in summary  # the minimum of 08 is its worst shape


def test_the_roofline_places_steps_by_measured_dram_bytes_with_labels_apart(monkeypatch):
    shown = []  # figures.show closes what it shows: keep it here instead
    monkeypatch.setattr(figures.models, "show", lambda fig=None: shown.append(fig or plt.gcf()))
    figures.roofline()
    ax = shown[0].axes[0]
    renderer = shown[0].canvas.get_renderer()
    labels = [t for t in ax.texts if t.get_text() in {s.id for s in figures.GEMM_STEPS}]
    assert sorted(t.get_text() for t in labels) == sorted(s.id for s in figures.GEMM_STEPS)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            assert not box_a.overlaps(box_b), f"the labels of {a} and {b} overlap"
    for step in figures.GEMM_STEPS:
        x = figures.flops() / figures.dram_bytes(step.id)
        label = next(t for t in labels if t.get_text() == step.id)
        assert label.xy[0] == pytest.approx(x), f"{step.name} is not at its measured intensity"


# ---- what the reader sees of the kernels (book/_ext/kernel_code.py) ----

KERNEL_FILES = sorted((ROOT / "kernels").glob("*.cu")) + sorted((ROOT / "kernels").glob("*.py"))


@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: p.name)
def test_no_excerpt_or_whole_file_shows_a_docs_anchor(path):
    text = path.read_text()
    anchors = set(re.findall(r"\[docs:([\w-]+?)(?:-end)?\]", text))
    assert anchors or path.suffix == ".py", f"{path.name} has no anchors to test"
    comment = "#" if path.suffix == ".py" else "//"
    config = type("Config", (), {"source_encoding": "utf-8"})()
    excerpts = [{}] + [
        {"start-after": f"{comment} [docs:{a}]", "end-before": f"{comment} [docs:{a}-end]"}
        for a in anchors
    ]
    for options in excerpts:
        shown, _ = kernel_code.Reader(str(path), dict(options), config).read()
        assert "[docs:" not in shown, f"{path.name} {options or 'whole'} shows an anchor"
        assert shown.strip(), f"{path.name} {options} shows nothing"


@pytest.mark.parametrize(
    "old, new", list(zip(registry.STEPS, registry.STEPS[1:])), ids=lambda s: s.name
)
def test_a_diff_between_neighbouring_kernels_shows_code_under_relative_names(old, new):
    config = type("Config", (), {"source_encoding": "utf-8"})()
    reader = kernel_code.Reader(str(new.path), {"diff": str(old.path)}, config)
    diff, _ = reader.read()
    head = diff.splitlines()[:2]
    assert head == [f"--- kernels/{old.path.name}", f"+++ kernels/{new.path.name}"], head
    assert str(ROOT) not in diff
    changed = [line[1:] for line in diff.splitlines()[2:] if line[:1] in "+-"]
    comments = [line for line in changed if re.search(r"//|/\*", line)]
    assert not comments, f"the diff {old.id} -> {new.id} shows comments: {comments[:3]}"
    assert changed, f"no code changed between {old.name} and {new.name}?"


def test_comments_are_cut_but_strings_kept():
    lines = [
        "int a = 1;  // a trailing comment\n",
        "// a whole-line comment\n",
        "/* a block\n",
        "   comment */ int b = 2;\n",
        'static_assert(true, "a // not a comment");\n',
        "\n",
    ]
    assert kernel_code.code_only(lines) == [
        "int a = 1;\n",
        " int b = 2;\n",
        'static_assert(true, "a // not a comment");\n',
    ]


def test_every_committed_benchmark_row_of_a_step_names_the_version_of_its_kernel():
    from autograder.measure import bench

    for path in sorted(figures.DATA.glob("*.csv")):
        if not path.read_text().startswith("kernel,M,N,K,gflops,cublas_gflops"):
            continue
        for r in bench.read_csv(path):
            if r.kernel[:2].isdigit():
                assert re.fullmatch(r"[0-9a-f]{12}", r.source), (
                    f"{path.name}: {r.kernel} at {r.M}x{r.N}x{r.K} does not record its "
                    "kernel's fingerprint (autograder bench writes it)"
                )


def test_an_ablation_of_an_earlier_kernel_says_so_under_its_table_and_one_of_todays_does_not(
    tmp_path, monkeypatch
):
    from autograder.measure import ablation, bench

    def row(kernel, gflops, source):
        return bench.Row(kernel, 4096, 4096, 4096, gflops, 50000.0, 100 * gflops / 50000.0,
                         0.0, "Test GPU", "2026-11-23", "13.2", "14.2.0",
                         10, 0.5, 10, 0.5, "", source)  # fmt: skip

    monkeypatch.setattr(figures.tuning, "DATA", tmp_path)  # where the ablation reads
    whole, today = registry.step(ablation.STEP).name, registry.step(ablation.STEP).fingerprint
    for source, said in ((today, False), ("0" * 12, True)):
        rows = [row(whole, 50000.0, source)]
        rows += [row(v.label, 40000.0, source) for v in ablation.variants()]
        bench.write_csv(rows, tmp_path / "ablation_test_gpu.csv")
        caption = figures.ablation_table().data
        sentence = (
            "The figures of 08 are of an earlier version of its kernel, measured on 2026-11-23"
        )
        assert (sentence in caption) == said, caption
    assert figures.measured_earlier([row(bench.CUBLAS_TF32, 1.0, "")]) == ""


def test_the_ablation_table_gives_each_tricks_worth_from_the_committed_rows(tmp_path, monkeypatch):
    from autograder.measure import ablation, bench

    def row(kernel, gflops):
        return bench.Row(kernel, 4096, 4096, 4096, gflops, 50000.0, 100 * gflops / 50000.0,
                         0.0, "Test GPU", "2026-11-23", "13.2", "14.2.0",
                         10, 0.5, 10, 0.5)  # fmt: skip

    whole = registry.step(ablation.STEP).name
    rows = [row(whole, 50000.0)] + [row(v.label, 40000.0) for v in ablation.variants()]
    # Step 12's run, with cuBLAS in TF32 beside it: its table says % of that.
    hopper = registry.step("12").name
    bench.write_csv(rows, tmp_path / "ablation_test_gpu.csv")
    rows = [row(hopper, 300000.0), row(bench.CUBLAS_TF32, 400000.0)]
    rows += [row(v.label, 240000.0) for v in ablation.variants("12")]
    bench.write_csv(rows, tmp_path / "ablation12_test_gpu.csv")
    monkeypatch.setattr(figures.tuning, "DATA", tmp_path)  # where the ablation reads
    table = figures.ablation_table().data
    assert f"| {whole} | 100.0% |" in table
    for v in ablation.variants():
        assert f"| {v.label} | 80.0% (+25%) |" in table, table
    assert hopper not in table  # each step's table shows its own rows alone
    assert "Test GPU, 2026-11-23, CUDA 13.2" in table
    table = figures.ablation_table("12").data
    assert "% of cuBLAS TF32" in table and f"| {hopper} | 75.0% |" in table
    for v in ablation.variants("12"):
        assert f"| {v.label} | 60.0% (+25%) |" in table, table
    assert "bench --ablation 12`" in table


def test_chapter_13s_words_hold_for_the_committed_accuracy_run():
    """Chapter 13 says in words where 3xTF32 gives FP32 results and where it does not, and
    what promotion buys; a re-measured run that no longer bears them out fails here, not in
    a reader's eyes."""
    from autograder.judge import checker

    rows = {(r.inputs, r.K, r.result): r for r in figures.fp32_accuracy()}
    ratios = figures.fp32_accuracy_ratios()
    ks = {K for _, K in ratios}
    assert {512, 4096, 16384} <= ks
    normal, spread = "standard normal", "magnitudes over 12 decades"
    for K in ks:  # more accurate than strict FP32 on well-scaled and on ill-conditioned data
        assert max(ratios[normal, K]) < 1 and ratios[spread, K][0] < 1, (K, ratios)
        unpromoted = rows[normal, K, "13 without promotion"].max_e
        assert unpromoted > rows[normal, K, figures.STRICT].max_e  # promotion is what buys it
    tolerance = checker.tolerance_factor(4096)
    assert rows[spread, 4096, "13 without promotion"].max_e > tolerance  # it fails the checker
    for key, (worst, norm) in ratios.items():  # within 2x strict FP32 everywhere (issue 49)
        assert worst <= 2 and norm <= 2, (key, worst, norm)
    tiny = [key for key in ratios if "2^-120" in key[0]]
    for inputs, K in tiny:  # what scaling buys: the split as it is loses FP32's bits there
        unscaled = rows[inputs, K, "3xTF32 split unscaled, exact sum"].relative_norm
        assert unscaled > 4 * rows[inputs, K, figures.STEP13].relative_norm, (inputs, K)
        if K == 512:
            assert unscaled > 2 * rows[inputs, K, figures.STRICT].relative_norm, inputs
    top = "A near the largest float, B near 2^-120"
    for K in ks:  # no NaN where strict FP32 has none; cuBLAS with TF32 overflows
        assert not math.isnan(rows[top, K, figures.STEP13].max_e)
        assert not math.isnan(rows[top, K, figures.STRICT].max_e)
        assert math.isnan(rows[top, K, "cuBLAS, TF32"].max_e)


def test_the_probe_shows_what_chapter_13_says_of_the_tensor_cores_additions():
    """24 bits kept, rounded toward zero inside the tensor cores; step 13's slices added
    in FP32, rounded to the nearest; the FP32 lanes round to the nearest everywhere."""
    from autograder.measure import accuracy

    rows = accuracy.read(figures.DATA / f"accumulator_{figures.TENSOR_CORES_ON}.csv", accuracy.Kept)
    kept = {(r.kernel, r.place): (r.bits, r.rounding) for r in rows}
    for place in accuracy.PLACES:
        assert kept["08_pipelining", place] == (23, "to nearest")
        assert kept["12_wgmma_tf32", place] == (23, "toward zero")
    assert kept["13_wgmma_3xtf32", "in the next slice"] == (23, "to nearest")
    assert kept["13_wgmma_3xtf32", "by the next wgmma"] == (23, "toward zero")


def test_the_tensor_core_chapters_words_hold_for_the_committed_sweep():
    """Step 13 short of strict cuBLAS at the smallest products and of twice its speed at
    large ones; step 12 close to cuBLAS's TF32 speed from 2048³ up and where K is long,
    and past it where TMA cannot describe the rows (chapters 12 and 13)."""
    ratios = figures.tensor_core_ratios()
    assert len(ratios["13"]) >= 12 and ratios["12"].keys() == ratios["13"].keys()
    big = [s for s in ratios["13"] if min(s) >= 1024]
    assert big and max(ratios["13"][s] for s in big) < 2
    assert any(r < 1 for r in ratios["13"].values())
    for shape in [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (1024, 1024, 16384)]:
        assert ratios["12"][shape] >= 0.85, shape
    assert ratios["12"][4095, 4097, 4093] > 1 and ratios["12"][3001, 2999, 3003] > 1


def test_the_sweep_says_which_path_each_tensor_core_row_took_and_fp32_only_where_timed():
    """Chapters 12 and 13 mark the shapes where step 09's FP32 kernels ran (paths): every
    row of 12 and 13 records its path; the FP32 path, smaller blocks than the step's own,
    one layer where its plans give more, or copies where they do not pay, only at products
    small enough to be timed; elsewhere the step's own blocks in one of its plans (the
    layers split_k gives the reduction, or for step 13 those split_k.plan models in
    clusters on the H200 the data is from)."""
    from measured import H200_CLUSTERS_AT_ONCE

    from autograder.run import paths, split_k

    ours = {registry.step(s).name: registry.step(s) for s in ("12", "13")}
    rows = [r for r in figures.tensor_core_sweep() if r.kernel in ours]
    assert rows and all(r.path for r in rows)
    bound = figures.race_gflop() * 1e9
    # the steps' own kernels, which compile in clusters of any layers
    compiled = split_k.Clusters(lambda S: "compiled", H200_CLUSTERS_AT_ONCE.get)
    for r in rows:
        step, shape = ours[r.kernel], (r.M, r.N, r.K)
        odd = r.K % 4 != 0 or r.N % 4 != 0

        def names(height, copied):  # the step's own plans, its choice first (backends)
            tile = step.with_params(BM=height).geometry.tile
            plans = [(split_k.layers(*shape, tile, 132), False)]  # the H200's 132 SMs
            if "LAYERS" in step.params:
                plans.insert(0, split_k.plan(*shape, tile, 132, compiled))
            return [paths.tensor_cores(height, s, copied, c) for s, c in plans]

        own = names(step.params["BM"], odd and split_k.copies_pay(*shape))
        raced = {paths.FP32} | {
            name
            for h in registry.block_rows(step)
            for c in {False, odd}
            for name in [*names(h, c), paths.tensor_cores(h, 1, c)]
        }
        assert r.path in own or (r.path in raced and 2 * math.prod(shape) <= bound), r
    assert figures.fp32_path_shapes("13") and figures.fp32_path_shapes("12")


def test_the_shape_chapter_says_what_a_learners_gpu_gives_from_the_data_files(
    monkeypatch, tmp_path
):
    """Per GPU measured: step 09 with its table, tuned on first use and untuned, each from
    its own file; the first-use and untuned sweeps never mix into the sweep proper. A T4
    gets computed plans only, and no speed."""
    text = chapter(registry.step("09"))
    assert "figures.learner_gpus()" in text and 'figures.predicted_plans("Tesla T4")' in text
    source = registry.DATA_DIR / "sweep_h100_80gb_hbm3.csv"
    for name in ("sweep_h100_80gb_hbm3.csv", "sweep_first_use_h200.csv"):
        (tmp_path / name).write_text(
            source.read_text().replace("NVIDIA H100 80GB HBM3", "NVIDIA H200")
            if "h200" in name
            else source.read_text()
        )
    monkeypatch.setattr(figures.dispatch, "DATA", tmp_path)
    assert {r.gpu for r in figures.sweep_results()} == {"NVIDIA H100 80GB HBM3"}
    table = figures.learner_gpus().data
    assert "| NVIDIA H200 | tuned on first use |" in table
    assert "`sweep_first_use_h200.csv`" in table
    assert "| NVIDIA H100 80GB HBM3 | with its committed table |" in table
    assert "untuned" not in table  # no file, no row
    plans = figures.predicted_plans("Tesla T4").data
    assert "%" not in plans and "256x128 tiles" in plans
