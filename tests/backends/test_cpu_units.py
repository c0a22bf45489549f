"""The cpu target's compile units (backends/cpu/units.py): the same kernel in two programs is
one unit (one file, one compile), whatever the programs name things."""
from __future__ import annotations

import ast

from accel_kernel.backends.cpu.codegen import generate
from accel_kernel.backends.cpu.units import PREFIX, split
from accel_kernel.session import Session

ONE = "let xs = iota 10\nlet ys = map (\\x -> x * 3 + 1) xs\nreduce (+) 0 ys\n"
TWO = "let items = iota 7\nlet doubled = map (\\v -> v * 3 + 1) items\nreduce (+) 0 doubled\n"


def module_source(text: str) -> str:
    stages = Session(target="interp").program_stages(text, "units.accel", stop_after="fuse")
    return generate(stages[-1].program).source


def test_the_same_kernel_under_other_names_is_one_unit():
    one, two = split(module_source(ONE)), split(module_source(TWO))
    assert one.units and set(one.units) == set(two.units)
    assert one.main != two.main or ONE == TWO      # the host functions keep their names
    for name, text in one.units.items():
        assert name.startswith(PREFIX)
        tree = ast.parse(text)
        names = [f.name for f in tree.body if isinstance(f, ast.FunctionDef)]
        assert names[0] == "fn_0" and all(n.startswith("fn_") for n in names)
        assert "#" not in text                      # comments (program text) dropped


def test_the_main_module_imports_every_numba_function_under_its_own_name():
    source = module_source(ONE)
    parts = split(source)
    jitted = [f.name for f in ast.parse(source).body if isinstance(f, ast.FunctionDef)
              and any("njit" in ast.unparse(d) for d in f.decorator_list)]
    imported = {a.asname: s.module for s in ast.parse(parts.main).body
                if isinstance(s, ast.ImportFrom) and s.module.startswith(PREFIX)
                for a in s.names}
    assert set(imported) == set(jitted) and set(imported.values()) <= set(parts.units)
    hosts = [f.name for f in ast.parse(parts.main).body if isinstance(f, ast.FunctionDef)]
    assert hosts and all(name.endswith("_host") for name in hosts)


def test_a_module_without_numba_functions_is_left_whole():
    source = "import math\n\n\ndef f(x):\n    return math.sqrt(x)\n"
    assert split(source).main == source and split(source).units == {}


def test_both_programs_run_with_their_values_from_the_shared_units(tmp_path):
    """The second program imports (so compiles) no unit: the first one's serve it. A unit
    this process imported before (another test's program with the same kernel) is not
    imported again, so only the new ones are written to this cache."""
    import sys

    from accel_kernel import targets

    def imported() -> set[str]:
        return {name for name in sys.modules if name.startswith(PREFIX)}
    before, after = imported(), []
    for text, expect in ((ONE, "145"), (TWO, "70")):
        session = Session(target="cpu", options=targets.CompileOptions(tmp_path))
        assert session.execute(text, "units.accel").text == expect
        after.append(imported())
    assert after[1] == after[0] and set(split(module_source(ONE)).units) <= after[0]
    assert {p.stem for p in tmp_path.glob(f"{PREFIX}*.py")} == after[0] - before
