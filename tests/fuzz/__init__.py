"""Random differential testing of the compiled targets against `interp` (issue 18, item 4).

`generate` makes random well-typed programs (deterministic per seed), `run` runs one program
on several targets and classifies what each target did against `interp`, `shrink` cuts a
program down while it keeps failing the same way, and `python -m tests.fuzz` ties them
together, writing the shrunk disagreements into `tests/programs/regressions/`.
"""
