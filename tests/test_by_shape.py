"""Step 09: the dispatcher's choices, its table, the tuner's search, and the GEMM it
composes, on the CPU (tests/test_gpu.py runs the same GEMM on a GPU)."""

import json
import math
from dataclasses import replace

import pytest

from autograder import KernelSpec, judge
from autograder.course import explorers
from autograder.judge.checker import SMALL, Shape
from autograder.ladder import registry
from autograder.ladder.hardware import GPUS, datasheet_device
from autograder.measure import bench, tune_plans
from autograder.run import by_shape, compiler, composed, contract
from autograder.run.by_shape import Bands, Plan, Table
from autograder.run.kernel import template_arguments

H100, T4 = GPUS["H100 SXM"]["sms"], GPUS["Tesla T4"]["sms"]
SWEEP = [bench.parse_size(s) for s in bench.sweep_sizes()]


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
@pytest.mark.parametrize("tiles", by_shape.TILES)
@pytest.mark.slow
def test_every_tile_shape_is_one_step_08_accepts_and_compiles_without_spilling(tiles, arch):
    """As built for that architecture (SLIDE and SPREAD), with its RAGGED and STAGE twins
    where it has them."""
    step = registry.step("08").with_params(**by_shape.TILES[tiles])
    assert step.tuning.rules(step.params) == []
    specs = composed.gemm_specs((tiles,), arch)
    BK = by_shape.TILES[tiles]["BK"]
    assert set(specs) == {composed.gemm_key(tiles, N, K) for N in (16, 17) for K in (BK, BK + 1)}
    for spec in specs.values():
        compiled = compiler.compile_for_arch(
            spec.source, [spec.name_expression], arch, spec.filename
        )
        resources = compiled.resources[spec.name_expression]
        assert resources.problems(spec.geometry.threads) == [], str(resources)


def test_a_ragged_twin_runs_exactly_where_k_ends_inside_a_slice():
    """compose launches a tile shape's RAGGED twin where K is not a multiple of BK and
    the tile shape has one, for a product split in layers too (only its last layer
    ends inside a slice, and the twin checks that layer's own length)."""
    launched = []

    def gemm(key):
        return lambda M, N, K, *rest, layers=1: launched.append((key, K, layers))

    gemms = {key: gemm(key) for key in composed.gemm_specs()}
    ragged, plain = min(by_shape.RAGGED), "128x128"
    assert plain not in by_shape.RAGGED
    for plan in [Plan(ragged, 1), Plan(ragged, 3), Plan(plain, 1)]:
        launch = composed.compose(
            lambda M, N, K, plan=plan: plan, gemms, lambda *a: None, lambda n: [0.0] * n
        )
        for K in (64, 65, 79):
            launched.clear()
            launch(8, 8, K, 1.0, None, None, 0.0, None)
            twin = plan.tiles in by_shape.RAGGED and K % 16 != 0
            key = f"{plan.tiles} ragged" if twin else plan.tiles
            assert launched == [(key, K, plan.splits)]


@pytest.mark.parametrize("tiles", sorted(by_shape.RAGGED))
@pytest.mark.slow
def test_a_ragged_twin_is_right_where_k_ends_inside_a_slice(tiles):
    """The twin's last slice stops where K does: right at every small shape, most of
    which end inside a slice (on a GPU, compose runs it in layers too:
    test_on_a_gpu_every_tile_shape_is_right_on_the_whole_suite)."""
    assert any(s.K % by_shape.TILES[tiles]["BK"] for s in SMALL)
    spec = composed.gemm_specs((tiles,))[composed.gemm_key(tiles, 16, 1)]
    assert template_arguments(spec.source, spec.name_expression)["RAGGED"] == 1
    report = judge.check(spec, backend="cpu", shapes=SMALL)
    assert report.ok and {c.shape for c in report.cases} == set(SMALL), str(report)


