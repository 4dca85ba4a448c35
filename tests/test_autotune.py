"""Step 09 on a GPU nobody tuned on: the device's own arithmetic (by_shape.device_rule,
shortlist) fed a T4's, an A100's and an L4's properties, and first-use tuning
(autograder.run.autotune) with a fake timer and a cache in a temporary directory. No
GPU anywhere."""

import json
import math
from dataclasses import replace

import pytest

from autograder.ladder import hardware
from autograder.measure import bench, tune_plans
from autograder.run import autotune, by_shape, compiler, composed
from autograder.run.by_shape import Bands, Plan

LEARNERS = ("Tesla T4", "A100 (40 GB)", "L4")
SHAPES = [bench.parse_size(s) for s in bench.sweep_sizes() + bench.outside_sizes()] + [
    (1, 1, 1), (7, 3000, 5), (31, 33, 100_000), (5000, 17, 9), (129, 129, 129)
]  # fmt: skip


def plans_of(choice):
    """The plans a choice runs, its bands' included."""
    if isinstance(choice, Bands):
        return [choice.top, *plans_of(choice.rest)]
    return [choice]


def test_the_learners_gpus_have_the_limits_the_issue_names():
    t4, a100, l4 = (hardware.datasheet_device(g) for g in LEARNERS)
    assert (t4.arch, t4.sms, t4.shared_per_sm, t4.registers_per_sm) == ("sm_75", 40, 64 << 10, 65536)
    assert (a100.arch, a100.sms, a100.shared_per_sm) == ("sm_80", 108, 164 << 10)
    assert (l4.arch, l4.sms, l4.shared_per_sm) == ("sm_89", 58, 100 << 10)


@pytest.mark.parametrize("gpu", LEARNERS)
def test_every_choice_of_the_devices_arithmetic_fits_the_device(gpu):
    """Shared memory, registers (the registry's floor) and threads of every plan chosen
    or shortlisted, at every shape of the sweep and beyond it; layers within bounds."""
    device = hardware.datasheet_device(gpu)
    limits = device.limits()
    for M, N, K in SHAPES:
        chosen = plans_of(by_shape.device_rule(M, N, K, device))
        cls = by_shape.shape_class(M, N, K, device.sms)
        for plan in chosen + by_shape.shortlist(cls, device, priors=by_shape.committed_tables()):
            r = by_shape.tile_resources(plan.tiles)
            assert hardware.launch_problems(
                limits, r.threads, r.registers, static_shared=r.shared_bytes
            ) == [], (gpu, plan)
            assert hardware.occupancy(limits, r.threads, r.registers, r.shared_bytes).blocks >= 1
            assert 1 <= plan.splits <= by_shape.MAX_SPLITS, plan


@pytest.mark.slow
@pytest.mark.parametrize("gpu", LEARNERS)
def test_every_tile_shape_fits_the_device_with_the_registers_it_compiles_to(gpu):
    """The compiled resource reports (ptxas, for the device's architecture) rather than
    the registry's floor: each tile shape's block fits and an SM holds one or more."""
    device = hardware.datasheet_device(gpu)
    registers = {}
    for name, spec in composed.gemm_specs(tuple(by_shape.TILES), device.arch).items():
        if name not in by_shape.TILES:
            continue
        compiled = compiler.compile_for_arch(
            spec.source, [spec.name_expression], device.arch, spec.filename
        )
        registers[name] = compiled.resources[spec.name_expression].registers
    for tiles in by_shape.TILES:
        assert by_shape.resident_blocks(tiles, device, registers) >= 1, (gpu, tiles)
    for M, N, K in SHAPES:
        for plan in plans_of(by_shape.device_rule(M, N, K, device, registers)):
            assert by_shape.resident_blocks(plan.tiles, device, registers) >= 1


@pytest.mark.parametrize("gpu", (*LEARNERS, "H100 SXM"))
def test_step_08s_own_plan_is_in_every_shortlist(gpu):
    device = hardware.datasheet_device(gpu)
    for cls in tune_plans.classes():
        found = by_shape.shortlist(cls, device, priors=by_shape.committed_tables())
        M, N, _ = by_shape.measured_shape(cls, device.sms)
        assert by_shape.safe_plan(M, N) in found, (gpu, cls, found)
        assert found[0].splits == 1 and found[0].tiles in (by_shape.OWN, *by_shape.BIG_TILES)
        assert 1 <= len(found) <= by_shape.SHORTLIST and len(set(found)) == len(found)


