"""Judge: is a kernel right, and how fast is it, counting only verified launches. The checker's
suite and its diagnosis, the sanitizer's pass, verified timing and the verdicts: one
implementation that notebooks, `grade` and pytest all call. It may use run, isolate and ladder.

`judge.check(spec)` and `judge.run(job)` run a kernel's job in a child process (job.py).
"""

from .job import Check, GraderFault, Job, Outcome, Time, check, run

__all__ = ["Check", "GraderFault", "Job", "Outcome", "Time", "check", "run"]
