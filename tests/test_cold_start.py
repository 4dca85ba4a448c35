"""A cold grader costs no student anything: the time limit of a case counts the
kernel's own run, not the grader's start-up (autograder/judge/job.py).

The stand-in for a cold machine is a C++ compiler that takes longer to start
than a whole case may take: the CPU backend builds every kernel before its
first case, as a GPU creates its context and compiles, so a correct kernel
must keep its points and an endless loop must still fail within its limit.
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from planted import PLANTED

from autograder import KernelSpec, judge
from autograder.judge.checker import SMALL
from autograder.ladder import registry

ROOT = Path(__file__).resolve().parent.parent
# A case's limit with room for a loaded machine (CI runs two test workers on two
# cores, and the CPU backend spreads each case over both), and a start-up longer still.
CASE_LIMIT_S, START_DELAY_S = 5, 8


def slow_compiler(tmp_path: Path) -> str:
    """A g++ that waits START_DELAY_S before compiling, longer than a case may take."""
    script = tmp_path / "slow-g++"
    script.write_text(f'#!/bin/sh\nsleep {START_DELAY_S}\nexec g++ "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_slow_start_is_not_counted_against_a_correct_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", slow_compiler(tmp_path))
    spec = KernelSpec.from_step(registry.step("02"))
    report = judge.check(spec, shapes=SMALL[:3], case_timeout_s=CASE_LIMIT_S, backend="cpu")
    assert report.ok, str(report)


def test_an_endless_loop_still_fails_within_its_limit_after_a_slow_start(tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", slow_compiler(tmp_path))
    spec, _ = PLANTED["endless loop"]
    report = judge.check(spec, shapes=SMALL[:3], case_timeout_s=CASE_LIMIT_S, backend="cpu")
    assert not report.ok
    assert f"1x1x1, beta=0: did not finish within {CASE_LIMIT_S} s" in report.error
    assert "an endless loop?" in report.error


def test_grade_on_a_cold_machine_keeps_every_honest_submission_s_points(tmp_path):
    step = registry.step("02")
    spec, _ = PLANTED["endless loop"]
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "first_alphabetically.cu").write_text(step.source())
    (submissions / "loops.cu").write_text(spec.source)
    (submissions / "second.cu").write_text(step.source())
    out = tmp_path / "grades.csv"
    environment = {**os.environ, "CXX": slow_compiler(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(submissions), "--assignment", "02",
         "--backend", "cpu", "--timeout", str(CASE_LIMIT_S), "--out", str(out), "--quiet",
         "--json", str(tmp_path / "feedback")],
        capture_output=True, text=True, cwd=ROOT, env=environment,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    grades = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "feedback").glob("*.json")}
    for honest in ("first_alphabetically", "second"):
        scores = {t["id"]: t["earned"] for t in grades[honest]["tests"]}
        said = {t["id"]: t["message"] for t in grades[honest]["tests"]}
        assert scores["test_whole_tiles"] == 3 and scores["test_odd_shapes"] == 4, (honest, said)
    loops = grades["loops"]
    assert loops["total"] == 0 and "did not finish within" in json.dumps(loops)