@pytest.mark.parametrize("sms", [T4, H100])
@pytest.mark.parametrize("shape", SWEEP, ids=lambda s: "x".join(map(str, s)))
def test_the_rule_of_thumb_is_deterministic_and_within_bounds(shape, sms):
    plan = by_shape.rule_of_thumb(*shape, sms)
    assert plan == by_shape.rule_of_thumb(*shape, sms)
    assert plan.tiles in by_shape.TILES
    assert 1 <= plan.splits <= by_shape.max_splits(shape[2], plan.tiles)


def test_the_rule_of_thumb_splits_only_where_the_tiles_leave_sms_idle():
    assert by_shape.rule_of_thumb(4096, 4096, 4096, H100) == Plan("128x128", 1)
    skinny = by_shape.rule_of_thumb(128, 4096, 4096, H100)
    assert skinny.splits > 1
    costs = explorers.plan_costs(128, 4096, 4096, skinny, H100)
    assert 0.5 <= costs.waves <= 1.0, costs
    # A short K cannot be split much: smaller tiles instead.
    assert by_shape.rule_of_thumb(128, 128, 128, H100).tiles == "64x64"


def test_each_layer_keeps_at_least_its_minimum_of_slices():
    for K in (1, 16, 63, 64, 65, 4093, 1 << 20):
        for tiles, p in by_shape.TILES.items():
            S = by_shape.max_splits(K, tiles)
            assert S == 1 or math.ceil(K / p["BK"]) // S >= by_shape.MIN_SLICES_PER_LAYER
            assert S <= by_shape.MAX_SPLITS


@pytest.mark.parametrize("sms", [T4, 58, 108, H100])  # an L4 has 58 SMs, an A100 108
def test_shape_classes_cover_every_shape_and_each_class_is_measured_inside_itself(sms):
    for cls in tune_plans.classes():
        assert by_shape.shape_class(*by_shape.measured_shape(cls, sms), sms) == cls
        samples = by_shape.sample_shapes(cls, sms)
        assert len(set(samples)) == 4
        for M, N, K in samples:
            assert by_shape.shape_class(M, N, K, sms) == cls
            if cls[2]:  # aligned rows, still partial tiles and a ragged K
                assert M % 8 == N % 8 == K % 8 == 4
            else:  # odd: partial tiles, a ragged K, and rows of A and B unaligned
                assert M % 2 == N % 2 == K % 2 == 1
    assert by_shape.shape_class(1, 1, 1, sms) == (0, 0, 0)
    assert by_shape.shape_class(4, 4, 4, sms) == (0, 0, 1)
    last = (len(by_shape.WAVES_MEASURED) - 1, len(by_shape.K_MEASURED) - 1)
    assert by_shape.shape_class(8192, 8192, 65536, sms) == (*last, 1)
    assert by_shape.shape_class(8192, 8191, 65536, sms) == (*last, 0)


def table(plans) -> Table:
    return Table("Test GPU", H100, plans, "today")


def test_a_table_keeps_its_classs_block_count_and_is_read_back_as_written():
    cls = by_shape.shape_class(128, 2560, 4096, H100)
    t = table({cls: Plan("128x128", 8)})
    M0, N0, _ = by_shape.measured_shape(cls, H100)
    blocks = 8 * by_shape.tile_count(M0, N0, "128x128")
    plan = t.choose(128, 2560, 4096)  # the same class, fewer tiles: more layers
    tiles = by_shape.tile_count(128, 2560, "128x128")
    assert plan.tiles == "128x128" and blocks / tiles == 10
    assert plan.splits == 11  # of 9, 10 and 11 layers, the one that fills its last wave best
    assert t.choose(128, 2560, 4096) == plan  # deterministic
    assert Table.from_json(t.to_json()) == t
    # A class the table lacks falls back on the rule of thumb.
    assert t.choose(1001, 777, 513) == by_shape.rule_of_thumb(1001, 777, 513, H100)
    # A class measured best unsplit stays unsplit, whatever its shape.
    big = table({by_shape.shape_class(1400, 1400, 4096, H100): Plan("64x128", 1)})
    assert big.choose(1400, 1400, 4096) == Plan("64x128", 1)


