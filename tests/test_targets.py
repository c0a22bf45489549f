"""The targets are records in one table (`targets.TARGETS`): a name is looked up there once,
and the session, the library, the CLI and the kernel read the record. No module above the
back ends compares a target's name with a string."""
from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

import accel_kernel
from accel_kernel import targets
from accel_kernel.session import Session

PACKAGE = Path(accel_kernel.__file__).parent
# every module but the table and the back ends (the session, api, the CLI, the kernel, the
# IPython extension, ...): they read the record, never its name
MODULES = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                 if p != PACKAGE / "targets.py" and p.relative_to(PACKAGE).parts[0] != "backends")


def name_uses(source: str, names=tuple(targets.TARGETS)) -> list[str]:
    """The places in `source` that compare a value with a target's name written as a string
    (`== "cpu"`, `!= "interp"`, `in ("numpy", "cpu")`, `case "cpu":`), key a dict by one
    (`{"numpy": ...}`) or index by one (`FLAT["cpu"]`): each as `line: code`."""
    tree = ast.parse(source)
    lines = source.splitlines()

    def is_name(node) -> bool:
        return isinstance(node, ast.Constant) and node.value in names

    def holds_name(node) -> bool:
        return is_name(node) or (isinstance(node, (ast.Tuple, ast.List, ast.Set))
                                 and any(is_name(e) for e in node.elts))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            hit = any(holds_name(side) for side in [node.left, *node.comparators])
        elif isinstance(node, ast.Dict):
            hit = any(key is not None and is_name(key) for key in node.keys)
        elif isinstance(node, ast.Subscript):
            hit = is_name(node.slice)
        elif isinstance(node, ast.MatchValue):
            hit = is_name(node.value)
        else:
            continue
        if hit:
            found.append(f"{node.lineno}: {lines[node.lineno - 1].strip()}")
    return found


def test_the_scan_finds_a_target_name_compared():
    code = ('if target == "cpu": pass\n'
            'if "interp" != t: pass\n'
            'if t in ("numpy", "cpu"): pass\n'
            'STAGE = {"numpy": "flatten"}\n'
            'x = TABLE["cuda"]\n'
            'match t:\n    case "cpu": pass\n')
    assert [line.split(":")[0] for line in name_uses(code)] == ["1", "2", "3", "4", "5", "7"]
    # a name in a message or a docstring is not a comparison
    assert name_uses('"""runs on cpu"""\nprint(f"use --target interp")\nx = "numpy"\n') == []


def test_the_scan_covers_the_front_ends():
    assert {"session.py", "api.py", "cli.py", "ipython_ext.py", "kernel/kernel.py",
            "kernel/magics.py"} <= set(MODULES)
    assert "targets.py" not in MODULES and not any(m.startswith("backends") for m in MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_no_module_above_the_back_ends_compares_target_names(module):
    uses = name_uses((PACKAGE / module).read_text())
    assert uses == [], (f"{module} compares a target name; read a field of the "
                        f"`targets.Target` record instead: {uses}")


def test_get_gives_the_record_or_says_why_not():
    cpu = targets.get("cpu")
    assert cpu is targets.TARGETS["cpu"] and targets.get(cpu) is cpu
    assert cpu.name == "cpu" and cpu.last_stage == "fuse" and cpu.built
    with pytest.raises(ValueError, match="unknown target 'tpu': choose one of "
                                         "interp, numpy, cpu, cuda"):
        targets.get("tpu")
    later = replace(targets.TARGETS["cuda"], name="later", pending="it arrives later")
    with pytest.raises(NotImplementedError) as err:
        targets.get(later)
    assert str(err.value) == ("target 'later' (numba.cuda kernels on an NVIDIA GPU) is not built "
                              "yet: it arrives later; use --target interp")
    assert targets.BUILT == {"interp", "numpy", "cpu", "cuda"} and targets.find("tpu") is None
    assert targets.DEFAULT_TARGET == "cpu" and targets.REFERENCE.reference


def test_a_new_target_is_one_record(monkeypatch):
    """A record added to the table is a target everywhere: here a second name for the
    numpy back end."""
    twin = replace(targets.TARGETS["numpy"], name="twin", what="numpy again")
    monkeypatch.setitem(targets.TARGETS, "twin", twin)
    session = Session(target="twin")
    assert session.target == "twin" and session.target_record is twin
    result = session.execute("map (\\r -> reduce (+) 0 r) [[1, 2], [3], []]", "cell[1]")
    assert result.text == "[3, 3, 0]" and "compile" in result.timings
    assert result.costs is not None                 # it counts work and depth, as numpy does
    assert "twin    numpy again" in targets.describe(session.target_record)
    import numpy as np
    program = accel_kernel.compile("def total (xs: []i64) : i64 = reduce (+) 0 xs")
    assert program.run("total", np.arange(4, dtype=np.int64), target="twin") == 6
