"""The `cpu` target: generated numba kernels, their host driver and caches, errors raised by
compiled code with the interpreter's kind and position (every program of tests/programs
runs on `cpu` in tests/test_programs.py; notebooks and random programs in
tests/test_differential.py)."""
from __future__ import annotations

import ast as python_ast

import pytest

from accel_kernel.backends.cpu import driver
from accel_kernel.backends.cpu.codegen import generate
from accel_kernel.ir.flat_printer import print_stmt
from accel_kernel.kernel.magics import MagicContext, parse_magic, run_magic
from accel_kernel.lang.errors import AccelError
from accel_kernel.session import Session


def module_of(text: str):
    stages = Session().program_stages(text, "t.accel", stop_after="fuse")
    return generate(stages[-1].program)


def function(source: str, name: str) -> python_ast.FunctionDef:
    tree = python_ast.parse(source)
    return next(n for n in tree.body if isinstance(n, python_ast.FunctionDef) and n.name == name)


def errors_on_interp_and_cpu(text: str) -> list[tuple[str, str]]:
    """(kind, position) of the accel error `text` stops with, on interp then on cpu."""
    outcomes = []
    for target in ("interp", "cpu"):
        with pytest.raises(AccelError) as info:
            Session(target=target).execute(text, "t.accel")
        outcomes.append((info.value.kind, info.value.span.location()))
    return outcomes


def test_a_push_kernel_has_no_branch_per_element():
    module = module_of("def f (a: []f64) (b: []f64) : []f64 = a ++ b")
    (kernel,) = module.kernels.values()
    assert kernel.kind == "push"
    body = function(module.source, kernel.name)
    assert not any(isinstance(n, (python_ast.If, python_ast.IfExp)) for n in python_ast.walk(body))
    assert sum(isinstance(n, python_ast.For) for n in python_ast.walk(body)) == 2


def test_a_filter_map_reduce_is_one_parallel_loop_that_stores_nothing():
    module = module_of("def f (xs: []i64) : i64 = reduce (+) 0 (map (\\x -> x * x) "
                       "(filter (> 0) xs))")
    (kernel,) = module.kernels.values()
    source = module.source
    assert f"def {kernel.name}_count" not in source          # nothing compacted
    assert "prange" in python_ast.unparse(function(source, kernel.name))
    assert "alloc(" not in python_ast.unparse(function(source, kernel.name + "_host"))


def test_gathers_use_intp_indices_and_are_checked():
    module = module_of("def f (xs: []f64) (is: []i64) : []f64 = map (\\i -> xs[i] * 2.0) is")
    assert "numba.intp(" in module.source
    text = ("def f (xs: []f64) (is: []i64) : []f64 = map (\\i -> xs[i] * 2.0) is\n"
            "f [1.0, 2.0] [0, 5]\n")
    outcomes = errors_on_interp_and_cpu(text)
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == "IndexError"


def test_division_by_zero_in_a_kernel_has_the_interpreters_kind_and_position():
    text = "let xs = [4, 0, 2]\nmap (\\x -> 10 / x) xs\n"
    outcomes = errors_on_interp_and_cpu(text)
    assert outcomes[0] == outcomes[1] == ("DivisionByZero", "t.accel:2:12")


def test_a_fused_map_over_arrays_of_different_lengths_reads_nothing_past_their_ends():
    """The second map joins the first one's kernel, ahead of the flattener's length check:
    the kernel checks its inputs' lengths, does not run, and the host's check raises the
    interpreter's error."""
    text = ("def f (xs: []f64) (ys: []f64) : []f64 =\n"
            "  let a = map (\\x -> x * 2.0) xs\n"
            "  in map2 (\\p q -> p + q) a ys\n"
            "f (map f64 (iota 1000)) (map f64 (iota 10))\n")
    outcomes = errors_on_interp_and_cpu(text)
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == "SizeError"
    module = module_of(text.rsplit("\n", 2)[0])
    (kernel,) = [k for k in module.kernels.values() if k.kind == "map"]
    host = python_ast.unparse(function(module.source, kernel.name + "_host"))
    assert ".size != n" in host


def test_mandelbrot_and_nbody_are_one_kernel_each_with_their_loops_inside():
    from benchmarks.workloads import MANDELBROT, NBODY
    for source, entry in ((MANDELBROT, "mandelbrot"), (NBODY, "nbody")):
        stages = Session().program_stages(source, "t.accel", entry, stop_after="fuse")
        stmts = list(stages[-1].program.forms[-1].body.stmts)
        for s in list(stmts):       # a kernel that may fail runs under its GUARD's `if`
            if type(s.op).__name__ == "If":
                stmts += list(s.op.then.stmts) + list(s.op.else_.stmts)
        kernels = [s for s in stmts if type(s.op).__name__ == "Kernel"]
        heavy = [k for k in kernels
                 if any(" loop " in print_stmt(st)[0] for st in k.op.body.stmts)]
        assert len(heavy) == 1, entry           # the loop is inside a scalar function
        assert not any(type(s.op).__name__ == "Loop"
                       for s in stages[-1].program.forms[-1].body.stmts), entry