@pytest.mark.parametrize("gpu", (*LEARNERS, "H100 SXM"))
def test_the_untuned_rule_leaves_step_08_only_for_a_clear_win_by_its_arithmetic(gpu):
    """Where the rule's class part runs something other than step 08's plan, the model
    says it is CLEAR_WIN times faster; where 08's tiles fill a wave or more and fill it
    evenly, it runs 08's own."""
    device = hardware.datasheet_device(gpu)
    for M, N, K in SHAPES:
        plan = by_shape.device_class_plan(M, N, K, device)
        safe = by_shape.safe_plan(M, N)
        if plan != safe:
            model = by_shape.modelled_seconds
            assert model(plan, M, N, K, device) * by_shape.CLEAR_WIN <= model(safe, M, N, K, device)
        if by_shape.wave_fill(M, N, "256x128", device.sms) >= by_shape.EVEN_WAVES:
            assert by_shape.device_rule(M, N, K, device) == by_shape.SAFE


def test_the_untuned_rule_fixes_what_the_old_rule_of_thumb_lost_on_the_h200():
    """2048^3 and 4096^3 on 132 SMs: the old rule ran 128 x 128 tiles (96.1% and 97.4% of
    cuBLAS against 08's 99.6% and 99.2%, H200, 2026-11-27); the device's arithmetic
    keeps step 08's own."""
    h200 = hardware.datasheet_device("H100 SXM")  # the same SMs and clocks
    for side in (2048, 4096):
        assert by_shape.rule_of_thumb(side, side, side, h200.sms) == Plan("128x128", 1)
        assert by_shape.device_rule(side, side, side, h200) == by_shape.SAFE


# ---- first-use tuning, with a fake timer ---------------------------------------------------


def fake_timer(fastest: str, calls: list):
    """Seconds by tile shape: `fastest` twice as fast as the rest; more layers slower;
    bands of rows slowest."""

    def time_plan(shape, plan):
        calls.append((shape, plan))
        if isinstance(plan, Bands):
            return 3.0
        return (1.0 if plan.tiles == fastest else 2.0) * (1 + 0.01 * plan.splits)

    return time_plan


def classes_only(device, time_plan, cache=None, **kwargs):
    """First-use tuning with no shape timed at itself: every shape takes its class's plan."""
    return autotune.FirstUse(device, time_plan, cache, race_s=0.0, **kwargs)


def cache_at(tmp_path, gpu="Tesla T4", **versions):
    device = hardware.datasheet_device(gpu)
    key = autotune.key(device.name, device.sms, {"driver": "13.0", "nvrtc": "13.0", **versions})
    return device, autotune.Cache(key, tmp_path)


def test_a_class_is_tuned_once_over_its_shortlist_and_its_sample_shapes(tmp_path, capsys):
    device, cache = cache_at(tmp_path)
    cls = by_shape.shape_class(333, 777, 129, device.sms)
    shortlist = by_shape.shortlist(cls, device)
    calls = []
    first = classes_only(device, fake_timer(shortlist[-1].tiles, calls), cache)
    choice = first.choose(333, 777, 129)
    assert first.plans[cls] == shortlist[-1]  # the fastest by the timer, not the model
    timed = {p for _, p in calls}
    shapes = {s for s, _ in calls}
    assert len(calls) == len(shortlist) * len(shapes)
    assert shapes <= set(by_shape.sample_shapes(cls, device.sms))
    assert len(timed) <= by_shape.SHORTLIST
    assert choice == by_shape.scaled(shortlist[-1], cls, 333, 777, 129, device.sms)
    # Another shape of the class: nothing timed again.
    calls.clear()
    first.choose(335, 771, 131)
    assert calls == []
    err = capsys.readouterr().err
    assert err.count("no dispatch table for the Tesla T4") == 1 and "tuned class 1" in err
    assert f"{autotune.ENV}=0" in err and str(cache.path) in err