def test_layers_scaled_to_a_shape_fill_the_last_wave_rather_than_leave_a_quarter_idle():
    cls = by_shape.shape_class(1024, 1024, 1024, H100)
    M0, N0, _ = by_shape.measured_shape(cls, H100)
    assert (M0, N0) == (1024, 1024)  # the class's own shape: 3 layers would be kept as they are
    # ... but 64 tiles in 3 layers make 192 blocks for 264 places, in 4 layers 256
    assert table({cls: Plan("128x128", 3)}).choose(1024, 1024, 1024) == Plan("128x128", 4)


@pytest.mark.parametrize(
    "shape, tiles",
    [
        ((2048, 2048, 2048), "128x256"),
        ((4096, 4096, 128), "128x256"),
        ((8192, 8192, 256), "128x256"),
        ((4095, 4097, 4093), "256x128"),  # 544 tiles of 128 x 256, 528 of 256 x 128
    ],
)
def test_where_one_of_the_big_tiles_fills_the_waves_evenly_it_is_chosen(shape, tiles):
    # 128, 512, 2048 and 528 tiles for 132 SMs: at least 97% of the SMs' turns used.
    assert by_shape.wave_fill(*shape[:2], tiles, H100) > by_shape.EVEN_WAVES
    elsewhere = table({by_shape.shape_class(*shape, H100): Plan("64x128", 2)})
    assert elsewhere.choose(*shape) == Plan(tiles, 1)


def test_whole_waves_of_big_tiles_and_the_rows_below_them_are_products_of_their_own():
    assert by_shape.wave_fill(3001, 2999, "256x128", H100) == 288 / (3 * 132)
    assert by_shape.wave_fill(3001, 2999, "128x256", H100) == 288 / (3 * 132)
    # 11 rows of 24 tiles of 256 x 128: 264 blocks, two whole waves.
    assert by_shape.whole_waves(3001, 2999, H100) == (2816, "128x256")
    rest = by_shape.shape_class(3001 - 2816, 2999, 3003, H100)
    plan = table({rest: Plan("64x128", 1)}).choose(3001, 2999, 3003)
    assert plan == Bands(2816, Plan("128x256", 1), Plan("64x128", 1))
    # A short K is the table's, bands or not.
    cls = by_shape.shape_class(3001, 2999, 200, H100)
    assert table({cls: Plan("64x64", 1)}).choose(3001, 2999, 200) == Plan("64x64", 1)
    # Less than a wave of big tiles: no band to take apart.
    assert by_shape.whole_waves(1001, 777, H100) is None


def test_tiles_short_of_a_wave_leave_the_choice_to_the_table():
    assert by_shape.wave_fill(512, 512, "256x128", H100) == 8 / 132  # most SMs idle
    cls = by_shape.shape_class(512, 512, 512, H100)
    assert table({cls: Plan("64x128", 1)}).choose(512, 512, 512) == Plan("64x128", 1)


def test_a_plan_of_big_tiles_takes_the_one_that_covers_a_skinny_c_in_fewer_tiles():
    for M, N, tiles in ((128, 4096, "128x256"), (4096, 128, "256x128")):
        cls = by_shape.shape_class(M, N, 4096, H100)
        for measured in by_shape.BIG_TILES:
            assert table({cls: Plan(measured, 8)}).choose(M, N, 4096).tiles == tiles


def test_a_table_naming_tiles_the_dispatcher_lacks_is_refused():
    text = table({(0, 0, 1): Plan("128x128", 1)}).to_json().replace("128x128", "96x96")
    with pytest.raises(ValueError, match="96x96"):
        Table.from_json(text)


def test_a_table_measured_for_other_shape_classes_is_refused():
    data = json.loads(table({(0, 0, 1): Plan("128x128", 1)}).to_json())
    data["k_bounds"] = [256, 1024, 4096, 16384]
    with pytest.raises(ValueError, match="tune 09"):
        Table.from_json(json.dumps(data))


def test_a_gpu_without_a_table_gets_the_devices_own_arithmetic():
    t4 = datasheet_device("Tesla T4")
    choose = by_shape.chooser("A GPU nobody tuned on", t4)
    assert choose(512, 512, 32768) == by_shape.device_rule(512, 512, 32768, t4)


