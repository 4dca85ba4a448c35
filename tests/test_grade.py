"""Batch grading (python -m autograder grade) and the pytest autograder, on the CPU
backend: a planted class grades to the points it must score, nothing is lost or
graded twice across reruns and interruptions, and the Slurm scripts work."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import the_machine
from planted_class import K_LOOP, KINDS, STEP, kernel_source, write_class, write_large_class

from autograder.grade import grading, rubric
from autograder.grade.gradebook import Gradebook, read_csv
from autograder.grade.grading import Grade, Score
from autograder.grade.submissions import Submission, Unreadable, at, find, notebook_kernel
from autograder.ladder import registry
from autograder.run import gpu

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"
TIMEOUT = "5"  # seconds per case: a hang costs this, a correct case takes well under 1 s
# erin's kernel lost the ';' after `float regN[TN]`: the compiler stops at the next
# statement, the K loop, and must name that line of her file, and the line before it.
ERROR_LINE = kernel_source("compile_error").splitlines().index("  " + K_LOOP) + 1
MISSING_LINE = kernel_source("compile_error").splitlines().index("  float regN[TN]") + 1


def grade(*args, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "autograder", "grade", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        **kwargs,
    )


def on_cpu(root, out, *more):
    return grade(
        root, "--assignment", "05", "--backend", "cpu", "--timeout", TIMEOUT, "--out", out,
        "--quiet", *more,
    )  # fmt: skip


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The planted class, graded once on the CPU."""
    root = tmp_path_factory.mktemp("class")
    expected = write_class(root)
    out = root / "grades.csv"
    with the_machine(tmp_path_factory, alone=True):  # it grades on the CPU (conftest.py)
        result = on_cpu(root, out)
    return root, out, expected, result


def feedback(root: Path, student: str) -> dict:
    """The student's feedback file, where grade keeps it by default."""
    return json.loads((Gradebook.of(root, STEP).feedback_dir / f"{student}.json").read_text())


def test_the_planted_class_grades_to_the_points_it_must_score(planted):
    _, out, expected, result = planted
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {r["student"]: r for r in read_csv(out)}
    assert set(rows) == set(expected)
    for student, (whole, odd, _fast) in expected.items():
        row = rows[student]
        # On the CPU the speed test scores zero for everyone.
        got = (
            int(row["test_whole_tiles"]),
            int(row["test_odd_shapes"]),
            int(row["test_fast_enough"]),
        )
        assert got == (whole, odd, 0), student
        assert int(row["total"]) == whole + odd and row["max_points"] == str(rubric.MAX_POINTS)
        assert row["backend"] == "cpu" and row["possible"] == str(rubric.possible("cpu"))
    assert "graded 10 in" in result.stdout
    # Full marks on the CPU are the 7 points possible there: the correct and the slow.
    assert "4 with full marks (7 of 10 possible on the CPU: speed needs a GPU)" in result.stdout


@pytest.mark.parametrize(
    "student, status, test, phrase",
    [
        ("bob", "graded", "test_odd_shapes", "outside A"),
        ("bob", "graded", "test_odd_shapes", "(cell line "),  # his notebook's kernel cell
        ("carol", "graded", "test_odd_shapes", "past the end of C"),
        ("dave", "graded", "test_whole_tiles", f"did not finish within {TIMEOUT} s"),
        ("erin", "compile error", "test_whole_tiles", f"erin.cu({ERROR_LINE}): error"),
        ("erin", "compile error", "test_whole_tiles", f"line before, erin.cu({MISSING_LINE}): a"),
        ("erin", "compile error", "test_odd_shapes", "see test_whole_tiles"),
        ("frank", "not implemented", "test_whole_tiles", "replace the #error line"),
        ("heidi", "no submission", "test_whole_tiles", "no submission"),
        ("alice", "graded", "test_fast_enough", "needs a GPU"),
    ],
)
def test_each_student_is_told_what_the_notebook_would_tell_them(
    planted, student, status, test, phrase
):
    root, _, _, _ = planted
    record = feedback(root, student)
    assert record["status"] == status
    message = next(t["message"] for t in record["tests"] if t["id"] == test)
    assert phrase in message