@pytest.mark.parametrize("gpu", (*LEARNERS, "H100 SXM"))
def test_a_shape_is_timed_at_itself_over_every_plan_there_is_for_it(gpu, tmp_path, capsys):
    """At a shape whose arithmetic takes race_s or less: step 08's own kernel, every plan
    of the plan space that fits the device, and the bands of whole waves where C has
    them, all at that very shape; the fastest by the timer is kept, whatever its class
    would have chosen. Over race_s, the class's plan."""
    device, cache = cache_at(tmp_path, gpu)
    for M, N, K in SHAPES:
        first = autotune.FirstUse(device, lambda s, p: 1.0, None, race_s=math.inf)
        found = first.candidates(M, N, K)
        space = by_shape.plan_space(M, N, K, device.sms)
        assert found[0] == by_shape.SAFE and set(space) <= set(found), (gpu, M, N, K)
        bands = [c for c in found if isinstance(c, Bands)]
        assert len(bands) == (by_shape.whole_waves(M, N, device.sms) is not None)
        for plan in (p for c in found for p in plans_of(c)):
            assert by_shape.resident_blocks(plan.tiles, device) and plan.splits >= 1
    capsys.readouterr()
    # The fake's fastest: the last plan of the space, one no class chooses at a skinny C
    # (on an H200, 64 x 128 tiles in 6 layers ran 64x8192x4096 fastest, where its class
    # chose 128 x 256 in 8).
    wanted, calls = by_shape.plan_space(64, 8192, 4096, device.sms)[-1], []

    def time_plan(shape, plan):
        calls.append((shape, plan))
        return 1.0 if plan == wanted else 2.0

    first = autotune.FirstUse(device, time_plan, cache, race_s=math.inf)
    assert first.choose(64, 8192, 4096) == wanted
    assert {s for s, _ in calls} == {(64, 8192, 4096)} and first.tuned == []
    assert len(calls) == len(first.candidates(64, 8192, 4096))
    calls.clear()
    assert first.choose(64, 8192, 4096) == wanted and calls == []
    err = capsys.readouterr().err
    assert err.count("no dispatch table") == 1 and f"at 64x8192x4096: {wanted}," in err
    # Over race_s: the class's plan, tuned at the class's sample shapes.
    first.race_s = 0.0
    first.choose(64, 8192, 4000)
    assert first.tuned and {s for s, _ in calls} <= set(
        by_shape.sample_shapes(first.tuned[0][0], device.sms)
    )


def test_choosing_at_a_shape_never_loses_to_step_08_by_the_timer(tmp_path):
    """Whatever the timer says, the kept choice is the fastest it timed, step 08's own
    kernel among them: so never slower than step 08 by more than the timing's noise."""
    device, _ = cache_at(tmp_path, "H100 SXM")
    for M, N, K in SHAPES:
        timed = {}

        def time_plan(shape, plan):
            timed[shape, plan] = 1 + (hash((shape, plan)) % 97) / 10
            return timed[shape, plan]

        choice = autotune.FirstUse(device, time_plan, race_s=math.inf).choose(M, N, K)
        here = {p: t for (shape, p), t in timed.items() if shape == (M, N, K)}
        assert here[choice] == min(here.values()) <= here[by_shape.SAFE]


def test_tuned_plans_round_trip_through_the_cache_and_are_not_timed_again(tmp_path):
    device, cache = cache_at(tmp_path, "H100 SXM")
    calls = []
    # 3001x2999x3003 takes 0.8 ms at the H100's peak, 1024x1024x40000 1.3 ms.
    first = autotune.FirstUse(device, fake_timer("64x64", calls), cache, race_s=1e-3)
    first.choose(333, 777, 129)  # timed at itself
    first.choose(1024, 1024, 40000)  # in its class's plan: tuned at the class's shapes
    first.choose(3001, 2999, 3003)  # at itself, with bands of rows among its plans
    assert first.raced and first.tuned and cache.path.exists() and cache.path.parent == tmp_path
    assert any(isinstance(c, Bands) for _, c in calls)
    first.chosen[3001, 2999, 3003] = Bands(2816, Plan("256x128", 1), Plan("64x64", 2))
    cache.save(shapes=first.chosen)
    again = autotune.FirstUse(
        device, fake_timer("32x64w4", calls := []), autotune.Cache(cache.key, tmp_path), race_s=1e-3
    )
    assert again.plans == first.plans and again.chosen == first.chosen
    for shape in ((333, 777, 129), (1024, 1024, 40000), (3001, 2999, 3003)):
        assert again.choose(*shape) == first.choose(*shape)
    assert calls == []
    assert not list(tmp_path.glob(".tmp-*"))  # written beside, then renamed


def test_the_cache_is_keyed_by_the_gpu_the_versions_and_the_kernels_source(tmp_path, monkeypatch):
    _, cache = cache_at(tmp_path)
    cache.save({(0, 0, 1): Plan("64x64", 2)}, {(64, 64, 64): Plan("32x64w4", 1)})
    others = [
        cache_at(tmp_path, "L4")[1],
        cache_at(tmp_path, driver="13.1")[1],
        cache_at(tmp_path, nvrtc="13.2")[1],
    ]
    monkeypatch.setattr(autotune, "source_hash", lambda: "another kernel")
    others.append(cache_at(tmp_path)[1])
    for other in others:
        assert other.path != cache.path and other.load() == autotune.Kept()
    # A file renamed onto another key's name is refused: the key inside must match.
    others[1].path.write_text(cache.path.read_text())
    assert others[1].load() == autotune.Kept()


