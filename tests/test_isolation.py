"""Native code built from a submission runs in a child that cannot reach past it.

The CPU backend loads a learner's kernel, compiled to a library, into a child
process that confines itself first (autograder.isolate.isolation). Each protection is
shown by a planted attempt that must fail beside an honest one that must
still work, so that no test passes by breaking everything: no files written
outside the scratch directory, no processes, no sockets, no signals to the
parent; threads, NumPy and the pipe to the parent still work.
"""

import errno
import multiprocessing
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from planted import planted

from autograder import KernelSpec, judge
from autograder.course import cli
from autograder.isolate import isolation
from autograder.judge.checker import SMALL
from autograder.ladder import registry

needs_isolation = pytest.mark.skipif(
    isolation.available() is not None, reason=f"no confinement here: {isolation.available()}"
)
needs_landlock = pytest.mark.skipif(
    isolation.available() is not None or not isolation.landlock_abi(),
    reason="needs seccomp and Landlock (Linux 5.13+)",
)


# In a confined child: each attempt returns what it saw, or raises OSError.
def write_outside(scratch: Path, target: str):
    Path(target).write_text("escaped")


def write_inside(scratch: Path, _):
    (scratch / "notes.txt").write_text("mine")
    return (scratch / "notes.txt").read_text()


def read_outside(scratch: Path, target: str):
    return Path(target).read_text()


def import_a_module_not_yet_loaded(scratch: Path, _):
    import colorsys  # Python's own files stay readable

    return colorsys.rgb_to_hsv(1.0, 0.0, 0.0)


def run_a_program(scratch: Path, target: str):
    subprocess.run(["touch", target], check=False)


def fork(scratch: Path, _):
    os.fork()


def open_a_socket(scratch: Path, _):
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)


def signal_the_parent(scratch: Path, _):
    os.kill(os.getppid(), 0)


def change_a_files_mode(scratch: Path, target: str):
    os.chmod(target, 0o777)


def threads_and_numpy(scratch: Path, _):
    results = []

    def work():
        a = np.arange(256 * 256, dtype=np.float64).reshape(256, 256) / 65536
        results.append(float((a @ a).sum()))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(results), len(set(results))


def _confined_child(conn, scratch: str, attempt, argument):
    isolation.confine(Path(scratch))
    try:
        conn.send(("returned", attempt(Path(scratch), argument)))
    except OSError as e:
        conn.send(("failed", errno.errorcode[e.errno]))


def confined(attempt, argument=None):
    """What attempt(scratch, argument) did in a confined child: ("returned",
    value), ("failed", errno name) or ("stopped", signal name)."""
    context = multiprocessing.get_context("spawn")
    with isolation.scratch() as scratch:
        receive, send = context.Pipe(duplex=False)
        child = context.Process(
            target=_confined_child, args=(send, str(scratch), attempt, argument)
        )
        with isolation.child_environment():
            child.start()
        send.close()
        try:
            outcome = receive.recv() if receive.poll(60) else ("hung", None)
        except EOFError:
            child.join(10)
            code = child.exitcode
            outcome = ("stopped", signal.Signals(-code).name) if code < 0 else ("exited", code)
        child.join(10)
    return outcome


@needs_isolation
def test_a_confined_child_writes_no_file_outside_its_scratch_directory(tmp_path):
    target = tmp_path / "planted.txt"
    assert confined(write_outside, str(target)) in (("failed", "EACCES"), ("failed", "EPERM"))
    assert not target.exists()


@needs_landlock
def test_a_confined_child_writes_in_its_scratch_directory():
    assert confined(write_inside) == ("returned", "mine")


@needs_landlock
def test_a_confined_child_reads_no_file_outside_python_and_the_system(tmp_path):
    secret = tmp_path / "answers.txt"
    secret.write_text("the reference solution")
    assert confined(read_outside, str(secret)) == ("failed", "EACCES")
    assert confined(import_a_module_not_yet_loaded) == ("returned", (0.0, 1.0, 1.0))


@needs_isolation
def test_a_confined_child_cannot_change_a_files_mode(tmp_path):
    target = tmp_path / "gradebook.db"
    target.write_text("")
    target.chmod(0o600)
    assert confined(change_a_files_mode, str(target)) == ("failed", "EPERM")
    assert target.stat().st_mode & 0o777 == 0o600


@needs_isolation
@pytest.mark.parametrize("attempt", [run_a_program, fork, open_a_socket, signal_the_parent])
def test_a_confined_child_is_stopped_for_a_process_a_socket_or_a_signal(attempt, tmp_path):
    target = tmp_path / "spawned"
    assert confined(attempt, str(target)) == ("stopped", "SIGSYS")
    assert not target.exists()


@needs_isolation
def test_a_confined_child_still_runs_threads_numpy_and_reports_over_its_pipe():
    assert confined(threads_and_numpy) == ("returned", (8, 1))


# A kernel that NVRTC would refuse (it calls host functions), as it would run
# on a machine without NVRTC: the static check leaves function bodies to
# NVRTC, so only the confinement stands between it and the grader.
ATTACK = """if (row == 0 && col == 0) {{
    FILE* f = fopen("{written}", "w");
    if (f) fputs("escaped", f);
    system("touch {spawned}");
  }}
  if (row < M && col < N) {{"""


