"""The Slurm scripts (autograder/grade/slurm/) under a real Slurm: a one-node cluster
started here (munged, slurmctld and slurmd from Debian's slurm-wlm and munge, with a
configuration written by the fixture) grades a class on the CPU backend through
submit.sh. The node says it has 8 CPUs and two GPUs (empty files as their devices),
so that the array's own #SBATCH lines (--gres=gpu:1, --cpus-per-task=4) are what
runs. CI installs Slurm and sets SGEMM_REQUIRE_SLURM=1, so that there the test fails
instead of skipping."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from planted_class import write_large_class
from services import free_port, unless_possible, wait_for

from autograder.grade.gradebook import read_csv
from autograder.ladder import registry

ROOT = Path(__file__).resolve().parent.parent
SUBMIT = ROOT / "autograder" / "grade" / "slurm" / "submit.sh"
STEP = registry.step("05")
DAEMONS = ("munged", "slurmctld", "slurmd")
MISSING = [c for c in (*DAEMONS, "sbatch", "squeue", "scancel", "sinfo") if not shutil.which(c)]
WHY = (
    f"needs Slurm and munge (apt install slurm-wlm munge; missing: {', '.join(MISSING)})"
    if MISSING
    else "needs root, to start slurmd as the cluster's Slurm user"
    if os.geteuid() != 0
    else ""
)
pytestmark = unless_possible(WHY, "SGEMM_REQUIRE_SLURM")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The environment that talks to a running one-node cluster (SLURM_CONF)."""
    d = tmp_path_factory.mktemp("slurm")
    host = subprocess.check_output(["hostname", "-s"], text=True).strip()
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    for gpu in ("gpu0", "gpu1"):
        (d / gpu).touch()
    (d / "state").mkdir()
    (d / "spool").mkdir()
    (d / "gres.conf").write_text(f"NodeName={host} Name=gpu File={d}/gpu[0-1]\n")
    (d / "slurm.conf").write_text(
        f"""\
ClusterName=sgemmtest
SlurmctldHost={host}
SlurmUser=root
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
CryptoType=crypto/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={host} CPUs=8 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
    )
    env = dict(
        os.environ,
        SLURM_CONF=str(d / "slurm.conf"),
        PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    munged = [
        "munged", "--force", f"--key-file={key}", f"--socket={d}/munge.sock",
        f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed",
    ]  # fmt: skip
    try:
        subprocess.run(munged, check=True, env=env)
        subprocess.run(["slurmctld", "-f", env["SLURM_CONF"]], check=True, env=env)
        subprocess.run(["slurmd", "-f", env["SLURM_CONF"]], check=True, env=env)

        def idle():
            nodes = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True)
            return nodes.stdout.strip() == b"idle"

        wait_for(idle, f"the node to be idle (logs in {d})", 60)
        yield env
    finally:
        for daemon in reversed(DAEMONS):
            pid = d / f"{daemon}.pid"
            if pid.exists():
                subprocess.run(["kill", pid.read_text().strip()], check=False)


def submit(env, cwd: Path, tasks: int, folder: str) -> tuple[str, str]:
    """(array job, merge job) of submit.sh."""
    result = subprocess.run(
        ["bash", str(SUBMIT), str(tasks), folder, "05", "--backend", "cpu"],
        cwd=cwd, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    words = result.stdout.split()  # "job array A grades ... in N tasks; job M then writes the CSV"
    return words[2], words[words.index("job", 3) + 1]


def queued(env, job: str = "") -> list[str]:
    """The states of the jobs still in the queue (of `job`'s, if given)."""
    which = ["-j", job] if job else []
    out = subprocess.run(["squeue", "-h", "-o", "%T", *which], env=env, capture_output=True)
    return out.stdout.decode().split()


def test_a_class_graded_on_slurm_lands_in_one_csv(cluster, tmp_path):
    write_large_class(tmp_path / "class", 4)
    array, merge = submit(cluster, tmp_path, 2, "class")
    wait_for(lambda: not queued(cluster), "the array and the merge to end", 300)
    said = (tmp_path / f"slurm-{merge}-merge.out").read_text()
    assert "4 students written to" in said and "not graded yet" not in said, said
    csv = tmp_path / "class.grades" / STEP.name / "grades.csv"
    assert sorted(r["student"] for r in read_csv(csv)) == [f"s{i:03d}_correct" for i in range(4)]
    assert all((tmp_path / f"slurm-{array}_{task}.out").exists() for task in (1, 2))


def test_a_task_cancelled_midway_leaves_its_students_named_and_a_second_submit_finishes(
    cluster, tmp_path
):
    write_large_class(tmp_path / "class", 6)
    array, merge = submit(cluster, tmp_path, 2, "class")
    wait_for(lambda: queued(cluster, f"{array}_2") == ["RUNNING"], "task 2 to start")
    subprocess.run(["scancel", f"{array}_2"], env=cluster, check=True)
    wait_for(lambda: not queued(cluster), "the array and the merge to end", 300)
    said = (tmp_path / f"slurm-{merge}-merge.out").read_text()
    assert "not graded yet: " in said and "(run grade again to finish)" in said, said
    missing = said.split("not graded yet: ")[1].split(" (")[0].split(", ")
    csv = tmp_path / "class.grades" / STEP.name / "grades.csv"
    graded = {r["student"] for r in read_csv(csv)}
    assert graded and missing and graded.isdisjoint(missing)
    assert graded | set(missing) == {p.stem for p in (tmp_path / "class").iterdir()}

    feedback = tmp_path / "class.grades" / STEP.name / "feedback"
    first = {f: f.stat().st_mtime_ns for f in feedback.iterdir()}
    _, merge = submit(cluster, tmp_path, 2, "class")
    wait_for(lambda: not queued(cluster), "the second array and merge to end", 300)
    said = (tmp_path / f"slurm-{merge}-merge.out").read_text()
    assert "6 students written to" in said and "not graded yet" not in said, said
    assert {r["student"] for r in read_csv(csv)} == graded | set(missing)
    assert {f: f.stat().st_mtime_ns for f in first} == first  # the graded were not graded again
