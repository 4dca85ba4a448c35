"""Confine a process before it runs native code built from a submission.

The CPU backend (autograder.run.cpu) compiles a learner's kernel into a shared
library and calls it from a child process, which would otherwise do all that
the grader's user may. So the child confines itself, irreversibly, after it
has built the library and before it loads it (a library's constructors run
when it is loaded):

- seccomp, through libseccomp (the pyseccomp package: ctypes over the
  system's libseccomp.so.2, present on Debian, Ubuntu and Colab). Starting a
  process or a program, opening a socket, signalling or tracing another
  process, and the calls that reach around the other rules (namespaces,
  mounts, io_uring, bpf, ...) stop the process with SIGSYS, so that the
  grader can say what the kernel tried (why_died). Changing a file's owner,
  mode, times or attributes fails (EPERM), as do system calls newer than
  this module knows of (ENOSYS).
- Landlock, through the landlock package, where the Linux kernel has it
  (5.13 on): the process may read only Python, the system's libraries and
  its own library, and write only in its scratch directory. Landlock covers
  the thread that applies it and the threads that one starts, not threads
  started before (child_environment keeps a child from starting any), so
  where there are such threads, or no Landlock, seccomp refuses every file
  creation or change instead, and nothing can be written at all.
- resource limits: memory, CPU time and the size of a file it writes; no
  core dumps.

Why these: both come with the Linux kernel, need no privileges, no daemon
and no setuid helper, and bind everything the process does afterwards.
bubblewrap would need user namespaces or a setuid binary, which containers
and Colab often do not allow.

Where they are missing (macOS; Linux without libseccomp), the CPU backend
refuses to run a kernel (IsolationUnavailable), unless the person at the
machine sets SGEMM_COURSE_UNCONFINED=1 to check a kernel they wrote
themselves: it then runs with a warning on stderr and in the report.
Grading (`python -m autograder grade`) calls require(), which refuses to
start without confinement and drops that variable, so that no grading child
ever runs a class's kernels unconfined.

What comes back from a confined child is data: receive() unpickles only the
few types a report is made of, since native code in the child can write to
its end of the pipe.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import pickle
import platform
import resource
import shutil
import signal
import site
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

UNCONFINED = "SGEMM_COURSE_UNCONFINED"
MAX_MESSAGE_BYTES = 1 << 20  # a report's largest message (a compiler's log) is far smaller

# Stop the process: nothing a kernel needs, and what an escape would try.
STOPPED = (
    "fork", "vfork", "execve", "execveat",  # new processes and programs (threads: see clone)
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "ptrace", "process_vm_readv", "process_vm_writev", "tkill", "kcmp",  # other processes
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",  # another view of the files
    "bpf", "userfaultfd", "perf_event_open", "keyctl", "add_key", "request_key",
)  # fmt: skip
# Fail with EPERM: Landlock covers neither a file's owner, mode, times and
# attributes, nor files opened before confinement (the grader's log on
# stdout), which ftruncate and fallocate could cut short.
UNCOVERED = (
    "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat",
    "utime", "utimes", "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr",
    "removexattr", "lremovexattr", "fremovexattr", "ftruncate", "fallocate",
)  # fmt: skip
# Fail with EPERM where Landlock cannot keep writes to the scratch directory.
FILE_CHANGES = (
    "creat", "unlink", "unlinkat", "rename", "renameat", "renameat2",
    "mkdir", "mkdirat", "rmdir", "link", "linkat", "symlink", "symlinkat", "mknod", "mknodat",
)  # fmt: skip
OPEN_FOR_WRITING = (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC, os.O_APPEND)
# The system calls Linux added from 5.1 on have the same numbers on every
# architecture this module accepts, and libseccomp may be older than the
# kernel, so these are judged by number: one named in neither list fails with
# ENOSYS, as on an older kernel (clone3 among them: glibc then uses clone,
# which seccomp can read the flags of), rather than being allowed.
NEWER = range(424, 600)
NEWER_ALLOWED = {
    "close_range": 436, "faccessat2": 439, "epoll_pwait2": 441, "landlock_create_ruleset": 444,
    "landlock_add_rule": 445, "landlock_restrict_self": 446, "memfd_secret": 447,
    "futex_waitv": 449, "set_mempolicy_home_node": 450, "cachestat": 451,
    "map_shadow_stack": 453, "futex_wake": 454, "futex_wait": 455, "futex_requeue": 456,
    "mseal": 462,
}  # fmt: skip
NEWER_STOPPED = {
    "pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426,  # io_uring: file
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429,  # operations seccomp cannot see
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_open": 434,
    "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442, "open_tree_attr": 467,
}  # fmt: skip
CLONE_THREAD = 0x00010000
TIOCSTI, TIOCLINUX = 0x5412, 0x541C  # type into the grader's terminal
F_SETOWN, F_SETSIG, F_SETOWN_EX = 8, 10, 15  # have the kernel signal another process
# Where Python, its packages and the system's libraries live: read-only.
SYSTEM_DIRECTORIES = ("/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache")


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 4 << 30  # address space beyond what is mapped when confining
    cpu_seconds: int = 300  # a whole check takes seconds: this stops a child left running
    file_bytes: int = 64 << 20


class IsolationUnavailable(RuntimeError):
    """This machine cannot confine native code (no Linux, no libseccomp)."""


_confinement: str | None = None  # what this process is confined by, once it is


@functools.cache  # also for a confined process, which cannot read /proc any more
def available() -> str | None:
    """None if this machine can confine a process, else why not."""
    if sys.platform != "linux":
        return f"seccomp and Landlock are Linux's, and this is {platform.system()}"
    try:
        import pyseccomp
    except ImportError:
        return "the pyseccomp package is missing (pip install pyseccomp)"
    except RuntimeError:  # what pyseccomp raises when it finds no libseccomp.so
        return (
            "libseccomp is not installed (Debian, Ubuntu: apt install libseccomp2; "
            "Fedora: dnf install libseccomp)"
        )
    if "Seccomp:" not in Path("/proc/self/status").read_text():
        return "this Linux kernel was built without seccomp"
    arch = pyseccomp.system_arch()
    if arch not in (pyseccomp.Arch.X86_64, pyseccomp.Arch.AARCH64, pyseccomp.Arch.RISCV64):
        return (
            f"the seccomp filter is written for x86-64, arm64 and riscv64, not {platform.machine()}"
        )
    return None


def landlock_abi() -> int:
    """The Landlock ABI this Linux kernel offers; 0 for none."""
    try:
        import landlock

        return landlock.landlock_abi_version()
    except (ImportError, OSError, ValueError):  # the package's diagnosis can fail to parse
        return 0


# How long confine waits for threads that Python has finished with to end.
THREADS_END_S = 2.0


def _threads() -> int:
    """How many threads this process has, once those Python has finished with have
    ended. A thread joined (the CPU backend's builds, run.cpu.launchers, at the end of
    their pool's `with`) is still listed for a moment while the OS ends it, longer on
    a busy machine. Counted, it would have confine refuse every write, the scratch
    directory's too (seccomp_writes), for a thread that was about to be gone."""
    deadline = time.monotonic() + THREADS_END_S
    while True:
        threads = len(os.listdir("/proc/self/task"))
        if threads <= threading.active_count() or time.monotonic() > deadline:
            return threads
        time.sleep(0.001)


def confine(scratch: Path, readable=(), limits: Limits = Limits()) -> str:
    """Confine this process for good; return a line saying how.

    scratch: the one directory it may write in (where Landlock allows);
    readable: files or directories it must still read besides Python and the
    system's libraries (the kernel's library). Raises IsolationUnavailable.
    """
    global _confinement
    if why := available():
        raise IsolationUnavailable(f"cannot confine this process: {why}")
    threads = _threads()
    abi = landlock_abi()
    limited = _limit(limits)
    # Landlock binds this thread and those it starts, not older ones: seccomp
    # then keeps every thread from writing at all.
    seccomp_writes = not abi or threads > 1
    applied = [
        "seccomp (no processes, sockets or signals to others"
        + (", no file changes)" if seccomp_writes else ")")
    ]
    if abi:
        try:
            _landlock(Path(scratch), [Path(p) for p in readable])
        except (OSError, ValueError) as e:
            raise IsolationUnavailable(f"Landlock is there (ABI {abi}) but refused: {e}") from e
        reads = "reads only Python, system libraries and the kernel's library"
        writes = f"writes only in {scratch}" if threads == 1 else f"{threads - 1} older threads not"
        applied.append(f"Landlock ABI {abi} ({reads}; {writes})")
    _seccomp(files_read_only=seccomp_writes, truncate=abi < 3)
    applied.append(limited)
    os.environ["TMPDIR"] = str(scratch)
    _confinement = ", ".join(applied)
    return _confinement


def state() -> str:
    """How this process is confined, in full (a report's --verbose)."""
    return f"confined by {_confinement}" if _confinement else "NOT confined"


def status() -> str:
    """Whether this process is confined, in a word, and why not where it is not."""
    if _confinement:
        return "confined"
    why = available()
    return f"NOT confined ({why})" if why else "NOT confined"


def enter(scratch: Path, readable=()) -> str:
    """Confine this process (see confine), or, where this machine cannot and
    the person at it set SGEMM_COURSE_UNCONFINED=1, say so on stderr and go on
    unconfined. Raises IsolationUnavailable otherwise."""
    why = available()
    if why is None:
        return confine(scratch, readable)
    if os.environ.get(UNCONFINED) == "1":
        print(
            f"warning: the kernel runs NOT confined, with all your rights ({why}; {UNCONFINED}=1)",
            file=sys.stderr,
        )
        return state()
    raise IsolationUnavailable(
        f"the CPU backend runs a kernel only confined, and {why}. Check kernels on a GPU, or "
        f"on Linux with libseccomp (Colab has it); to check a kernel you wrote yourself here "
        f"anyway, set {UNCONFINED}=1"
    )


def require(doing: str) -> None:
    """For grading: raise IsolationUnavailable unless kernels will be confined,
    and drop SGEMM_COURSE_UNCONFINED so that no child of this process sees it."""
    os.environ.pop(UNCONFINED, None)
    if why := available():
        raise IsolationUnavailable(f"{doing} runs a class's kernels only confined, and {why}")


@contextlib.contextmanager
def scratch():
    """A directory for one child to write in, removed with all in it afterwards."""
    path = Path(tempfile.mkdtemp(prefix="sgemm-course-child-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# Libraries that start helper threads when loaded (OpenBLAS, behind NumPy),
# which Landlock would not cover: one thread each in a child is plenty. Left to
# itself, OpenBLAS starts a thread per core, and each spins for a while before it
# sleeps: on a 16-core machine (an H100's host) a fresh `import numpy` took 2.2 s of
# CPU against 0.3 s with one thread, which a grader starting processes by the
# hundred (compute-sanitizer's, autograder.judge.sanitizer) pays in full.
SINGLE_THREADED = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# The work queues a CUDA context opens to its GPU: 8 unless CUDA_DEVICE_MAX_CONNECTIONS
# says otherwise, which the driver sets up when the context starts, one process at a
# time across the whole host. That is the part of a process's start that a grader
# running many side by side waits for in turn, however many GPUs the host has. On an
# H200 host (driver 580.159.04, 16 processes side by side, each starting a context and
# allocating once), contexts started at 4.52 a second with 8 queues and 13.07 with
# one, and processes that also import CuPy and run a kernel at 3.11 and 6.34
# (tests/host_contexts.py, 2026-12-02). One queue costs a child nothing: it launches
# on one stream (the timing's hold and the timed launches too, run.device_clock), and
# only work on different streams would wait for each other. An instructor's own
# setting stands.
CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"


def child_variables() -> dict[str, str]:
    """What a child of the grader's has in its environment besides its parent's."""
    return {**SINGLE_THREADED, CONNECTIONS: os.environ.get(CONNECTIONS, "1")}


@contextlib.contextmanager
def child_environment():
    """Around starting a child process: it inherits an environment in which
    NumPy's BLAS starts no helper threads and CUDA opens one work queue."""
    variables = child_variables()
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def why_died(exitcode: int | None) -> str:
    """What a child's exit code says, in words."""
    if exitcode == -signal.SIGSYS:
        return (
            "it was stopped for a system call the sandbox forbids (starting a program, "
            "opening a network connection, signalling another process): a kernel only computes"
        )
    if exitcode == -signal.SIGXCPU:
        return "it used up its CPU time"
    return f"exit code {exitcode}"


class Forged(Exception):
    """A child sent something that is not one of its messages; str() says what."""


class _MessageUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, classes: frozenset):
        super().__init__(io.BytesIO(data))
        self.classes = classes

    def find_class(self, module, name):
        if (module, name) not in self.classes:
            raise pickle.UnpicklingError(f"{module}.{name} is not one of its messages")
        return super().find_class(module, name)


def receive(connection, classes: frozenset):
    """A child's next message, read as data: only the classes (module, name)
    its messages are made of are let through. Raises EOFError at the end, and
    Forged for anything else."""
    try:
        data = connection.recv_bytes(MAX_MESSAGE_BYTES)
        return _MessageUnpickler(data, classes).load()
    except (OSError, pickle.UnpicklingError, ValueError, TypeError, AttributeError) as e:
        raise Forged(
            f"the process running the kernel sent something other than a report ({e}): "
            "its native code wrote to the grader's pipe"
        ) from None


def _limit(limits: Limits) -> str:
    mapped = os.sysconf("SC_PAGE_SIZE") * int(Path("/proc/self/statm").read_text().split()[0])
    cpu = int(time.process_time()) + limits.cpu_seconds
    for kind, soft, hard in (
        (resource.RLIMIT_AS, mapped + limits.memory_bytes, mapped + limits.memory_bytes),
        (resource.RLIMIT_CPU, cpu, cpu + 5),  # SIGXCPU first, which why_died names
        (resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes),
        (resource.RLIMIT_CORE, 0, 0),
    ):
        _, old_hard = resource.getrlimit(kind)
        if old_hard != resource.RLIM_INFINITY:  # a process may lower its limits, never raise them
            soft, hard = min(soft, old_hard), min(hard, old_hard)
        resource.setrlimit(kind, (soft, hard))
    return (
        f"limits ({limits.memory_bytes / 2**30:g} GiB more memory, {limits.cpu_seconds} s CPU, "
        f"{limits.file_bytes / 2**20:g} MiB per file)"
    )


def _landlock(scratch: Path, readable: list[Path]) -> None:
    from landlock import FSAccess, Ruleset

    ruleset = Ruleset()  # handles every access this kernel knows: all are denied but these
    read_files = FSAccess.READ_FILE
    read_dirs = FSAccess.READ_FILE | FSAccess.READ_DIR
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    python |= {*site.getsitepackages(), site.getusersitepackages(), str(Path(__file__).parents[1])}
    for path in {*map(Path, python), *map(Path, SYSTEM_DIRECTORIES), *readable}:
        if path.exists():
            ruleset.allow(path, rules=read_dirs if path.is_dir() else read_files)
    ruleset.allow(scratch)
    ruleset.apply()


def _seccomp(files_read_only: bool, truncate: bool) -> None:
    import pyseccomp as seccomp

    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    rules.set_attr(seccomp.Attr.CTL_TSYNC, 1)  # every thread, the older ones too
    stop, eperm = seccomp.KILL_PROCESS, seccomp.ERRNO(errno.EPERM)
    for name in STOPPED:
        rules.add_rule(stop, name)
    for number in NEWER:
        if number in NEWER_STOPPED.values():
            rules.add_rule(stop, number)
        elif number not in NEWER_ALLOWED.values():
            rules.add_rule(seccomp.ERRNO(errno.ENOSYS), number)
    # A thread is a clone with CLONE_THREAD; without, it is a new process.
    rules.add_rule(stop, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    me = os.getpid()
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        rules.add_rule(stop, name, seccomp.Arg(0, seccomp.NE, me))  # abort() signals itself
    for request in (TIOCSTI, TIOCLINUX):
        rules.add_rule(stop, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    for command in (F_SETOWN, F_SETSIG, F_SETOWN_EX):
        rules.add_rule(stop, "fcntl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, command))
    rules.add_rule(stop, "prlimit64", seccomp.Arg(0, seccomp.NE, 0))  # another's limits
    # Scheduling another process (the grader): refused, since a thread of ours may ask too.
    for name, who in (("setpriority", 1), ("sched_setaffinity", 0), ("sched_setscheduler", 0)):
        rules.add_rule(eperm, name, seccomp.Arg(who, seccomp.NE, 0))
    for name in ("sched_setparam", "sched_setattr", "migrate_pages", "move_pages"):
        rules.add_rule(eperm, name, seccomp.Arg(0, seccomp.NE, 0))
    for name in UNCOVERED:
        rules.add_rule(eperm, name)
    if files_read_only or truncate:  # Landlock before ABI 3 cannot refuse truncate(2)
        rules.add_rule(eperm, "truncate")
    if files_read_only:
        for name in FILE_CHANGES:
            rules.add_rule(eperm, name)
        for flag in OPEN_FOR_WRITING:
            rules.add_rule(eperm, "open", seccomp.Arg(1, seccomp.MASKED_EQ, flag, flag))
            rules.add_rule(eperm, "openat", seccomp.Arg(2, seccomp.MASKED_EQ, flag, flag))
    rules.load()