def test_a_rerun_cell_is_not_compiled_again():
    session = Session(target="cpu")
    cell = "map (\\x -> x * 3 + 1) [1, 2, 3]"
    first = session.execute(cell)
    modules = len(driver._MODULES)
    second = session.execute(cell)
    assert second.text == first.text == "[4, 7, 10]"
    assert len(driver._MODULES) == modules
    assert second.timings["compile"] < 0.05 + first.timings["compile"]
    assert session.memory.allocations > 0 and session.memory.peak > 0


def test_show_codegen_and_fuse_in_the_kernel():
    session = Session()
    session.execute("def f (xs: []i64) : i64 = reduce (+) 0 (map (\\x -> x * x) xs)")
    ctx = MagicContext(session, cell_name="cell[2]", line=1)
    code = run_magic(parse_magic("%show codegen f"), ctx).displays[0]
    assert "@njit(parallel=True" in code["text/plain"] and "<span" in code["text/html"]
    fused = run_magic(parse_magic("%show fuse f"), ctx)
    assert "kernel k1_redomap" in fused.metadata_of(0)["image/svg+xml"]["accel/dot"] \
        or "kernel k1_redomap" in str(fused.displays[0])


def test_a_kernel_that_writes_nothing_has_no_empty_block():
    """The discarded half of a `partition` leaves a filter kernel with no output: its `if`
    and its element loop have nothing to do and are left out (Python has no empty blocks)."""
    text = "loop s = [1, 5, 2, 4, 3] for i < 2 do let (gt, _) = partition (> 2) s in gt"
    module = module_of(text)
    empty = [k for k in module.kernels.values() if not k.outputs]
    assert empty
    for kernel in empty:
        body = function(module.source, kernel.name)
        assert not any(isinstance(n, python_ast.If) for n in python_ast.walk(body))
    assert Session(target="cpu").execute(text).text == "[5, 4, 3]"


def test_a_filter_kernel_whose_kept_values_are_only_reduced_has_no_counting_pass():
    """Values made before the filter are written at every element (as a map's); with no
    value written at the kept positions, neither the kernel nor its host has a counting
    pass or `starts` (the host once called a `_count` function the body never wrote)."""
    text = ("let xs = [3, 1, 4]\n"
            "(reduce (+) 0 (let (a, _) = partition (\\x -> true) xs in a)) * "
            "(let (p, q) = (2, [0 | x <- xs, let y = 0]) in p + length q)")
    module = module_of(text)
    filters = [k for k in module.kernels.values() if k.kind == "filter"]
    assert filters
    for kernel in filters:
        host = python_ast.unparse(function(module.source, kernel.name + "_host"))
        if f"def {kernel.name}_count" not in module.source:
            assert "_count(" not in host and "starts" not in host
    assert Session(target="cpu").execute(text).text == "40"


def test_a_block_reshaped_twice_in_one_kernel_keeps_its_inner_axes():
    text = "map (\\x -> map (\\y -> [x, y]) [10, 20]) [1, 2, 3]"
    assert Session(target="cpu").execute(text).text == \
        Session(target="interp").execute(text).text


@pytest.mark.parametrize("text", ["iota (-1)", "replicate (-2) 1.0", "let n = 2\niota (-n)"])
def test_a_negative_size_is_a_size_error_constant_or_not(text):
    kinds = errors_on_interp_and_cpu(text)
    assert kinds[0] == kinds[1] and kinds[0][0] == "SizeError"


def test_the_compile_options_say_where_kernels_are_cached(tmp_path, monkeypatch):
    """The driver keeps its modules where the session's `CompileOptions` say; the session
    reads `$ACCEL_CACHE_DIR` when it is made, and nothing under backends/ reads the
    environment."""
    from pathlib import Path

    from accel_kernel.targets import CompileOptions
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "from_env"))
    assert Session().compile_options == CompileOptions(tmp_path / "from_env")
    assert CompileOptions.from_environment({}).cache_dir.parts[-2:] == ("accel_kernel", "kernels")
    session = Session(target="cpu", options=CompileOptions(tmp_path / "given"))
    assert session.execute("map (\\x -> x * 7 - 12345) [1, 2]").text == "[-12338, -12331]"
    assert list((tmp_path / "given").glob("accel_*.py"))
    backends = Path(driver.__file__).resolve().parent.parent
    for path in backends.rglob("*.py"):
        assert "os.environ" not in path.read_text() and "getenv" not in path.read_text(), path
