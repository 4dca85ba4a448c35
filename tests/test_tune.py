"""The tuner: its search space, the checks it makes before compiling, its files, its CLI."""

import csv
import dataclasses
import json
import multiprocessing
import os
import pickle
import subprocess
import sys
import time

import pytest

from autograder.isolate import child
from autograder.ladder import registry
from autograder.measure import tune
from autograder.run import compiler, gpu
from autograder.run.compiler import CompileError
from autograder.run.device_clock import Throttled

TUNABLE = [s for s in registry.STEPS if s.tuning]


def trial_for(step_id, **params):
    """The candidate with these parameters (the registry's for the rest), as judged."""
    step = registry.step(step_id)
    wanted = {**step.params, **params}
    return next(t for t in tune.candidates(step) if t.params == wanted)


def test_steps_04_to_08_declare_a_search_space():
    assert [s.id for s in TUNABLE] == ["04", "05", "06", "07", "08"]
    for step in TUNABLE:
        assert set(step.tuning.space) <= set(step.params), step.name


@pytest.mark.parametrize("step", TUNABLE, ids=lambda s: s.name)
def test_a_tunable_step_still_travels_to_child_processes(step):
    assert pickle.loads(pickle.dumps(step)).tuning.rules(step.params) == []


@pytest.mark.parametrize("step", TUNABLE, ids=lambda s: s.name)
def test_the_registrys_own_parameters_are_a_candidate_that_passes(step):
    trial = trial_for(step.id)
    assert trial.verdict == "candidate", trial.reason


@pytest.mark.parametrize("step", TUNABLE, ids=lambda s: s.name)
def test_every_combination_is_listed_once(step):
    trials = tune.candidates(step)
    combinations = 1
    for values in step.tuning.space.values():
        combinations *= len(values)
    assert len(trials) == combinations
    assert len({tuple(t.params.items()) for t in trials}) == combinations


def test_a_configuration_needing_more_than_48_kb_of_shared_memory_is_rejected_with_why():
    trial = trial_for("08", BK=32)  # 2 buffers x 32 x (256 + 128) floats = 96 KB
    assert trial.verdict == "rejected"
    assert "98304 bytes of shared memory" in trial.reason and "48 KB" in trial.reason
    assert trial_for("07", BK=32).verdict == "candidate"  # one buffer: 32 KB


def test_the_register_floor_counts_what_each_warp_tiled_kernel_holds():
    # 64 accumulators; fragments: 8 of A and 8 of B; step 08's prefetched slice:
    # 16 x (256 + 128) floats shared by 512 threads, 12 each.
    assert registry.step("07").tuning.registers(registry.step("07").params) == 64 + 16
    assert registry.step("08").tuning.registers(registry.step("08").params) == 64 + 2 * 16 + 12


def test_too_many_threads_and_too_many_registers_are_rejected_before_compiling():
    trial = trial_for("05", BM=256, BN=256, TM=4, TN=8)  # 64 x 32 threads
    assert trial.verdict == "rejected"
    assert "2048 threads per block; at most 1024" in trial.reason
    assert tune.limits(256, 0, 300) == ["at least 300 registers per thread; at most 255"]
    assert tune.limits(512, 0, 200) == ["at least 200 registers x 512 threads; an SM has 65536"]
    assert tune.limits(256, 49152, 128) == []


def test_a_broken_divisibility_rule_is_named():
    trial = trial_for("07", BM=64, BN=64, WM=32, WN=32)
    assert trial.verdict == "rejected"
    assert "a 32x32 warp tile is not 32 threads x 2 (WNITER)" in trial.reason
    assert registry.step("04").tuning.rules({"BM": 128, "BN": 128, "BK": 8, "TM": 8}) == [
        "the A tile (1024 floats) is not whole rounds of 2048 threads x 1 float",
        "the B tile (1024 floats) is not whole rounds of 2048 threads x 1 float",
    ]


WARP_TILED = [registry.step("07"), registry.step("08")]


def compile_with(step, params):
    spec = tune.spec_for(step, {**step.params, **params})
    return compiler.compile_for_arch(spec.source, [spec.name_expression], "sm_90")


