"""What the hardware did while a step's kernel ran, from Nsight Compute (ncu).

`python -m autograder profile STEP|FILE` launches the kernel at one size in a
separate process started under `ncu`, skipping a warm-up launch, and reads
back the counters each chapter reasons from: DRAM bytes, L1 and L2 hit rates,
shared-memory wavefronts and bank conflicts, achieved occupancy and the top
reasons warps stalled. ncu is given `--clock-control none`: the GPU's clocks are
left as they are, as for every timing in the course. Rows merge into
book/data/profile_<gpu>.csv, with the GPU, date and versions, beside bench's, and the
kernel's fingerprint (bench.spec_fingerprint): the book says so where it shows a profile of
an earlier version of a kernel.

Where ncu is missing, or cannot read the counters (some virtual machines), the
command says so and writes nothing.
"""

from __future__ import annotations

import csv
import datetime
import io
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..judge.checker import ALPHA
from ..run import cuda_tools
from ..run.kernel import KernelSpec
from .bench import DATA_DIR, parse_size, spec_fingerprint

TIMEOUT_S = 600.0
SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis_Tables", "Occupancy", "WarpStateStats")
# Beside the sections' own metrics: the bytes DRAM moved, and the FFMAs executed.
METRICS = (
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
)
# What each column of the data is, from ncu's raw metric names.
COLUMNS = {
    "duration_us": "gpu__time_duration.sum",
    "dram_read_mb": "dram__bytes_read.sum",
    "dram_write_mb": "dram__bytes_write.sum",
    "l1_hit_pct": "l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct",  # global loads
    "l2_hit_pct": "lts__t_sector_op_read_hit_rate.pct",
    "shared_load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_load_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_store_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "occupancy_achieved_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "occupancy_theoretical_pct": "sm__maximum_warps_per_active_cycle_pct",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
}
_STALL = "smsp__average_warps_issue_stalled_"
_STALL_END = "_per_issue_active.ratio"
TOP_STALLS = 3
# Reasons in WarpStateStats that are not waiting: issuing, or ready but not picked.
_NOT_STALLS = ("_selected_", "not_issued")


class ProfilerUnavailable(RuntimeError):
    """ncu is not installed here, or cannot read this GPU's counters; str() says which."""


def find() -> str | None:
    """The ncu executable: on PATH, or in the CUDA toolkit."""
    return cuda_tools.find("ncu")


def ncu_version() -> str:
    """'ncu 2025.3.1' (the first line of `ncu --version` that names a version)."""
    said = subprocess.run([find() or "ncu", "--version"], capture_output=True, text=True)
    version = [line for line in said.stdout.splitlines() if "Version" in line]
    return "ncu " + (version[0].split("Version")[-1].split()[0] if version else "?")


@dataclass(frozen=True)
class Profile:
    kernel: str
    size: str
    values: dict[str, float]  # by COLUMNS' names; a metric ncu did not give is absent
    stalls: list[tuple[str, float]]  # the top reasons, cycles stalled per issued instruction
    source: str  # the kernel's fingerprint (bench.spec_fingerprint)


def profile(name: str, spec: KernelSpec, size: str, scratch: Path) -> Profile:
    """Profile spec at `size` under ncu. Raises ProfilerUnavailable."""
    executable = find()
    if executable is None:
        raise ProfilerUnavailable(
            "Nsight Compute (ncu) was not found: it comes with the CUDA toolkit; on a machine "
            "without it, the book's committed profile data stands in"
        )
    M, N, K = parse_size(size)
    work = Path(scratch)
    (work / "job.pickle").write_bytes(pickle.dumps((spec, (M, N, K))))
    command = ncu_command(executable, spec, work)
    try:
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            env=cuda_tools.environment(),
        )
    except subprocess.TimeoutExpired:
        raise ProfilerUnavailable(f"ncu did not finish within {TIMEOUT_S:.0f} s") from None
    row = _row(result.stdout)
    if row is None:
        said = (result.stdout + result.stderr).strip().splitlines()
        raise ProfilerUnavailable("ncu gave no counters: " + " / ".join(said[-4:]))
    return Profile(name, f"{M}x{N}x{K}", _values(row), _stalls(row), spec_fingerprint(spec))


def ncu_command(executable: str, spec: KernelSpec, work: Path) -> list[str]:
    """The command that profiles the second launch of spec's kernel in `work`'s job."""
    kernel = spec.name_expression.split("<")[0]
    return [
        executable,
        "--clock-control",
        "none",  # never change the GPU's clocks
        "--launch-skip",
        "1",  # the warm-up launch
        "--launch-count",
        "1",
        "--kernel-name",
        f"regex:{kernel}",
        *[arg for section in SECTIONS for arg in ("--section", section)],
        "--metrics",
        ",".join(METRICS),
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        sys.executable,
        "-m",
        "autograder.measure.profile",
        str(work),
    ]


