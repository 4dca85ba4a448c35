"""`python -m autograder.course.pictures DIR`: every step's picture as a PNG in DIR."""

from __future__ import annotations

import sys

from autograder.ladder import registry

from . import picture, png


def main(argv: list[str]) -> None:
    """Write every step's picture to DIR/NN_slug.png."""
    from pathlib import Path

    out = Path(argv[0] if argv else "pictures")
    out.mkdir(parents=True, exist_ok=True)
    for step in registry.ALL_STEPS:
        (out / f"{step.name}.png").write_bytes(png(picture(step)))
        print(out / f"{step.name}.png")


if __name__ == "__main__":
    main(sys.argv[1:])