@pytest.mark.parametrize("step", WARP_TILED, ids=lambda s: s.name)
@pytest.mark.parametrize(
    "params, static_assert",
    [
        (dict(TM=6), "tiles are moved in groups of 4 floats"),
        (dict(BN=96, WN=96), "a warp sub-tile is exactly 32 thread tiles"),
        (dict(BM=64, BN=256, BK=8), "every thread copies the same number of float4s"),
    ],
)
def test_what_the_rules_reject_the_kernel_refuses_to_compile(step, params, static_assert):
    assert step.tuning.rules({**step.params, **params})
    with pytest.raises(CompileError, match=static_assert):
        compile_with(step, params)


@pytest.mark.parametrize("step", WARP_TILED, ids=lambda s: s.name)
def test_what_the_rules_pass_compiles(step):
    params = dict(BM=256, BN=128, WM=64, WN=64)
    assert step.tuning.rules({**step.params, **params}) == []
    compile_with(step, params)


def test_a_step_without_tile_parameters_cannot_be_tuned():
    with pytest.raises(ValueError, match="no tile parameters to tune; tunable: 04_blocktiling"):
        tune.candidates(registry.step("02"))


def fake_search(tmp_path):
    """A finished search on a made-up GPU, to test the files without one."""
    step = registry.step("06")
    trials = tune.candidates(step)
    alive = [t for t in trials if t.alive]
    for t, gflops in zip(alive, (900.0, 1200.0, 300.0)):
        tune._settle(t, "timed", "", gflops, cublas=1500.0)
        t.registers, t.spill_bytes = 64, 0
    tune._settle(alive[3], "wrong", "17x19x3, beta=0: 3 of 323 elements are wrong")
    for t in alive[4:]:
        tune._settle(t, "not timed", "the time budget (240 s) ran out")
    return tune.Search(
        step, trials, (512, 512, 512), "NVIDIA Made-Up GPU", "sm_90", cublas_gflops=1500.0
    )


def test_results_csv_lists_every_configuration_best_first(tmp_path):
    search = fake_search(tmp_path)
    path = tune.write_csv(search, tmp_path / "tune.csv")
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(search.trials)
    assert [r["gflops"] for r in rows[:3]] == ["1200.0", "900.0", "300.0"]
    assert rows[0]["pct_cublas"] == "80.0" and rows[0]["verdict"] == "timed"
    assert rows[3]["verdict"] == "wrong" and "17x19x3" in rows[3]["reason"]
    assert {r["verdict"] for r in rows} == {"timed", "wrong", "not timed", "rejected"}
    assert all(r["reason"] for r in rows if r["verdict"] == "rejected")
    assert set(registry.step("06").params) <= set(rows[0])


def test_best_configuration_json_says_how_and_where_it_was_measured(tmp_path):
    search = fake_search(tmp_path)
    record = json.loads(tune.write_json(search, tmp_path / "best.json").read_text())
    assert record["gflops"] == 1200.0 and record["pct_cublas"] == 80.0
    assert record["kernel"] == tune.spec_for(search.step, record["params"]).name_expression
    assert record["gpu"] == "NVIDIA Made-Up GPU" and record["size"] == [512, 512, 512]
    assert record["verdicts"]["timed"] == 3
    assert tune.default_paths(search)[0].name == "tune_06_made_up_gpu.csv"


def test_summary_prints_the_best_and_how_to_use_it(tmp_path):
    text = tune.summary(fake_search(tmp_path))
    assert "1200 GFLOP/s  80.0% of cuBLAS" in text
    assert "set step 06's parameters in autograder/ladder/registry.py" in text
    assert "python -m autograder bench 06" in text


def fake_child(conn, specs, size, seed):
    """Stands in for tune._time_child: one configuration hangs, one kills its
    process, one crashes the GPU (which ends the child), one is wrong."""
    conn.send(tune._Cublas(1000.0))
    for i, spec in enumerate(specs):
        conn.send(tune._Started(i))
        name = spec.name_expression
        if name.endswith("<64, 64, 8, 8, 8>"):
            time.sleep(60)
        if name.endswith("<64, 128, 8, 8, 8>"):
            os._exit(3)
        if name.endswith("<128, 64, 8, 8, 8>"):
            conn.send(tune._Settled(i, "crashed", "crashed with cudaErrorIllegalAddress"))
            return
        if name.endswith("<128, 128, 8, 8, 8>"):
            conn.send(tune._Settled(i, "wrong", "17x19x3, beta=0: 3 elements are wrong"))
            continue
        conn.send(tune._Settled(i, "timed", "", 500.0))
    conn.send(None)