def _row(text: str) -> dict[str, str] | None:
    """The kernel's row of ncu's raw CSV (a header row, a units row, then one row
    per profiled launch), as {metric: value}; None when there is none."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 3:
        return None
    header, units, data = rows[0], rows[1], rows[2]
    scaled = {}
    for metric, unit, value in zip(header, units, data):
        scaled[metric] = _in_base_units(value, unit)
    return scaled


_SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-3, "nsecond": 1e-3,
          "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}  # fmt: skip


def _in_base_units(value: str, unit: str):
    """Bytes in bytes and durations in microseconds, whatever unit ncu chose."""
    try:
        number = float(value.replace(",", ""))
    except ValueError:
        return value
    return number * _SCALE.get(unit, 1)


def _values(row: dict) -> dict[str, float]:
    values = {}
    for column, metric in COLUMNS.items():
        value = row.get(metric)
        if isinstance(value, float):
            values[column] = round(value / 1e6, 2) if column.endswith("_mb") else round(value, 2)
    return values


def _stalls(row: dict) -> list[tuple[str, float]]:
    reasons = [
        (metric[len(_STALL) : -len(_STALL_END)], value)
        for metric, value in row.items()
        if metric.startswith(_STALL)
        and metric.endswith(_STALL_END)
        and isinstance(value, float)
        and not any(word in metric for word in _NOT_STALLS)
    ]
    return sorted(reasons, key=lambda r: -r[1])[:TOP_STALLS]


# ---- the data the book reads ------------------------------------------------------------------


def write_csv(profiles: list[Profile], gpu_name: str, versions: str) -> Path:
    """Merge profiles into book/data/profile_<gpu>.csv (a row per kernel and size)."""
    from ..run.gpu import slug

    path = DATA_DIR / f"profile_{slug(gpu_name)}.csv"
    fields = ["kernel", "size", *COLUMNS, "top_stalls", "gpu", "date", "versions", "source"]
    rows = {}
    if path.exists():
        with path.open() as f:
            rows = {(r["kernel"], r["size"]): r for r in csv.DictReader(f)}
    today = datetime.date.today().isoformat()
    for p in profiles:
        stalls = "; ".join(f"{reason} {value:.1f}" for reason, value in p.stalls)
        rows[(p.kernel, p.size)] = {
            "kernel": p.kernel, "size": p.size, **{c: p.values.get(c, "") for c in COLUMNS},
            "top_stalls": stalls, "gpu": gpu_name, "date": today, "versions": versions,
            "source": p.source,
        }  # fmt: skip
    partial = path.with_suffix(".csv.tmp")
    with partial.open("w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(sorted(rows.values(), key=lambda r: (r["kernel"], r["size"])))
    partial.replace(path)
    return path


def read_csv(gpu_name: str) -> list[dict]:
    from ..run.gpu import slug

    path = DATA_DIR / f"profile_{slug(gpu_name)}.csv"
    with path.open() as f:
        return list(csv.DictReader(f))


def table(profiles: list[Profile]) -> str:
    """One line per kernel: what each chapter's evidence table shows."""
    head = (
        f"{'kernel':<22}{'DRAM MB':>9}{'L1 hit%':>9}{'L2 hit%':>9}{'conflicts':>11}{'occup.%':>9}"
    )
    lines = [head + "  top stalls (cycles per issued instruction)"]
    for p in profiles:
        v = p.values
        dram = v.get("dram_read_mb", 0) + v.get("dram_write_mb", 0)
        conflicts = v.get("shared_load_conflicts", 0) + v.get("shared_store_conflicts", 0)
        stalls = ", ".join(f"{r} {x:.1f}" for r, x in p.stalls)
        l1, l2 = v.get("l1_hit_pct", 0), v.get("l2_hit_pct", 0)
        occupancy = v.get("occupancy_achieved_pct", 0)
        lines.append(
            f"{p.kernel:<22}{dram:>9.0f}{l1:>9.0f}{l2:>9.0f}{conflicts:>11.0f}{occupancy:>9.0f}"
            f"  {stalls}"
        )
    return "\n".join(lines)


# ---- the process ncu starts -------------------------------------------------------------------


def _target(work: Path) -> None:
    """Launch the kernel twice (a warm-up, then the profiled launch) at the size given."""
    import cupy

    from ..run.backends import gpu_launcher

    spec, (M, N, K) = pickle.loads((work / "job.pickle").read_bytes())
    launch = gpu_launcher(spec, tune=False)  # no first-use tuning under the profiler
    rng = cupy.random.default_rng(0)
    A = rng.standard_normal((M, K), dtype=cupy.float32)
    B = rng.standard_normal((K, N), dtype=cupy.float32)
    C = cupy.zeros((M, N), dtype=cupy.float32)
    for _ in range(2):
        launch(M, N, K, ALPHA, A, B, 0.0, C)
    cupy.cuda.Device().synchronize()


if __name__ == "__main__":
    _target(Path(sys.argv[1]))