def test_a_rerun_grades_nobody_again_and_a_changed_kernel_is_regraded(planted, tmp_path):
    root, out, _, _ = planted
    folder = Gradebook.of(root, STEP).feedback_dir
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    csv_before = out.read_text()
    again = on_cpu(root, out)
    assert again.returncode == 0
    assert "graded 0 in" in again.stdout and "skipped 10" in again.stdout
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before
    assert out.read_text() == csv_before

    ivan = root / "submitted" / "ivan.cu"
    ivan.write_text(ivan.read_text() + "\n// a last edit\n")
    changed = on_cpu(root, out)
    assert "graded 1 in" in changed.stdout and "skipped 9" in changed.stdout
    assert (
        feedback(root, "ivan")["fingerprint"]
        != json.loads((folder / "alice.json").read_text())["fingerprint"]
    )


def test_an_interrupted_run_keeps_a_consistent_csv_and_resumes(tmp_path):
    # The first student is right; the two after them hang, so that Ctrl-C lands while
    # they are graded however late this test sees the first grade. Before the run
    # resumes, those it did not grade are made right: a hang's grade on a loaded
    # machine may be a grader-side failure (starved), which is not kept.
    root = tmp_path / "class"
    root.mkdir()
    for name, kind in (("s000", "correct"), ("s001", "hangs"), ("s002", "hangs")):
        (root / f"{name}_{kind}.cu").write_text(kernel_source(kind))
    out = tmp_path / "grades.csv"
    folder = tmp_path / "class.grades" / STEP.name / "feedback"
    args = [sys.executable, "-m", "autograder", "grade", root, "--assignment", "05"]
    args += ["--backend", "cpu", "--out", out, "--quiet", "--timeout", TIMEOUT]
    # Ctrl-C as a terminal delivers it: a child inherits an ignored SIGINT, and Python
    # then never raises KeyboardInterrupt; in the whole suite the grader once graded all
    # three students (35 s, hangs included) through the Ctrl-C this test sent.
    run = subprocess.Popen(
        list(map(str, args)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 300
    while not list(folder.glob("*.json")) and time.time() < deadline:
        time.sleep(0.2)
    run.send_signal(signal.SIGINT)  # what Ctrl-C sends
    stdout, _ = run.communicate(timeout=60)
    assert run.returncode == 1, stdout
    assert "run the same command again" in stdout
    first = {p.name: p.read_text() for p in folder.glob("*.json")}
    assert 1 <= len(first) < 3
    rows = read_csv(out)
    assert sorted(r["student"] for r in rows) == sorted(Path(n).stem for n in first)
    assert {r["student"]: r["total"] for r in rows}["s000_correct"] == "7"  # a whole row
    assert not list(tmp_path.rglob("*.tmp"))

    for kernel in root.glob("*.cu"):
        if f"{kernel.stem}.json" not in first:
            kernel.write_text(kernel_source("correct"))
    resumed = on_cpu(root, out)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"graded {3 - len(first)} in" in resumed.stdout
    assert f"skipped {len(first)}" in resumed.stdout
    assert {n: (folder / n).read_text() for n in first} == first  # not graded twice
    assert len(read_csv(out)) == 3


def test_the_slurm_scripts_grade_in_shards_then_merge(tmp_path):
    """submit.sh under a stand-in sbatch that runs each array task and the merge
    job in turn, with the variables Slurm sets."""
    root = tmp_path / "class"
    write_large_class(root, 3)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sbatch"
    fake.write_text(
        textwrap.dedent(f"""\
        #!{sys.executable}
        import os, subprocess, sys
        args, options = sys.argv[1:], dict()
        while args and args[0].startswith("--"):  # sbatch's own options come first
            name, _, value = args.pop(0).partition("=")
            options[name] = value or (args.pop(0) if name == "--wrap" else "")
        if "--wrap" in options:
            subprocess.run(["bash", "-c", options["--wrap"]], check=True)
        else:
            array = [options["--array"]]
            rest = args
            first, last = map(int, array[0].split("-"))
            for task in range(first, last + 1):
                env = dict(os.environ, SLURM_ARRAY_TASK_ID=str(task),
                           SLURM_ARRAY_TASK_MIN=str(first),
                           SLURM_ARRAY_TASK_COUNT=str(last - first + 1))
                subprocess.run(["bash", *rest], check=True, env=env)
        print("1234")
        """)
    )
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHON=sys.executable)

    def submit(*args):
        return subprocess.run(
            ["bash", "autograder/grade/slurm/submit.sh", "2", str(root), "05", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    result = submit("--backend", "cpu", "--timeout", TIMEOUT)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "class.grades" / STEP.name / "grades.csv"  # the tasks and the merge agree
    assert sorted(r["student"] for r in read_csv(out)) == [f"s{i:03d}_correct" for i in range(3)]
    assert "not graded yet" not in result.stdout
    # The CSV was a fourth argument before it had a default; now it is --out.
    old_style = submit(str(tmp_path / "grades.csv"), "--backend", "cpu")
    assert old_style.returncode == 2 and "--out" in old_style.stderr


# -- the pieces, without running kernels ------------------------------------------------


def test_find_reads_every_layout(tmp_path):
    write_class(tmp_path)
    found = {s.student: s for s in find(tmp_path, STEP)}
    assert found["alice"].path.parts[-3:] == ("alice", STEP.name, f"{STEP.name}.ipynb")
    assert found["carol"].path.name == "carol.cu"
    assert found["grace"].path.name == "my_work.ipynb"
    assert found["heidi"].path is None
    with pytest.raises(Unreadable, match="no submission"):
        found["heidi"].source(STEP)


def test_a_folder_with_several_candidates_is_a_clear_problem(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.cu").write_text("")
    (tmp_path / "x" / "b.cu").write_text("")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "notes.cu").write_text("")
    (tmp_path / "y" / f"{STEP.name}.cu").write_text("the one")
    x, y = find(tmp_path, STEP)
    with pytest.raises(Unreadable, match=r"2 candidate files \(a.cu, b.cu\)"):
        x.source(STEP)
    assert y.source(STEP) == "the one"


def test_a_notebook_kernel_keeps_the_learners_line_numbers(tmp_path):
    nb = tmp_path / "n.ipynb"
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import os"),
        nbformat.v4.new_code_cell(f"%%writefile {STEP.path.name}\nold"),
        nbformat.v4.new_code_cell(f"%%writefile {STEP.path.name}\nline 1\nline 2"),
    ]
    nbformat.write(notebook, nb)
    assert notebook_kernel(nb, STEP.path.name) == "line 1\nline 2"  # the last one wins
    with pytest.raises(Unreadable, match="no cell that starts with `%%writefile other.cu`"):
        notebook_kernel(nb, "other.cu")
    (tmp_path / "bad.ipynb").write_text("{ not json")
    with pytest.raises(Unreadable, match="not a readable notebook"):
        at(tmp_path / "bad.ipynb", STEP).source(STEP)


def _grade(student, total_points, status="graded", submission: Submission | None = None):
    tests = [Score(t.id, t.points, t.points if total_points else 0) for t in rubric.CUDA_TESTS]
    fingerprint = submission.fingerprint(STEP) if submission else "f" * 16
    return Grade(student, STEP.name, f"{student}.cu", fingerprint, "cpu", status, tests)


def test_the_csv_is_rebuilt_from_the_feedback_files_without_temporary_files(tmp_path):
    book = Gradebook(tmp_path / "g.csv", tmp_path / "feedback", STEP)
    book.put(_grade("b", 10))
    book.put(_grade("a", 0))
    book.put(_grade("left_the_class", 0))
    assert book.write_csv(["a", "b", "c"]) == 3  # c not graded yet; left_the_class keeps a row
    rows = read_csv(tmp_path / "g.csv")
    assert [(r["student"], r["total"]) for r in rows] == [
        ("a", "0"),
        ("b", "10"),
        ("left_the_class", "0"),
    ]
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_grade_is_current_for_the_same_kernel_on_the_same_backend(tmp_path):
    kernel = tmp_path / "a.cu"
    kernel.write_text("// a's kernel")
    a = Submission("a", kernel)
    book = Gradebook(tmp_path / "g.csv", tmp_path / "feedback", STEP)
    book.put(_grade("a", 0, submission=a))
    assert book.is_current(a, "cpu")
    assert not book.is_current(a, "gpu")  # the GPU also grades speed
    kernel.write_text("// a's kernel, edited")
    assert not book.is_current(a, "cpu")
    book.put(_grade("a", 0, status="grader error", submission=a))
    assert not book.is_current(a, "cpu")  # our fault: grade again


def test_merge_names_the_students_not_graded_yet(tmp_path):
    write_large_class(tmp_path / "class", 2)
    out = tmp_path / "g.csv"
    Gradebook.of(tmp_path / "class", STEP).put(_grade("s000_correct", 10))
    result = grade(tmp_path / "class", "--assignment", "05", "--out", out, "--merge")
    assert result.returncode == 1
    assert "not graded yet: s001_correct" in result.stdout
    assert [r["student"] for r in read_csv(out)] == ["s000_correct"]
    # The class's report is written with the merged grades, and names who is missing.
    report = Gradebook.of(tmp_path / "class", STEP).feedback_dir.parent / "report.html"
    assert f"the class's report: {report}" in result.stdout
    assert "s001_correct</td><td data-label=\"why\">not graded yet" in report.read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--assignment", "99"], "no step '99'"),
        (["--assignment", "10"], "a bonus kernel, not a graded exercise"),
        (["--assignment", "00"], "graded in its notebook (nbgrader), not by grade"),
        (["--assignment", "05", "--shard", "3/2"], "expected K/N"),
        (["--assignment", "05", "--backend", "cpu", "--shard", "0/2"], "expected K/N"),
    ],
)
def test_bad_usage_is_refused_with_exit_2(tmp_path, args, message):
    result = grade(tmp_path, *args)
    assert result.returncode == 2
    assert message in result.stderr


