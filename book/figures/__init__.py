"""Figures and tables for the book, drawn at build time from the repository's
own data and code: book/data/bench_*.csv (written by `python -m autograder
bench`), the registry, and the explorers' models. Nothing here is typed in.

A chapter imports this package (`import figures`, book/ being its working directory)
and calls what it draws by name, `figures.you_are_here("05")`: every public name of
the modules below is offered here. By what they draw:

- common: the committed data read one value at a time, how a figure is shown, and the
  steps not yet measured;
- rungs: the ladder's measurements, step by step;
- landing: the landing page's chart, table and list of exercises, and each chapter's
  exercise;
- models: the chapters' models (warp addresses, bank passes, tiles, the roofline);
- profile: Nsight Compute's counters, and the model's prediction against them;
- compiled: the SASS instruction mix, registers, occupancy and hardware limits;
- tuning: the autotuning searches and the ablation runs;
- dispatch: step 09's shape sweep and plans;
- precision: TF32 and 3xTF32 against cuBLAS, and their accuracy.
"""

from .common import *  # noqa: F403
from .compiled import *  # noqa: F403
from .dispatch import *  # noqa: F403
from .landing import *  # noqa: F403
from .models import *  # noqa: F403
from .precision import *  # noqa: F403
from .profile import *  # noqa: F403
from .rungs import *  # noqa: F403
from .tuning import *  # noqa: F403