def test_graded_runs_split_every_shape_of_the_suite_in_two_to_four_layers():
    layers = {composed.graded_splits(s.M, s.N, s.K) for s in SMALL}
    assert layers == {2, 3, 4}
    # Each shape of the suite runs twice (beta = 0 and not): every tile shape over the
    # top half of C and over the bottom half, in one pass of the suite.
    choose = by_shape.in_turn()
    plans = [choose(s.M, s.N, s.K) for s in SMALL for _ in range(2)]
    # (Step 08's own, OWN, is 256x128 on the CPU: no SLIDE or SPREAD is built for it.)
    assert {p.top.tiles for p in plans if isinstance(p, Bands)} == set(by_shape.CHOICES)
    assert {p.rest.tiles for p in plans if isinstance(p, Bands)} == set(by_shape.CHOICES)


def test_the_tuner_keeps_the_plan_best_across_its_class_and_right_at_every_shape():
    first = {cls: by_shape.sample_shapes(cls, H100)[0] for cls in tune_plans.classes()}

    def time_plan(shape, plan):
        # 64x64 tiles are the fastest everywhere, but wrong at each class's first
        # shape; otherwise more layers are faster.
        wrong = plan.tiles == "64x64" and shape in first.values()
        return (10_000.0 if plan.tiles == "64x64" else 100.0 * plan.splits), (
            "wrong" if wrong else ""
        )

    plans, timings = tune_plans.search(H100, time_plan, lambda shape: 1000.0)
    assert set(plans) == set(tune_plans.classes())
    for cls, plan in plans.items():
        assert plan.tiles != "64x64"
        rows = [t for t in timings if (t.waves, t.k, t.aligned) == cls]
        assert {(t.M, t.N, t.K) for t in rows} == set(by_shape.sample_shapes(cls, H100))
        # Each timing ran the candidate as the dispatcher scales it to that shape.
        for t in rows:
            at_shape = by_shape.scaled(Plan(t.tiles, t.class_splits), cls, t.M, t.N, t.K, H100)
            assert t.splits == at_shape.splits

        # No right candidate has a better geometric mean over the class's shapes.
        def mean(p):
            return math.prod(t.share for t in rows if (t.tiles, t.class_splits) == p) ** 0.25

        candidates = {(t.tiles, t.class_splits) for t in rows if t.tiles != "64x64"}
        assert mean((plan.tiles, plan.splits)) == max(map(mean, candidates))
    assert all(t.cublas_gflops == 1000.0 for t in timings)


