"""Step 09 tunes itself where it runs: on a GPU with no committed dispatch table, the
first product of each shape times the plans there are for it and keeps the fastest,
in a cache per GPU and software version in the user's cache directory, never in the
repository. PyTorch's TunableOp does the same with each GEMM shape it meets (a file
that records the library versions and the device, and is refused on a mismatch),
Triton's `autotune` with its configs (benchmarked when a key is first seen, the winner
cached on disk by version and target).

At the shape itself, not at its class's: a class's plan, chosen at square sample
shapes, ran a skinny C of the same class at half the speed of the best plan there
(64x8192x4096 on an H200: 128 x 256 tiles in 8 layers at 53% of cuBLAS, 64 x 128
tiles in 6 layers at 96%), and big tiles that fill the waves evenly, taken unsplit
without a timing, lost to small ones where K was short (3001x5003x64: 54% against
86%; 2026-11-29, GPU time). So a shape times every plan of by_shape.plan_space, step
08's own kernel, and the bands of rows that make whole waves (by_shape.whole_waves),
where there are such: 150 plans at most (at a long K, whose layers the plan space
counts finely), each timed as shape_timer times a plan (GPU time, the
median of a few samples after a warm-up). On an H200 that took 0.1 to 2.3 s a shape,
3.2 s at 8192^3, whose arithmetic takes near MAX_LAUNCH_S at the GPU's FP32 peak. A
larger product has fewer plans, all near its big tiles' speed, and too long a launch
to time them all: it takes its class's plan (by_shape.choose_with), the class
tuned the first time it is met over SHORTLIST plans that the device's arithmetic
shortlists (by_shape.shortlist, step 08's own among them) at the class's sample shapes
(by_shape.sample_shapes; those over MAX_LAUNCH_S left out, the smallest kept).

It is said once on stderr, with a line per shape or class tuned and the seconds spent.
SGEMM_AUTOTUNE=0 turns it off for reproducible runs: then the cache is neither read
nor written, and the device's arithmetic decides alone (by_shape.device_rule). A
committed table for this GPU wins over both: where one exists nothing is tuned.
`python -m autograder tune 09` stays the full search, and what the book's tables
come from.

The timing itself (time_plan) is given from outside: `gpu_timer` on a GPU, a fake
in the tests.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from statistics import geometric_mean

from ..ladder import hardware
from . import by_shape, composed, shape_timer
from .by_shape import Bands, Plan

ENV = "SGEMM_AUTOTUNE"  # "0" (or off, false, no): no tuning, no cache
CACHE_ENV = "SGEMM_AUTOTUNE_CACHE"  # a directory for the cache instead of the user's
CACHE_VERSION = 2
# A product whose arithmetic alone takes longer than this on the device (at its FP32
# peak) is not timed at its own shape, and as a class's sample shape only where it is
# the class's smallest.
MAX_LAUNCH_S = 0.02


def enabled() -> bool:
    """Whether step 09 may tune on first use (SGEMM_AUTOTUNE is not 0, off, false, no)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def cache_dir() -> Path:
    """Where the tuned plans are kept: $SGEMM_AUTOTUNE_CACHE, else the user's cache
    directory. Written by hand rather than with platformdirs, which the package does
    not depend on (it comes only with Jupyter): the XDG base directories on Linux
    ($XDG_CACHE_HOME, else ~/.cache), %LOCALAPPDATA% on Windows."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or (
        os.environ.get("LOCALAPPDATA") if os.name == "nt" else None
    )
    return Path(base or Path.home() / ".cache") / "sgemm-course" / "by_shape"


def source_hash() -> str:
    """What the plans' speed depends on in the course itself: the code step 09 runs
    (composed.fingerprint: step 08's and step 09's kernels, the tile shapes with all
    their flags) and the shape classes."""
    classes = [by_shape.WAVE_BOUNDS, by_shape.K_BOUNDS, by_shape.TABLE_VERSION]
    return hashlib.sha256(f"{composed.fingerprint()} {json.dumps(classes)}".encode()).hexdigest()


@dataclass(frozen=True)
class Key:
    """What a cached plan is good for: this GPU (by name and SMs), these versions of the
    driver, CUDA, NVRTC and CuPy, and this source of the course's kernels."""

    gpu: str
    sms: int
    versions: tuple[tuple[str, str], ...]
    source: str

    def as_dict(self) -> dict:
        return {"gpu": self.gpu, "sms": self.sms, "versions": dict(self.versions),
                "source": self.source}  # fmt: skip

    def path(self, directory: Path) -> Path:
        digest = hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode())
        from .gpu import slug

        return directory / f"{slug(self.gpu)}-{digest.hexdigest()[:16]}.json"


