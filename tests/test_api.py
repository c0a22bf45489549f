"""The Python library: compile, run with numpy and awkward values."""
import awkward as ak
import numpy as np
import pytest

import accel_kernel as acc

SOURCE = """
def sum_rows xss = map (\\row -> reduce (+) 0 row) xss
def scale (k: f64) xs = map (\\x -> k * x) xs
def twice x = x + x
def pairs (n: i64) = [(i, j) | i <- [0..<n], j <- [i..<n]]
"""


@pytest.fixture(scope="module")
def prog():
    return acc.compile(SOURCE)


def test_regular_in_regular_out(prog):
    out = prog.run("scale", 2.0, np.array([1.0, 2.5]), target="interp")
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    assert out.tolist() == [2.0, 5.0]


def test_generic_def_takes_its_types_from_the_arguments(prog):
    assert prog.run("twice", np.int32(4), target="interp") == 8
    assert prog.run("twice", np.int32(4), target="interp").dtype == np.int32
    assert prog.run("twice", 1.5, target="interp") == 3.0


def test_constrained_type_variables_are_checked(prog):
    """`twice x = x + x` is `num a => a -> a`: an array is not a number."""
    with pytest.raises(acc.AccelTypeError, match="argument 1 of `twice`: `a` must be one of"):
        prog.run("twice", np.array([1.5, 2.0]), target="interp")


def test_ragged_rows(prog):
    xss = ak.Array([[1, 2, 3], [], [4]])
    assert prog.run("sum_rows", xss, target="interp").tolist() == [6, 0, 4]
    regular = np.arange(6, dtype=np.int64).reshape(2, 3)
    assert prog.run("sum_rows", regular, target="interp").tolist() == [3, 12]


def test_arrays_of_tuples_come_back_as_awkward(prog):
    out = prog.run("pairs", 2, target="interp")
    assert isinstance(out, ak.Array)
    assert out.tolist() == [(0, 0), (0, 1), (1, 1)]


def test_run_defaults_to_cpu_and_gives_the_interpreters_value(monkeypatch):
    import inspect
    from accel_kernel.session import Session
    from accel_kernel.targets import DEFAULT_TARGET
    assert inspect.signature(acc.Program.run).parameters["target"].default == DEFAULT_TARGET
    used = []
    call_flat = Session.call_flat

    def spy(self, name, args, params, target):
        used.append(target.name)
        return call_flat(self, name, args, params, target)

    monkeypatch.setattr(Session, "call_flat", spy)
    sum_sq = acc.compile("def sum_sq (xs: []i64) : i64 = reduce (+) 0 (map (\\x -> x * x) xs)")
    xs = np.arange(10, dtype=np.int64)
    assert sum_sq.run("sum_sq", xs) == sum_sq.run("sum_sq", xs, target="interp") == 285
    assert used == ["cpu"]


def test_type_of(prog):
    assert prog.type_of("scale") == "f64 -> []f64 -> []f64"


def test_errors(prog):
    with pytest.raises(acc.AccelTypeError, match="argument 1 of `scale`"):
        prog.run("scale", np.array([1.0]), np.array([1.0]), target="interp")
    with pytest.raises(acc.AccelNameError):
        prog.run("nope", 1, target="interp")
    from accel_kernel.backends.cuda import device
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(device, "unavailable", lambda: device.NO_GPU)
        with pytest.raises(NotImplementedError, match="no NVIDIA GPU found"):
            prog.run("twice", 1, target="cuda")
    with pytest.raises(acc.AccelSyntaxError):
        acc.compile("def f x = (x + ")