@pytest.mark.parametrize(
    "flags, tiles", [("BLOCKS", "32x64w4"), ("GROUPS", "32x32w2g4")]
)  # fmt: skip
def test_plans_cached_for_other_tile_flags_are_not_kept(monkeypatch, flags, tiles):
    """A plan's speed is its kernels' with every flag step 09 builds them with: a change
    to any of them (the fewest blocks an SM must hold, the groups of a block) makes
    another cache, as a change to a kernel's source does."""
    before = autotune.source_hash()
    table = getattr(by_shape, flags)
    monkeypatch.setitem(table, tiles, table[tiles] + 1)
    assert autotune.source_hash() != before


@pytest.mark.parametrize(
    "text", ["{not json", json.dumps({"version": 1, "key": 3}), "[]",
             json.dumps({"version": 99})]
)  # fmt: skip
def test_a_corrupt_cache_is_ignored_with_a_note_and_tuned_anew(tmp_path, capsys, text):
    device, cache = cache_at(tmp_path)
    cache.directory.mkdir(exist_ok=True)
    cache.path.write_text(text)
    calls = []
    first = autotune.FirstUse(device, fake_timer("64x64", calls), cache)
    assert first.plans == {}
    assert "corrupt" in capsys.readouterr().err
    first.choose(333, 777, 129)
    assert calls and autotune.Cache(cache.key, tmp_path).load() == autotune.Kept({}, first.chosen)


@pytest.mark.parametrize(
    "choice",
    [Bands(300, Plan("64x64", 1), Plan("64x64", 1)),  # bands a C of 300 rows lacks
     Bands(128, Plan("64x64", 1), Plan("64x64", 1)),  # not big tiles: no band of them
     Plan("64x64", 3),  # three layers of K = 64: a layer of one slice and a half
     Plan("64x64", 10**9), Plan("64x64", 0), Plan("65x64", 1)],
)  # fmt: skip
def test_a_choice_the_dispatcher_would_not_make_makes_the_cache_corrupt(tmp_path, capsys, choice):
    _, cache = cache_at(tmp_path)
    cache.save(shapes={(300, 64, 64): choice})
    assert cache.load() == autotune.Kept() and "corrupt" in capsys.readouterr().err


def test_a_plan_with_a_wrong_output_is_never_chosen(tmp_path):
    device, cache = cache_at(tmp_path)
    cls = by_shape.shape_class(333, 777, 129, device.sms)
    bad = by_shape.shortlist(cls, device)[1]

    def time_plan(shape, plan):
        return math.inf if plan.tiles == bad.tiles else 1.0 + (plan.tiles != by_shape.SAFE.tiles)

    first = classes_only(device, time_plan, cache)
    first.choose(333, 777, 129)
    assert first.plans[cls].tiles != bad.tiles
    # At the shape itself: the bad plan would be fastest, were its output right.
    def at_shape(shape, plan):
        return math.inf if plan.tiles == bad.tiles else 1.0 + (plan != by_shape.SAFE)

    assert autotune.FirstUse(device, at_shape).choose(333, 777, 129) == by_shape.SAFE


def test_sample_shapes_too_long_for_a_quick_timing_are_left_out_but_one(tmp_path):
    device, _ = cache_at(tmp_path)
    first = autotune.FirstUse(device, lambda s, p: 1.0, None, max_launch_s=0.0)
    cls = (4, 3, 1)
    assert first.shapes(cls) == [min(by_shape.sample_shapes(cls, device.sms), key=math.prod)]


def test_sgemm_autotune_0_turns_tuning_and_the_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv(autotune.CACHE_ENV, str(tmp_path))
    device = hardware.datasheet_device("L4")
    timer_made = []

    def timer():
        timer_made.append(1)
        return lambda shape, plan: 1.0

    versions = lambda: {"driver": "13.0"}  # noqa: E731
    monkeypatch.setenv(autotune.ENV, "0")
    choose = autotune.chooser("A GPU nobody tuned on", device, timer, versions)
    for M, N, K in SHAPES:
        assert choose(M, N, K) == by_shape.device_rule(M, N, K, device)
    assert timer_made == [] and list(tmp_path.iterdir()) == []
    monkeypatch.setenv(autotune.ENV, "1")
    choose = autotune.chooser("A GPU nobody tuned on", device, timer, versions)
    choose(333, 777, 129)
    assert timer_made == [1] and list(tmp_path.glob("*.json"))