def key(gpu: str, sms: int, versions: Mapping[str, str]) -> Key:
    return Key(gpu, sms, tuple(sorted(versions.items())), source_hash())


def _note(text: str) -> None:
    print(f"step 09: {text}", file=sys.stderr, flush=True)


Shape = tuple[int, int, int]  # (M, N, K), or a class's (waves, k, aligned)
Choice = Plan | Bands


@dataclass
class Kept:
    """What a cache holds: the plan of each shape class tuned, the choice at each shape
    timed at itself."""

    classes: dict[Shape, Plan] = field(default_factory=dict)
    shapes: dict[Shape, Choice] = field(default_factory=dict)


def _to_json(choice: Choice) -> dict:
    if isinstance(choice, Bands):
        return {"rows": choice.rows, "top": _to_json(choice.top), "rest": _to_json(choice.rest)}
    return {"tiles": choice.tiles, "splits": choice.splits}


def _from_json(data: dict) -> Choice:
    if "rows" in data:
        return Bands(int(data["rows"]), _from_json(data["top"]), _from_json(data["rest"]))
    return Plan(data["tiles"], int(data["splits"]))


def _could_choose(choice: Choice, M: int, N: int, K: int, sms: int) -> bool:
    """Whether first use could have chosen this at M, N, K (FirstUse.candidates): a plan
    of the plan space or step 08's own, or bands of one of BIG_TILES unsplit over rows
    C has, with such a choice below them."""
    if isinstance(choice, Bands):
        top = choice.top
        return (
            isinstance(top, Plan)
            and top.tiles in by_shape.BIG_TILES
            and top.splits == 1
            and 1 <= choice.rows < M
            and _could_choose(choice.rest, M - choice.rows, N, K, sms)
        )
    return choice == by_shape.SAFE or choice in by_shape.plan_space(M, N, K, sms)