def test_stages_of_a_def_by_name_and_views():
    prog = acc.compile("def ragged (xs: []i64) : [][]i64 = map (\\k -> iota k) xs\n"
                       "def twice (xs: []i64) : []i64 = map (\\x -> 2 * x) xs\n")
    stages = prog.stages("ragged")
    assert stages.names == ["parse", "typed", "desugar", "shape", "regularity", "flatten",
                            "fuse", "codegen"]
    regularity = stages["regularity"]
    assert regularity.json["bindings"]["ragged"]["regularity"] == "R>Ir>S"
    assert "ragged" in regularity.text and "twice" not in regularity.text
    assert regularity.dot.lstrip().startswith("digraph")
    assert "def k1_" in stages["codegen"].text             # the generated numba module
    with pytest.raises(KeyError, match="no stage 'run'"):
        stages["run"]


@pytest.mark.parametrize("entry, args", [
    ("scale", (2.0, np.array([1.0, 2.5]))),
    ("twice", (np.float32(1.5),)),
    ("sum_rows", (ak.Array([[1, 2, 3], [], [4]]),)),
    ("sum_rows", (np.arange(6, dtype=np.int64).reshape(2, 3),)),
    ("pairs", (3,)),
])
def test_the_numpy_target_gives_the_interpreters_values(prog, entry, args):
    expected = prog.run(entry, *args, target="interp")
    got = prog.run(entry, *args, target="numpy")
    assert type(got) is type(expected)
    assert ak.to_list(got) == ak.to_list(expected)


def test_a_regular_argument_keeps_a_regular_representation_on_numpy(prog):
    """The call is compiled with the argument's sizes: rows of a 2-D numpy array are summed
    by a 2-D reduction, ragged rows by a segmented one."""
    from accel_kernel.ir import flat as F
    session = prog._session
    prog.run("sum_rows", np.ones((2, 3), dtype=np.int64), target="numpy")
    prog.run("sum_rows", ak.Array([[1], [2, 3]]), target="numpy")
    ops = {key[1][0]: {type(s.op) for s in stages[-1].program.forms[0].body.stmts}
           for key, (stages, _) in session._flat_calls.items() if key[0] == "sum_rows"}
    assert set(ops) == {"[s0_0][s0_1]i64", "[][]i64"}
    assert F.Reduce in ops["[s0_0][s0_1]i64"] and F.SegReduce not in ops["[s0_0][s0_1]i64"]
    assert F.SegReduce in ops["[][]i64"]
    assert session.last_counters.work > 0


def test_errors_on_the_numpy_target_are_accel_errors(prog):
    bad = acc.compile("def at (xs: []i64) (i: i64) : i64 = xs[i]")
    with pytest.raises(acc.AccelIndexError):
        bad.run("at", np.arange(3), 5, target="numpy")


# ---------------------------------------------------------------- only accel errors (issue 18)

def test_a_huge_size_is_out_of_memory_on_every_target():
    prog = acc.compile("def big (n: i64) = reduce (+) 0 (iota n)")
    for target in ("interp", "numpy"):
        with pytest.raises(acc.OutOfMemory) as info:
            prog.run("big", 10 ** 14, target=target)
        assert info.value.requested > info.value.available
    assert prog.run("big", 4, target="interp") == 6


def test_an_internal_failure_is_an_internal_error_with_the_traceback(monkeypatch):
    from accel_kernel.backends.numpy import boundary

    def broken(value, param):
        raise ValueError("cannot convert")
    monkeypatch.setattr(boundary, "flat_from_python", broken)
    prog = acc.compile("def twice (xs: []i64) : []i64 = map (\\x -> 2 * x) xs")
    with pytest.raises(acc.InternalError) as info:
        prog.run("twice", np.array([1, 2]), target="numpy")
    err = info.value
    assert isinstance(err, acc.AccelError) and "ValueError: cannot convert" in err.message
    assert "Traceback" in err.details and "broken" in err.details


def test_a_failing_pass_is_an_internal_error_naming_it(monkeypatch):
    from accel_kernel.passes import desugar

    def deep(self, program):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(desugar.Desugarer, "program", deep)
    with pytest.raises(acc.InternalError, match="desugar: RecursionError") as info:
        acc.compile("def twice x = x + x").stages()
    assert info.value.stage == "desugar"