@pytest.fixture
def no_nvrtc(tmp_path, monkeypatch):
    """Children that cannot import NVRTC's bindings, as on a machine without them."""
    shadow = tmp_path / "shadow" / "cuda"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no NVRTC here (a test)')\n")
    monkeypatch.syspath_prepend(str(shadow.parent))


@needs_isolation
def test_a_kernel_that_writes_and_spawns_leaves_no_trace_and_is_named(tmp_path, no_nvrtc):
    written, spawned = tmp_path / "written", tmp_path / "spawned"
    attack = ATTACK.format(written=written, spawned=spawned)
    spec = planted("01", "if (row < M && col < N) {", attack)
    report = judge.check(spec, shapes=SMALL[:1], backend="cpu")
    assert not report.ok
    assert "stopped for a system call the sandbox forbids" in report.error, str(report)
    assert not written.exists() and not spawned.exists()


@needs_isolation
def test_an_honest_kernel_passes_confined_and_the_report_says_so():
    report = judge.check(KernelSpec.from_step(registry.step("02")), SMALL[:3], backend="cpu")
    assert report.ok, str(report)
    assert "; confined)" in report.device, report.device  # one word; the rest in --verbose
    assert "confined by seccomp" in report.confinement, report.confinement
    if isolation.landlock_abi():
        assert "writes only in" in report.confinement, report.confinement
    assert report.confinement in report.text(verbose=True)
    assert report.confinement not in str(report)


def test_without_isolation_the_cpu_backend_refuses_unless_the_learner_accepts(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(isolation, "available", lambda: "this is a test")
    monkeypatch.delenv(isolation.UNCONFINED, raising=False)
    with pytest.raises(isolation.IsolationUnavailable, match=r"runs a kernel only confined"):
        isolation.enter(tmp_path)
    monkeypatch.setenv(isolation.UNCONFINED, "1")
    assert isolation.enter(tmp_path) == "NOT confined"
    assert "NOT confined, with all your rights (this is a test" in capsys.readouterr().err
    with pytest.raises(isolation.IsolationUnavailable, match="grading runs a class's kernels"):
        isolation.require("grading")
    assert isolation.UNCONFINED not in os.environ  # no grading child can inherit it


def test_grading_on_the_cpu_refuses_to_start_where_kernels_cannot_be_confined(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(isolation, "available", lambda: "this is a test")
    monkeypatch.setenv(isolation.UNCONFINED, "1")  # a learner's setting does not carry over
    out = tmp_path / "grades.csv"
    argv = ["grade", str(tmp_path), "--assignment", "05", "--backend", "cpu", "--out", str(out)]
    assert cli.main(argv) != 0
    assert "grading on the CPU runs a class's kernels only confined" in capsys.readouterr().err
    assert not out.exists()


def report_connections(conn):
    conn.send(os.environ.get(isolation.CONNECTIONS))


@pytest.mark.parametrize("set_by_caller, expected", [(None, "1"), ("4", "4")])
def test_a_child_opens_one_cuda_work_queue_unless_the_caller_chose(
    monkeypatch, set_by_caller, expected
):
    """A context's work queues are set up under a lock the whole host shares (see
    isolation.CONNECTIONS): a grader's child needs one; an instructor's setting stands."""
    from autograder.isolate.child import Child

    if set_by_caller is None:
        monkeypatch.delenv(isolation.CONNECTIONS, raising=False)
    else:
        monkeypatch.setenv(isolation.CONNECTIONS, set_by_caller)
    with Child(report_connections) as child:
        assert child.receive(60, "reporting its environment") == expected
    assert os.environ.get(isolation.CONNECTIONS) == set_by_caller  # the parent's own is kept
    assert isolation.child_variables()[isolation.CONNECTIONS] == expected  # sanitizer's runs


def listed_threads(monkeypatch, listings, alive: int):
    """/proc/self/task lists `listings` in turn (the last one from then on), while
    Python has `alive` threads."""
    listings, listdir = iter(listings), os.listdir
    last = []

    def listed(path):
        if path != "/proc/self/task":
            return listdir(path)
        last[:] = next(listings, last)
        return list(last)

    monkeypatch.setattr(isolation.os, "listdir", listed)
    monkeypatch.setattr(isolation.threading, "active_count", lambda: alive)


def test_confinement_counts_a_thread_python_joined_only_while_it_has_not_ended(monkeypatch):
    """The CPU backend's builds run in threads joined just before the child confines
    itself; the OS lists one for a moment after (longer on a busy machine), and counted
    it would leave the kernel no directory to write in."""
    listed_threads(monkeypatch, [["1", "2", "3"], ["1", "2"], ["1"]], alive=1)
    assert isolation._threads() == 1


def test_confinement_counts_a_thread_that_does_not_end(monkeypatch):
    monkeypatch.setattr(isolation, "THREADS_END_S", 0.05)
    listed_threads(monkeypatch, [["1", "2"]], alive=1)
    assert isolation._threads() == 2
    listed_threads(monkeypatch, [["1", "2"]], alive=2)  # alive in Python: no wait
    assert isolation._threads() == 2