@dataclass
class Cache:
    """The tuned plans of one Key, in one JSON file of the cache directory."""

    key: Key
    directory: Path = field(default_factory=cache_dir)

    @property
    def path(self) -> Path:
        return self.key.path(self.directory)

    def load(self) -> Kept:
        """What is kept for this key; nothing where there is no file. A file that cannot
        be read, or was written for another key or version, is ignored with a note on
        stderr."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return Kept()
        except OSError as e:
            _note(f"the tuning cache {self.path} could not be read ({e}); ignored")
            return Kept()
        try:
            data = json.loads(text)
            if data.get("version") != CACHE_VERSION or data.get("key") != self.key.as_dict():
                raise ValueError("written for another GPU, version or kernel source")
            classes = {
                (int(e["waves"]), int(e["k"]), int(e["aligned"])): _from_json(e)
                for e in data["plans"]
            }
            shapes = {
                (int(e["M"]), int(e["N"]), int(e["K"])): _from_json(e["choice"])
                for e in data["shapes"]
            }
            if not all(
                isinstance(p, Plan) and p.tiles in by_shape.TILES
                and 1 <= p.splits <= by_shape.MAX_SPLITS
                for p in classes.values()
            ):  # fmt: skip
                raise ValueError("a class's plan the dispatcher does not have")
            if not all(_could_choose(c, *shape, self.key.sms) for shape, c in shapes.items()):
                raise ValueError("a shape's choice first use could not have made")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            _note(f"the tuning cache {self.path} is corrupt ({e}); ignored, and tuned anew")
            return Kept()
        return Kept(classes, shapes)

    def save(
        self,
        classes: Mapping[Shape, Plan] | None = None,
        shapes: Mapping[Shape, Choice] | None = None,
    ) -> None:
        """Keep plans, with those another process kept meanwhile, atomically: the file is
        written beside its place and renamed onto it, so a reader sees the old file or
        the new one, never half of one."""
        kept = self.load()
        data = {
            "version": CACHE_VERSION,
            "key": self.key.as_dict(),
            "plans": [
                {"waves": w, "k": k, "aligned": a, **_to_json(p)}
                for (w, k, a), p in sorted({**kept.classes, **(classes or {})}.items())
            ],
            "shapes": [
                {"M": M, "N": N, "K": K, "choice": _to_json(c)}
                for (M, N, K), c in sorted({**kept.shapes, **(shapes or {})}.items())
            ],
        }
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1)
            os.replace(temporary, self.path)
        except OSError as e:  # a read-only home: tuned again next time, no worse
            _note(f"the tuning cache {self.path} could not be written ({e})")


# time_plan(shape, choice): seconds of GPU time for a plan (or bands of plans) at shape;
# math.inf where it could not run or its output was not a product.
TimePlan = Callable[[Shape, Choice], float]


class FirstUse:
    """choose(M, N, K) that tunes on first use: a shape whose arithmetic takes
    race_s or less at the device's FP32 peak is timed at itself, over every plan there
    is for it (candidates), and keeps the fastest; a larger one takes its class's plan,
    the class tuned the first time it is met: its shortlist, each plan scaled to each
    sample shape and timed there, the plan with the best geometric mean of speed over
    the shapes kept (the same criterion as `tune 09`'s: cuBLAS, which tune 09 divides
    by, is the same at each shape whatever the plan)."""

    def __init__(
        self,
        device: hardware.Device,
        time_plan: TimePlan,
        cache: Cache | None = None,
        registers: Mapping[str, int] | None = None,
        priors: list[by_shape.Table] = (),
        max_launch_s: float = MAX_LAUNCH_S,
        race_s: float = MAX_LAUNCH_S,
    ):
        self.device = device
        self.time_plan = time_plan
        self.cache = cache
        self.registers = registers
        self.priors = list(priors)
        self.max_launch_s = max_launch_s
        self.race_s = race_s
        kept = cache.load() if cache else Kept()
        self.plans, self.chosen = kept.classes, kept.shapes
        self.seconds = 0.0  # spent tuning, shapes and classes together
        self.tuned: list[tuple[Shape, Plan, float]] = []  # class, plan, seconds
        self.raced: list[tuple[Shape, Choice, float]] = []  # shape, choice, seconds
        self._said = False

    def arithmetic_s(self, shape: Shape) -> float:
        """The shape's arithmetic alone, in seconds at the device's FP32 peak."""
        return 2 * math.prod(shape) / self.device.fp32_peak_flops

    def choose(self, M: int, N: int, K: int) -> Choice:
        shape = (M, N, K)
        if shape in self.chosen:
            return self.chosen[shape]
        if self.arithmetic_s(shape) > self.race_s:
            return by_shape.choose_with(self.device.sms, self.class_plan, M, N, K)
        self.chosen[shape] = self.race(shape)
        if self.cache:
            self.cache.save(shapes={shape: self.chosen[shape]})
        return self.chosen[shape]

    def candidates(self, M: int, N: int, K: int) -> list[Choice]:
        """Every plan of by_shape.plan_space that fits the device, step 08's own kernel,
        and where C makes whole waves of big tiles and more (by_shape.whole_waves), those
        waves in one band and the rows below them as choose chooses for them."""
        found: list[Choice] = [by_shape.SAFE] + [
            plan
            for plan in by_shape.plan_space(M, N, K, self.device.sms)
            if by_shape.resident_blocks(plan.tiles, self.device, self.registers)
        ]
        band = by_shape.whole_waves(M, N, self.device.sms)
        if band:
            rows, tiles = band
            found.append(Bands(rows, Plan(tiles, 1), self.choose(M - rows, N, K)))
        return found

    def race(self, shape: Shape) -> Choice:
        candidates = self.candidates(*shape)  # the rows below a band are timed first
        start = time.monotonic()
        self._say_once()
        seconds = {choice: self.time_plan(shape, choice) for choice in candidates}
        best = min(seconds, key=seconds.get)
        if not seconds[best] < math.inf:
            best = by_shape.SAFE
        where = "x".join(map(str, shape))
        self._kept(self.raced, shape, best, start, f"timed {len(candidates)} plans at {where}")
        return best

    def _kept(self, kept: list, key: Shape, best: Choice, start: float, what: str) -> None:
        """Counts the seconds since start, keeps best for key, and says so."""
        spent = time.monotonic() - start
        self.seconds += spent
        kept.append((key, best, spent))
        _note(f"{what}: {best}, {spent:.1f} s (tuning so far {self.seconds:.1f} s)")

    def _say_once(self) -> None:
        if not self._said:
            self._said = True
            _note(
                f"no dispatch table for the {self.device.name}: timing its plans at each new "
                f"shape up to {1e3 * self.race_s:g} ms of arithmetic, and up to "
                f"{by_shape.SHORTLIST} plans for each new class of larger shapes, once; kept in "
                f"{self.cache.path if self.cache else 'memory'} ({ENV}=0: no tuning)"
            )

    def class_plan(self, cls: Shape, M: int, N: int, K: int) -> Plan:
        if cls not in self.plans:
            self.plans[cls] = self.tune(cls)
            if self.cache:
                self.cache.save(classes={cls: self.plans[cls]})
        return by_shape.scaled(self.plans[cls], cls, M, N, K, self.device.sms)

    def shapes(self, cls: Shape) -> list[Shape]:
        """The class's sample shapes whose arithmetic fits max_launch_s, the smallest at
        least."""
        shapes = sorted(by_shape.sample_shapes(cls, self.device.sms), key=math.prod)
        kept = [s for s in shapes if self.arithmetic_s(s) <= self.max_launch_s]
        return kept or shapes[:1]

    def tune(self, cls: Shape) -> Plan:
        start = time.monotonic()
        candidates = by_shape.shortlist(cls, self.device, self.registers, self.priors)
        shapes = self.shapes(cls)
        where = "x".join(map(str, by_shape.measured_shape(cls, self.device.sms)))
        self._say_once()
        rates: dict[Plan, list[float]] = {}
        for plan in candidates:
            for shape in shapes:
                seconds = self.time_plan(shape, by_shape.scaled(plan, cls, *shape, self.device.sms))
                rates.setdefault(plan, []).append(0.0 if not seconds < math.inf else 1 / seconds)
        right = {p: r for p, r in rates.items() if all(r)}
        best = max(right, key=lambda p: geometric_mean(right[p])) if right else by_shape.SAFE
        rows = "aligned" if cls[2] else "unaligned"
        what = (
            f"tuned class {len(self.tuned) + 1} (like {where}, rows {rows}) over "
            f"{len(candidates)} plans at {len(shapes)} shapes"
        )
        self._kept(self.tuned, cls, best, start, what)
        return best


def chooser(
    gpu_name: str,
    device: hardware.Device,
    time_plan: Callable[[], TimePlan] | None,
    versions: Callable[[], Mapping[str, str]],
    registers: Mapping[str, int] | None = None,
    tune: bool = True,
    table: bool = True,
) -> Callable[[int, int, int], Plan | Bands]:
    """choose(M, N, K) for this GPU: its committed table where there is one; else, with
    tuning on (enabled(), and `tune`), a FirstUse that tunes with time_plan() (made on
    first use: it allocates and compiles) and keeps its plans in the cache; with
    `tune` off, what the cache holds already, as FirstUse would run it, and
    device_class_plan for the rest (device_rule where the cache holds none); with
    SGEMM_AUTOTUNE=0, device_rule alone. `table` False sets the committed table aside
    (`bench --first-use`: a GPU nobody tuned on). Memoized per shape."""
    if table and by_shape.table_path(gpu_name).exists():
        return by_shape.chooser(gpu_name, device, registers)
    if not enabled():
        rule = functools.partial(by_shape.device_rule, device=device, registers=registers)
        return functools.lru_cache(maxsize=4096)(rule)
    cache = Cache(key(gpu_name, device.sms, versions()))
    if not tune or time_plan is None:
        kept = cache.load()
        if kept == Kept():
            rule = functools.partial(by_shape.device_rule, device=device, registers=registers)
            return functools.lru_cache(maxsize=4096)(rule)

        def class_plan(cls, M, N, K):
            if cls in kept.classes:
                return by_shape.scaled(kept.classes[cls], cls, M, N, K, device.sms)
            return by_shape.device_class_plan(M, N, K, device, registers)

        def choose(M, N, K):
            if (M, N, K) in kept.shapes:
                return kept.shapes[M, N, K]
            return by_shape.choose_with(device.sms, class_plan, M, N, K)

        return functools.lru_cache(maxsize=4096)(choose)
    timer: list[TimePlan] = []

    def lazy(shape, plan):
        if not timer:
            timer.append(time_plan())
        return timer[0](shape, plan)

    first_use = FirstUse(device, lazy, cache, registers, by_shape.committed_tables())
    choose = functools.lru_cache(maxsize=4096)(first_use.choose)
    choose.first_use = first_use
    return choose


def gpu_timer(gemms: Mapping[str, Callable], reduce: Callable) -> TimePlan:
    """time_plan on this GPU: the course's GEMM (composed.compose) with the plan forced,
    timed by shape_timer."""
    import cupy

    forced: dict[str, Plan] = {}
    launch = composed.compose(
        lambda M, N, K: forced["plan"], gemms, reduce, lambda n: cupy.empty(n, dtype=cupy.float32)
    )

    def forcing(plan: Plan) -> Callable:
        forced["plan"] = plan
        return launch

    return shape_timer.gpu_timer(forcing)
