"""The code cells of the notebooks as the tests that compare targets with `interp` run them:
the few cells made of large inputs on smaller ones (`interp` builds every element one by one,
and numba's simulator runs a Python thread per GPU thread). `SMALLER` lists each replacement
(each must still match its notebook)."""
from __future__ import annotations

import json
from pathlib import Path

# notebook -> (text, its replacement): large inputs made small
SMALLER: dict[str, list[tuple[str, str]]] = {
    # 20,000 ragged rows: 300; the Pythagorean triples below 20: the same kernels on a third
    # of the elements
    "00-tour.ipynb": [("(iota 20000)", "(iota 300)"),
                      ("a <- [1..<30], b <- [a..<30], c <- [b..<30]",
                       "a <- [1..<20], b <- [a..<20], c <- [b..<20]")],
    "04-fusion.ipynb": [("(iota 1000000)", "(iota 300)"), ("(iota 100000)", "(iota 60)")],
    # sequences of millions of elements (interp runs them too): hundreds
    "05-sequences.ipynb": [("(produce 10000000 (", "(produce 300 ("),
                           ("(iota 200000)", "(iota 300)"), ("(iota 400000)", "(iota 3000)"),
                           ("(produce 4000000 (", "(produce 200 ("),
                           ("(produce 200000 (\\i -> iota (if i < 100000",
                            "(produce 400 (\\i -> iota (if i < 200"),
                           ("env[100]", "env[5]"), ("iota 2000000", "iota 20000")],
    # the thesis' workloads: hundreds of rows, samples, links and candidate words
    "07-workloads.ipynb": [("let rows = 20000", "let rows = 300"),
                           ("(iota 200000)", "(iota 3000)"),
                           ("let pages = 5000", "let pages = 50"),
                           ("let links = 30000", "let links = 600"),
                           ("let words = 26 ** 4", "let words = 26")],
}


def cells(path: Path) -> list[tuple[str, bool]]:
    """(source, tagged raises-exception) of every code cell, with `SMALLER`'s replacements."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    out = [("".join(c["source"]), "raises-exception" in c["metadata"].get("tags", []))
           for c in notebook["cells"] if c["cell_type"] == "code"]
    for text, small in SMALLER.get(path.name, []):
        assert any(text in source for source, _ in out), f"{path.name} has no {text!r}"
        out = [(source.replace(text, small), tagged) for source, tagged in out]
    return out