def test_a_missing_directory_is_refused_with_exit_2(tmp_path):
    result = grade(tmp_path / "nowhere", "--assignment", "05", "--backend", "cpu")
    assert result.returncode == 2 and "nowhere is not a directory" in result.stderr


def test_grading_on_the_gpu_without_one_says_so(tmp_path):
    if gpu.unavailable_reason() is None:
        pytest.skip("this machine has a GPU")
    result = grade(tmp_path, "--assignment", "05", "--backend", "gpu")
    assert result.returncode == 2 and "needs an NVIDIA GPU" in result.stderr


def test_a_class_of_a_step_for_another_gpu_is_refused_before_any_grade_is_written(tmp_path):
    """Step 12 runs on an sm_90a GPU alone: graded anywhere else, every student would
    score zero. The run refuses, and writes nothing."""
    root = tmp_path / "class"
    root.mkdir()
    (root / "ada.cu").write_text(registry.step("12").source())
    result = grade(root, "--assignment", "12", "--backend", "cpu", "--quiet")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "12_wgmma_tf32 runs on an sm_90a GPU alone" in result.stderr
    assert "grade this class on one" in result.stderr
    assert not (tmp_path / "class.grades").exists()


def test_a_grade_made_where_its_step_cannot_run_has_nothing_possible_and_is_made_again():
    step = registry.step("13")
    submission = Submission("ada", KERNELS / step.path.name)
    made = grading.grade(submission, step, grading.Options("cpu"))
    assert made.status == grading.OUT_OF_REACH and made.total == 0
    record = made.to_json()
    assert record["possible"] == 0 and "runs on an sm_90a GPU alone" in record["possible_why"]
    assert all(t.earned == 0 for t in made.tests)