def test_a_table_from_an_older_dispatcher_warns_and_falls_back_on_the_devices_arithmetic(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(registry, "DATA_DIR", tmp_path)
    stale = json.loads(table({(0, 0, 1): Plan("128x128", 1)}).to_json()) | {"version": 1}
    by_shape.table_path("Old GPU").write_text(json.dumps(stale))
    h100 = datasheet_device("H100 SXM")
    with pytest.warns(UserWarning, match="version 1.*device's arithmetic"):
        choose = by_shape.chooser("Old GPU", h100)
    assert choose(128, 128, 128) == by_shape.device_rule(128, 128, 128, h100)


def test_the_reduction_takes_its_own_contract_and_a_gemm_kernel_is_told_so():
    step = registry.step("09")
    contract.check(step.source(), step.name_expression, step.path.name, contract.REDUCE)
    with pytest.raises(contract.Mismatch, match="it has no splits and no partial"):
        gemm = registry.step("08")
        contract.check(gemm.source(), gemm.name_expression, gemm.path.name, contract.REDUCE)


def test_the_reduction_leaves_c_unread_where_beta_is_0():
    """BLAS lets C hold anything where beta is 0, NaN too (memory never written): step 09's
    reduction, run on the CPU, then writes alpha times the layers' sum, as step 08 does, and
    reads C where beta is not 0."""
    import numpy as np

    from autograder.run import cpu

    spec = KernelSpec.from_step(registry.step("09"))
    reduce = cpu._launcher(spec, cpu.build(spec))
    M, N, splits = 5, 7, 3
    partial = np.arange(splits * M * N, dtype=np.float32)
    total = partial.reshape(splits, M * N).sum(axis=0)
    C = np.full(M * N, np.nan, dtype=np.float32)
    reduce(M, N, splits, 1.5, partial, 0.0, C)
    assert (C == 1.5 * total).all()
    C = np.full(M * N, 2.0, dtype=np.float32)
    reduce(M, N, splits, 1.5, partial, -0.5, C)
    assert (C == 1.5 * total - 1.0).all()


@pytest.mark.slow
def test_the_reference_gemm_is_right_at_every_tile_shape_and_number_of_layers():
    """The CPU runs each tile shape in turn, K split in 2 to 4 layers (the graded
    GEMM), and the dispatcher's own plans with none forced."""
    spec = KernelSpec.from_step(registry.step("09"))
    assert spec.split_every_case
    for s in (spec, replace(spec, split_every_case=False)):
        report = judge.check(s, backend="cpu", shapes=SMALL)
        assert report.ok and len(report.cases) == 2 * len(SMALL), str(report)


@pytest.mark.parametrize("tiles", sorted(by_shape.SLID | set(by_shape.SPREAD)))
@pytest.mark.slow
def test_a_tile_slid_back_inside_c_writes_only_its_own_part(tiles):
    """A block whose tile slides back inside C (SLIDE) computes a strip its neighbour
    owns: where it wrote that strip too, beta C would be added twice there. The last
    shapes have a tile and part of another in both directions, with C's rows aligned
    for float4s and not (then in the STAGE twin of the tiles that have one). Built as
    for an H100, where the tiles of SPREAD slide too."""
    p = by_shape.TILES[tiles]
    for N in (p["BN"] + 72, p["BN"] + 73):
        spec = composed.gemm_specs((tiles,), "sm_90")[composed.gemm_key(tiles, N, 16)]
        assert template_arguments(spec.source, spec.name_expression)["SLIDE"] == 1
        slides = Shape(p["BM"] + 44, N, 40, "a tile and part of another each way")
        report = judge.check(spec, backend="cpu", shapes=(*SMALL, slides))
        assert report.ok and {c.shape for c in report.cases} == {*SMALL, slides}, str(report)


@pytest.mark.slow
def test_without_step_09s_parameters_step_08_is_the_kernel_without_their_lines():
    """SLIDE = 0, RAGGED = 0, GROUPS = 1, STAGE = 0 and BLOCKS = 0, step 08's own: the same
    machine code as its source with every line of the slide, the ragged end, the groups,
    the staged epilogue and the chosen minimum of blocks removed, so that what was measured
    of step 08 before they existed still holds (nvdisasm, sm_90)."""
    sass = pytest.importorskip("autograder.measure.sass")
    step = registry.step("08")
    src = step.source()
    plain = src
    for block in ("groups", "stage"):
        start = plain.index(f"  // [docs:{block}]\n")
        plain = plain[:start] + plain[plain.index(f"  // [docs:{block}-end]\n") :]
    for old, new in (  # every occurrence
        ("2 * group() + buf", "buf"),
        ("tid()", "threadIdx.x"),
        ("sync();", "__syncthreads();"),
        ("[2 * GROUPS]", "[2]"),
    ):
        assert old in plain, old
        plain = plain.replace(old, new)
    for old, new in (
        (
            "SLIDE ? max(0, min(static_cast<int>(blockIdx.y) * BM, M - BM))\n            : blockIdx.y * BM",
            "blockIdx.y * BM",
        ),
        (
            "SLIDE ? max(0, min(static_cast<int>(blockIdx.x) * BN, N - BN))\n            : blockIdx.x * BN",
            "blockIdx.x * BN",
        ),
        ("      if (SLIDE && row < ownRow) continue;\n", ""),
        ("GROUPS * block_threads(BM, BN, WM, WN)", "block_threads(BM, BN, WM, WN)"),
        ("BLOCKS ? BLOCKS\n           : blocks_per_sm", "blocks_per_sm"),
        (
            "  const unsigned runs = GROUPS * gridDim.z;\n"
            "  const int kPerLayer = (K + runs * BK - 1) / (runs * BK) * BK;\n"
            "  const int kBegin = (blockIdx.z * GROUPS + group()) * kPerLayer;",
            "  const int kPerLayer = (K + gridDim.z * BK - 1) / (gridDim.z * BK) * BK;\n"
            "  const int kBegin = blockIdx.z * kPerLayer;",
        ),
        ("      if (RAGGED && next == NONE && k0 + k >= layerK) break;\n", ""),
    ):
        assert plain.count(old) == 1, old
        plain = plain.replace(old, new)

    def code(source):
        compiled = compiler.compile_for_arch(source, [step.name_expression], "sm_90", "k.cu")
        try:
            found = sass.functions(sass.disassemble(compiled.cubin))
        except sass.DisassemblerUnavailable as e:
            pytest.skip(str(e))
        instructions, _ = found[compiled.symbols[step.name_expression]]
        return [(i.predicate, i.opcode, i.operands) for i in instructions]

    assert code(src) == code(plain)


@pytest.mark.gpu
@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("tiles", by_shape.TILES)
def test_on_a_gpu_every_tile_shape_is_right_on_the_whole_suite(tiles, splits):
    import cupy

    from autograder.judge import checker
    from autograder.run.backends import gpu_launcher

    spec = replace(KernelSpec.from_step(registry.step("09")), split_every_case=False)
    launch = gpu_launcher(spec, choose=lambda M, N, K: Plan(tiles, splits))
    sync = cupy.cuda.Device().synchronize
    budget = checker.GPU_BUDGET
    events = list(checker.iter_suite(cupy, launch, checker.SUITE, 1, sync, budget))
    assert not [e for e in events if isinstance(e, checker.Skipped)]
    results = [e for e in events if isinstance(e, checker.CaseResult)]
    # The large shape runs with beta != 0 only (Budget.one_beta), the others with both.
    assert len(results) == sum(1 if s in budget.one_beta else 2 for s in checker.SUITE)
    assert all(r.ok for r in results), [f"{r.label}: {r.message}" for r in results if not r.ok]


@pytest.mark.gpu
def test_on_a_gpu_bands_of_rows_are_right_on_the_whole_suite():
    import cupy

    from autograder.judge import checker
    from autograder.run.backends import gpu_launcher

    def choose(M, N, K):  # the top half of C's rows unsplit, the rest split in 3
        if M < 2:
            return Plan("256x128", 3)
        return Bands((M + 1) // 2, Plan("128x256", 1), Plan("64x64w8", 3))

    spec = replace(KernelSpec.from_step(registry.step("09")), split_every_case=False)
    launch = gpu_launcher(spec, choose=choose)
    sync = cupy.cuda.Device().synchronize
    events = list(checker.iter_suite(cupy, launch, checker.SUITE, 1, sync, checker.GPU_BUDGET))
    results = [e for e in events if isinstance(e, checker.CaseResult)]
    assert results and all(r.ok for r in results), [
        f"{r.label}: {r.message}" for r in results if not r.ok
    ]


def test_tune_09_dry_run_lists_every_class_and_its_plans_without_a_gpu(capsys):
    from autograder.course import cli

    assert cli.main(["tune", "09", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("the plans tune 09 would time on")
    assert len(lines) == 1 + len(tune_plans.classes())
    assert all(f"{len(by_shape.CHOICES)} tile shapes" in line for line in lines[1:])


@pytest.mark.gpu
def test_on_a_gpu_the_gemms_built_side_by_side_are_each_keys_own():
    # backends._gpu_kernels builds step 09's GEMMs in threads: each key must get the
    # kernel of its own spec, on the caller's GPU, as a build one at a time gives it.
    from autograder.run import backends, composed, gpu

    specs = composed.gemm_specs(arch=gpu.device_info().arch)
    together = backends._gpu_kernels(specs)
    assert list(together) == list(specs)
    for key, spec in specs.items():
        one, alone = together[key].function, backends._gpu_kernel(spec).function
        facts = ("num_regs", "max_threads_per_block", "shared_size_bytes")
        assert [getattr(one, f) for f in facts] == [getattr(alone, f) for f in facts], key
