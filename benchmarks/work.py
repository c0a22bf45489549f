"""Work efficiency of flattening (issue "Regularity-preserving flattening"): for every program
of tests/programs, the work and depth of its flat program on the `numpy` target next to the
interpreter's (the same cost model: docs/flat.md), and their ratio.

    python -m benchmarks.work [--all]

Counts, not times: they do not depend on the machine. Programs that stop with an accel error
are left out (their counts stop at the error). `--all` lists every program; by default the
ones above 2× and a summary.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from accel_kernel.lang.errors import AccelError
from accel_kernel.session import Session

PROGRAMS = sorted((Path(__file__).resolve().parent.parent / "tests" / "programs").glob("*.accel"))


def costs(path: Path) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """((interp work, depth), (flat work, depth)) of a program, or None if it fails."""
    text = path.read_text(encoding="utf-8")
    out = []
    for target in ("interp", "numpy"):
        try:
            result = Session(target=target).execute(text, path.name)
        except AccelError:
            return None
        assert result.costs is not None
        out.append(result.costs)
    return out[0], out[1]


def table(paths: list[Path]) -> list[tuple[str, int, int, int, int, float]]:
    rows = []
    for path in paths:
        found = costs(path)
        if found is None:
            continue
        (iw, idp), (fw, fdp) = found
        rows.append((path.stem, iw, fw, idp, fdp, fw / max(iw, 1)))
    return sorted(rows, key=lambda r: -r[5])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="list every program")
    args = parser.parse_args()
    rows = table(PROGRAMS)
    shown = rows if args.all else [r for r in rows if r[5] > 2]
    print("| program | interp work | flat work | ratio | interp depth | flat depth |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, iw, fw, idp, fdp, ratio in shown:
        print(f"| {name} | {iw} | {fw} | {ratio:.2f} | {idp} | {fdp} |")
    ratios = [r[5] for r in rows]
    print(f"\n{len(rows)} programs run on both targets; work ratio median "
          f"{statistics.median(ratios):.2f}, max {max(ratios):.2f}; "
          f"{sum(r <= 3 for r in ratios)} at most 3×, {sum(r > 3 for r in ratios)} above.")


if __name__ == "__main__":
    main()