# -- the pytest autograder ---------------------------------------------------------------


def run_pytest_autograder(*args):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "autograder/grade/tests",
            "-p",
            "no:cacheprovider",
            *map(str, args),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_pytest_autograder_reports_points_per_test(tmp_path):
    root = tmp_path / "class"
    write_class(root)
    xml, grade_json = tmp_path / "report.xml", tmp_path / "grade.json"
    result = run_pytest_autograder(
        "--submission", root / "submitted" / "bob", "--assignment", "05", "--backend", "cpu",
        "--case-timeout", TIMEOUT, f"--junitxml={xml}", "--grade-json", grade_json,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert "1 passed" in result.stdout and "2 failed" in result.stdout
    assert "total                3/10" in result.stdout
    report = xml.read_text()
    assert '<property name="test_whole_tiles.earned" value="3" />' in report
    assert '<property name="test_odd_shapes.points" value="4" />' in report
    assert "outside A" in report
    assert json.loads(grade_json.read_text())["total"] == 3


def test_the_pytest_autograder_skips_a_step_for_another_gpu_and_keeps_the_grade_file(tmp_path):
    """Nothing can be earned where step 12 cannot run: every test skips with the reason,
    and a grade written earlier (on an H100) is not replaced by a zero."""
    earlier = tmp_path / "grade.json"
    earlier.write_text('{"total": 10}')
    result = run_pytest_autograder(
        "-rs", "--submission", KERNELS / "12_wgmma_tf32.cu", "--assignment", "12",
        "--backend", "cpu", "--grade-json", earlier,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout
    assert "3 skipped" in result.stdout and "runs on an sm_90a GPU alone" in result.stdout
    assert earlier.read_text() == '{"total": 10}'


def test_the_pytest_autograder_without_a_submission_skips_with_the_reason():
    result = run_pytest_autograder("-rs")
    assert result.returncode == 0
    assert "give --submission PATH --assignment STEP" in result.stdout


# -- on GPUs -----------------------------------------------------------------------------


@pytest.mark.gpu
def test_the_planted_class_grades_to_the_points_it_must_score_on_a_gpu(tmp_path):
    pytest.importorskip("nbformat", reason="nbformat is not installed (the class has notebooks)")
    expected = write_class(tmp_path / "class")
    out = tmp_path / "grades.csv"
    result = grade(tmp_path / "class", "--assignment", "05", "--gpus", "0", "--out", out, "--quiet")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {r["student"]: r for r in read_csv(out)}
    for student, points in expected.items():
        row = rows[student]
        got = tuple(int(row[t.id]) for t in rubric.CUDA_TESTS)
        assert got == points, (student, feedback(tmp_path / "class", student)["tests"])
    assert float(rows["alice"]["gflops"]) >= float(rows["alice"]["minimum_gflops"])
    slow = next(
        t for t in feedback(tmp_path / "class", "judy")["tests"] if t["id"] == "test_fast_enough"
    )
    assert "the minimum is" in slow["message"]


def test_gpus_all_runs_workers_on_every_gpu_each_on_its_own_device(tmp_path, monkeypatch):
    """Two stand-in GPUs, two workers each: workers forked (so that the stand-ins reach
    them) grade on the CPU backend, each with CUDA_VISIBLE_DEVICES naming its device."""
    import multiprocessing

    from autograder.grade import batch, grading

    seen = tmp_path / "seen"
    real = grading.grade

    def noting_where(submission, step, options):
        with open(seen, "a") as f:
            f.write(f"{submission.student} {os.environ['CUDA_VISIBLE_DEVICES']} {os.getpid()}\n")
        time.sleep(0.5)  # long enough that every worker gets a submission
        return real(submission, step, options)

    fork = multiprocessing.get_context("fork")
    monkeypatch.setattr(batch.multiprocessing, "get_context", lambda method: fork)
    monkeypatch.setattr(batch.grading, "grade", noting_where)
    write_large_class(tmp_path / "class", 8)
    book = Gradebook.of(tmp_path / "class", STEP)
    options = grading.Options(backend="cpu", case_timeout_s=float(TIMEOUT))
    summary = batch.run(
        tmp_path / "class", STEP, book, options, gpus=["0", "1"], progress=False, workers=2
    )
    assert summary.workers == 4 and len(summary.graded) == 8 and not summary.not_graded
    assert "with 4 workers on 2 GPUs" in str(summary) and "per GPU" in str(summary)
    rows = [line.split() for line in seen.read_text().splitlines()]
    assert sorted(student for student, _, _ in rows) == sorted(g.student for g in summary.graded)
    devices = {pid: {device for _, device, p in rows if p == pid} for _, _, pid in rows}
    assert all(len(d) == 1 for d in devices.values()), devices  # a worker keeps its GPU
    per_gpu = Counter(d for (d,) in devices.values())
    assert per_gpu == {"0": 2, "1": 2}, devices


def test_a_large_class_for_throughput_runs_has_a_different_source_for_every_student(tmp_path):
    """A source seen before is not compiled again: a class of copies would flatter the
    throughput the README quotes for sources that all differ."""
    write_large_class(tmp_path / "class", 40)
    sources = [p.read_text() for p in sorted((tmp_path / "class").glob("*.cu"))]
    assert len(sources) == 40 and len(set(sources)) == 40


def test_workers_per_gpu_follow_the_cores_this_process_may_use(monkeypatch):
    from autograder.grade import batch

    for cores, gpus, expected in ((2, 1, 1), (8, 1, 4), (16, 1, 8), (64, 1, 8), (16, 2, 4)):
        monkeypatch.setattr(batch.os, "sched_getaffinity", lambda pid, n=cores: set(range(n)))
        assert batch.workers_per_gpu(gpus) == expected, (cores, gpus)


@pytest.mark.gpu
def test_every_gpu_grades_its_share_with_the_same_verdicts(tmp_path):
    from autograder.grade.batch import visible_gpus

    gpus = visible_gpus("all")
    write_large_class(tmp_path / "class", 10)  # every kind, shared among the GPUs
    # The attack on sharing a GPU: an endless loop that keeps the GPU busy for its
    # whole time limit while the honest submissions beside it are checked and timed.
    # Their timings wait for their turn alone, so they keep every point.
    (tmp_path / "class" / "s010_hangs.cu").write_text(kernel_source("hangs"))
    out = tmp_path / "grades.csv"
    # Three workers on each GPU, whatever its cores: checks side by side, timings alone.
    result = grade(
        tmp_path / "class", "--assignment", "05", "--out", out, "--quiet", "--workers", "3"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"with {3 * len(gpus)} workers" in result.stdout
    for row in read_csv(out):
        kind = row["student"].split("_", 1)[1]
        assert tuple(int(row[t.id]) for t in rubric.CUDA_TESTS) == KINDS[kind][1], row