def test_without_tuning_the_cache_is_read_and_never_written(tmp_path, monkeypatch):
    """The judge's launches (tune=False): what was tuned before, the device's arithmetic
    for the rest, nothing timed."""
    monkeypatch.setenv(autotune.CACHE_ENV, str(tmp_path))
    device = hardware.datasheet_device("L4")
    versions = lambda: {"driver": "13.0"}  # noqa: E731
    cls = by_shape.shape_class(333, 777, 129, device.sms)
    cache = autotune.Cache(autotune.key("Some GPU", device.sms, versions()), tmp_path)
    cache.save({cls: Plan("64x64w8", 1)})
    cache.save(shapes={(64, 8192, 4096): Plan("64x128", 3)})
    choose = autotune.chooser("Some GPU", device, None, versions, tune=False)
    assert choose(333, 777, 129) == Plan("64x64w8", 1)
    assert choose(64, 8192, 4096) == Plan("64x128", 3)
    assert choose(1001, 777, 513) == by_shape.device_class_plan(1001, 777, 513, device)
    assert len(list(tmp_path.iterdir())) == 1
    # With nothing kept, exactly the untuned rule.
    empty = autotune.chooser("Other GPU", device, None, versions, tune=False)
    assert empty(4096, 4096, 4096) == by_shape.device_rule(4096, 4096, 4096, device)


def test_a_committed_table_wins_over_tuning(monkeypatch, tmp_path):
    monkeypatch.setenv(autotune.CACHE_ENV, str(tmp_path))
    device = hardware.datasheet_device("H100 SXM")
    name = "NVIDIA H100 80GB HBM3"
    table = by_shape.committed_table(name)
    assert table is not None

    def timer():
        raise AssertionError("nothing is timed where a table is committed")

    choose = autotune.chooser(name, device, timer, lambda: {})
    assert choose(333, 777, 129) == table.choose(333, 777, 129)
    # Set aside (bench --first-use), the same GPU tunes.
    aside = autotune.chooser(name, device, lambda: (lambda s, p: 1.0), lambda: {}, table=False)
    aside(333, 777, 129)
    assert aside.first_use.raced


def test_the_cache_lives_in_the_users_cache_directory_never_the_repository(monkeypatch, tmp_path):
    monkeypatch.delenv(autotune.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert autotune.cache_dir() == tmp_path / "sgemm-course" / "by_shape"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert autotune.cache_dir().is_relative_to(autotune.Path.home())


@pytest.mark.gpu
def test_on_a_gpu_first_use_times_a_shape_at_itself_keeps_it_and_stays_right(
    tmp_path, monkeypatch
):
    """Step 09 as on a GPU nobody tuned on (its table set aside, an empty cache): the
    shapes of the checker's suite are each timed at themselves on first use, the
    choices land in the cache, and the GEMM they make is right on the whole suite;
    a second launcher reads them back and times nothing."""
    import cupy

    from autograder.judge import checker
    from autograder.ladder import registry
    from autograder.run.backends import gpu_launcher
    from autograder.run.kernel import KernelSpec

    monkeypatch.setenv(autotune.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv(autotune.ENV, "1")
    spec = KernelSpec.from_step(registry.step("09"))
    launch = gpu_launcher(replace(spec, split_every_case=False), table=False)
    sync = cupy.cuda.Device().synchronize
    events = list(checker.iter_suite(cupy, launch, checker.SUITE, 1, sync, checker.GPU_BUDGET))
    results = [e for e in events if isinstance(e, checker.CaseResult)]
    assert results and all(r.ok for r in results), [
        f"{r.label}: {r.message}" for r in results if not r.ok
    ]
    first = launch.choose.first_use
    shapes = {(s.M, s.N, s.K) for s in checker.SUITE}
    small = {s for s in shapes if first.arithmetic_s(s) <= first.race_s}
    assert small and small <= {shape for shape, _, _ in first.raced}
    kept = first.cache.load()
    assert kept.shapes == first.chosen and kept.shapes
    again = gpu_launcher(replace(spec, split_every_case=False), table=False)
    for shape, choice in kept.shapes.items():
        assert again.choose(*shape) == choice
    assert again.choose.first_use.raced == [] and again.choose.first_use.seconds == 0.0