def test_a_configuration_that_hangs_or_crashes_costs_only_itself(monkeypatch):
    fork = multiprocessing.get_context("fork")  # so that the child runs the fake
    monkeypatch.setattr(child, "_context", lambda: fork)
    monkeypatch.setattr(tune, "_time_child", fake_child)
    monkeypatch.setattr(tune, "CONFIG_TIMEOUT_S", 2.0)
    step = registry.step("05")
    search = tune.Search(step, tune.candidates(step), (64, 64, 64), "GPU", "sm_90")
    tune.time_stage(search, budget_s=60, progress=False)
    verdicts = {
        "<" + tune.spec_for(step, t.params).name_expression.split("<")[1]: t for t in search.trials
    }
    assert verdicts["<64, 64, 8, 8, 8>"].verdict == "hung"
    assert "exit code 3" in verdicts["<64, 128, 8, 8, 8>"].reason
    assert "cudaErrorIllegalAddress" in verdicts["<128, 64, 8, 8, 8>"].reason
    assert verdicts["<128, 128, 8, 8, 8>"].verdict == "wrong"
    others = [t for t in search.trials if t.verdict not in ("hung", "crashed", "wrong")]
    assert {t.verdict for t in others} == {"timed", "rejected"}
    assert all(t.pct_cublas == 50.0 for t in others if t.verdict == "timed")


def hot_child(conn, specs, size, seed):
    """Stands in for tune._time_child on a GPU that throttles after the first timing."""
    conn.send(tune._Cublas(1000.0))
    conn.send(tune._Started(0))
    conn.send(tune._Settled(0, "timed", "", 500.0))
    conn.send(tune._Started(1))
    conn.send(tune._Throttled(f"{specs[1].name_expression}, the GPU's SMs ran at 700 MHz"))


def test_a_gpu_that_throttles_stops_the_search_instead_of_ranking_its_timings(monkeypatch):
    fork = multiprocessing.get_context("fork")  # so that the child runs the stand-in
    monkeypatch.setattr(child, "_context", lambda: fork)
    monkeypatch.setattr(tune, "_time_child", hot_child)
    step = registry.step("05")
    search = tune.Search(step, tune.candidates(step), (64, 64, 64), "GPU", "sm_90")
    hot = r"tune at 64x64x64: sgemm_\w+<[\d, ]+>, the GPU's SMs ran at 700"
    with pytest.raises(Throttled, match=hot):
        tune.time_stage(search, budget_s=60, progress=False)


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "autograder", "tune", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_tune_has_help():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "--dry-run" in result.stdout and "--budget" in result.stdout


def test_dry_run_lists_the_space_with_verdicts_and_needs_no_gpu():
    result = run_cli("08", "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("08_pipelining: 216 configurations,")
    assert len(lines) == 217
    assert any("rejected" in line and "48 KB" in line for line in lines)


def test_tuning_a_step_without_parameters_is_a_usage_error():
    result = run_cli("02", "--dry-run")
    assert result.returncode == 2
    assert "no tile parameters to tune" in result.stderr


@pytest.mark.skipif(gpu.unavailable_reason() is None, reason="this machine has a GPU")
def test_without_a_gpu_tune_says_so_in_one_line_and_exits_2():
    result = run_cli("08")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "tune needs an NVIDIA GPU" in lines[0]


@pytest.mark.gpu
def test_a_tiny_search_runs_end_to_end(tmp_path):
    step = registry.step("06")
    tiny = dataclasses.replace(
        step.tuning, space={"BM": (64, 128), "BN": (128,), "BK": (8,), "TM": (8,), "TN": (8,)}
    )
    search = tune.run(dataclasses.replace(step, tuning=tiny), size=(512, 512, 512), budget_s=120)
    assert len(search.trials) == 2
    assert all(t.verdict == "timed" and t.gflops > 0 for t in search.trials), search.trials
    assert search.cublas_gflops > 0 and search.best.pct_cublas > 0
    csv_path = tune.write_csv(search, tmp_path / "tune.csv")
    assert len(csv_path.read_text().splitlines()) == 3
    assert json.loads(tune.write_json(search, tmp_path / "tune.json").read_text())["gflops"] > 0
