"""The reference interpreter on hand-built ASTs: forms, scoping, late binding, dictionary
passing, run-time errors with spans, short-circuiting and cancellation. These tests need
neither the parser nor the type checker."""
import itertools

import numpy as np
import pytest

from accel_kernel.backends.interp import DefFunc, Interpreter, Partial, Sequence
from accel_kernel.lang import ast as A
from accel_kernel.lang import types as T
from accel_kernel.lang.errors import (AccelIndexError, AccelNameError, DivisionByZero,
                                      Interrupted, SizeError)
from accel_kernel.lang.source import Source, Span
from accel_kernel.runtime.cancel import CancelToken

_ids = itertools.count(1)
SRC = Source("cell[1]", "0123456789\nabcdefghij\n")


def node(cls, *args, at=None, **kw):
    span = Span(SRC, at[0], at[1]) if at else None
    return cls(*args, id=next(_ids), span=span, **kw)


def var(name, at=None):
    return node(A.Var, name, at=at)


def lit(value, t="i64"):
    return node(A.Lit, value, t)


def arr(*elems):
    return node(A.ArrayLit, tuple(lit(e) if isinstance(e, int) else e for e in elems))


def app(fn, *args, at=None):
    fn = var(fn) if isinstance(fn, str) else fn
    return node(A.Apply, fn, tuple(args), at=at)


def lam(names, body):
    return node(A.Lambda, tuple(node(A.PVar, n) for n in names), body)


def binop(op, left, right, at=None):
    return node(A.BinOp, op, left, right, at=at)


def run(*exprs, globals=None, types=None, inst=None, cancel=None):
    interp = Interpreter(globals or {}, types or {}, inst or {}, cancel=cancel)
    forms = [e if isinstance(e, (A.Def, A.GlobalLet, A.TopExpr)) else node(A.TopExpr, e)
             for e in exprs]
    return interp.run_forms(forms)


def value(expr, **kw):
    return run(expr, **kw).results[-1]


def test_literals_have_exact_numpy_types():
    assert type(value(lit(3, "i32"))) is np.int32
    assert type(value(lit(1.5, "f32"))) is np.float32
    assert value(lit(True, "bool")) == np.bool_(True)


def test_map_with_sections_and_operator_functions():
    assert value(app("map", node(A.RightSection, "-", lit(1)), arr(5, 6))) == [4, 5]
    assert value(app("map", node(A.LeftSection, "-", lit(1)), arr(5, 6))) == [-4, -5]
    assert value(app("reduce", node(A.OpFunc, "+"), lit(0), arr(1, 2, 3))) == 6
    assert value(app("reduce", node(A.OpFunc, "max"), lit(0), arr(1, 7, 3))) == 7


def test_partial_application_of_builtins():
    add3 = app("map", node(A.RightSection, "+", lit(3)))
    result = value(node(A.Let, node(A.PVar, "f"), add3, app(var("f"), arr(1, 2))))
    assert result == [4, 5]
    assert isinstance(value(app("map2", node(A.OpFunc, "+"))), Partial)


def test_forms_bind_and_later_forms_see_them_without_mutating_globals():
    globals = {"k": np.int64(10)}
    d = node(A.Def, "addk", (node(A.PVar, "x"),), None, binop("+", var("x"), var("k")))
    g = node(A.GlobalLet, node(A.PTuple, (node(A.PVar, "a"), node(A.PVar, "b"))),
             node(A.TupleLit, (lit(1), lit(2))))
    out = run(d, g, app("addk", var("b")), globals=globals)
    assert out.results == [12]
    assert set(out.bindings) == {"addk", "a", "b"} and out.bindings["a"] == 1
    assert globals == {"k": np.int64(10)}


def test_defs_are_late_bound():
    f = node(A.Def, "f", (node(A.PVar, "x"),), None, app("g", var("x")))
    g1 = node(A.Def, "g", (node(A.PVar, "x"),), None, binop("+", var("x"), lit(1)))
    g2 = node(A.Def, "g", (node(A.PVar, "x"),), None, binop("*", var("x"), lit(10)))
    first = run(f, g1, app("f", lit(2)))
    assert first.results == [3]
    # A later cell redefines g; f (from the earlier cell) now uses it.
    later = run(g2, app("f", lit(2)), globals=first.bindings)
    assert later.results == [20]


def test_zero_parameter_def_is_a_constant_evaluated_on_use():
    c = node(A.Def, "c", (), None, app("iota", lit(3)))
    assert run(c, var("c")).results == [[0, 1, 2]]


def test_dictionary_passing_for_type_constants():
    # def mysum xs = reduce (+) zero xs ; def twice xs = mysum xs + mysum xs
    zero = var("zero")
    mysum = node(A.Def, "mysum", (node(A.PVar, "xs"),), None,
                 app("reduce", node(A.OpFunc, "+"), zero, var("xs")))
    inner1, inner2 = var("mysum"), var("mysum")
    twice = node(A.Def, "twice", (node(A.PVar, "xs"),), None,
                 binop("+", app(inner1, var("xs")), app(inner2, var("xs"))))
    use_f32, use_i32 = var("twice"), var("twice")
    types = {zero.id: T.TypeVar("a")}
    inst = {inner1.id: {"a": T.TypeVar("b")}, inner2.id: {"a": T.TypeVar("b")},
            use_f32.id: {"b": T.F32}, use_i32.id: {"b": T.I32}}
    empty = node(A.ArrayLit, ())
    out = run(mysum, twice, app(use_f32, empty), app(use_i32, empty), types=types, inst=inst)
    assert [type(v) for v in out.results] == [np.float32, np.int32]
    # Passing a generic def as a value keeps the substitution of that use.
    passed = var("mysum")
    inst[passed.id] = {"a": T.F64}
    rows = node(A.ArrayLit, (empty, empty))
    out = run(mysum, app("map", passed, rows), types=types, inst=inst)
    assert [type(v) for v in out.results[0]] == [np.float64, np.float64]


def test_call_infers_type_variables_from_arguments():
    zero, xs = var("zero"), node(A.PVar, "xs")
    mysum = node(A.Def, "mysum", (xs,), None, app("reduce", node(A.OpFunc, "+"), zero, var("xs")))
    types = {zero.id: T.TypeVar("a"), xs.id: T.Array(T.TypeVar("a"))}
    interp = Interpreter({}, types, {})
    fn = DefFunc(mysum, {})
    assert type(interp.call(fn, [[np.float32(1.5)]])) is np.float32
    assert type(interp.call(fn, [[]], {"a": T.I32})) is np.int32


def test_short_circuit_and_lazy_branches():
    bad = node(A.Index, arr(1), lit(5))
    assert value(binop("&&", lit(False, "bool"), binop("==", bad, lit(1)))) == np.bool_(False)
    assert value(binop("||", lit(True, "bool"), binop("==", bad, lit(1)))) == np.bool_(True)
    assert value(node(A.If, lit(True, "bool"), lit(1), bad)) == 1
    assert value(app("cond", lit(False, "bool"), bad, lit(2))) == 2


def test_index_error_has_the_index_span_and_message():
    with pytest.raises(AccelIndexError) as info:
        value(node(A.Index, arr(1, 2, 3), lit(5), at=(11, 15)))
    assert info.value.message == "index 5 out of bounds for array of length 3"
    assert info.value.location() == "cell[1]:2:1"


def test_division_by_zero_has_the_binop_span():
    with pytest.raises(DivisionByZero) as info:
        value(binop("/", lit(1), lit(0), at=(2, 7)))
    assert info.value.location() == "cell[1]:1:3"


def test_builtin_size_errors_get_the_saturating_apply_span():
    with pytest.raises(SizeError) as info:
        value(app("map2", node(A.OpFunc, "+"), arr(1, 2), arr(1, 2, 3), at=(1, 9)))
    assert "2 and 3" in info.value.message and info.value.location() == "cell[1]:1:2"
    partial = app("zip", arr(1))
    with pytest.raises(SizeError) as info:
        value(node(A.Let, node(A.PVar, "f"), partial, app(var("f"), arr(), at=(12, 14))))
    assert info.value.location() == "cell[1]:2:2"


def test_size_annotations_bind_and_check():
    n_ann = node(A.TArray, node(A.TScalar, "i64"), "n")
    xs = node(A.PVar, "xs", n_ann, at=(3, 5))
    ys = node(A.PVar, "ys", node(A.TArray, node(A.TScalar, "i64"), "n"), at=(6, 8))
    d = node(A.Def, "f", (xs, ys), None, var("n"))
    assert run(d, app("f", arr(1, 2), arr(3, 4))).results == [2]
    with pytest.raises(SizeError) as info:
        run(d, app("f", arr(1, 2), arr(3, 4, 5)))
    assert info.value.message == "expected 2 elements for size n, got 3"
    assert info.value.location() == "cell[1]:1:7"
    matrix = node(A.TArray, node(A.TArray, node(A.TScalar, "i64"), "m"), "n")
    g = node(A.Def, "g", (node(A.PVar, "xss", matrix),), None, var("m"))
    assert run(g, app("g", arr(arr(1, 2), arr(3, 4)))).results == [2]
    with pytest.raises(SizeError):
        run(g, app("g", arr(arr(1, 2), arr(3))))


def test_update_copies_and_checks():
    xs = node(A.Let, node(A.PVar, "xs"), arr(arr(1, 2), arr(3)),
              node(A.TupleLit, (node(A.Update, var("xs"), (lit(0), lit(1)), lit(9)), var("xs"))))
    assert value(xs) == ([[1, 9], [3]], [[1, 2], [3]])
    with pytest.raises(AccelIndexError):
        value(node(A.Update, arr(1), (lit(1),), lit(9)))


def test_loops():
    acc = node(A.PVar, "acc")
    for_range = node(A.Loop, acc, lit(0), node(A.ForRange, "i", lit(5)),
                     binop("+", var("acc"), var("i")))
    assert value(for_range) == 10
    for_in = node(A.Loop, acc, lit(1), node(A.ForIn, node(A.PVar, "x"), arr(2, 3, 4)),
                  binop("*", var("acc"), var("x")))
    assert value(for_in) == 24
    while_loop = node(A.Loop, acc, lit(1), node(A.While, binop("<", var("acc"), lit(100))),
                      binop("*", var("acc"), lit(3)))
    assert value(while_loop) == 243


def test_comprehension_dependent_guarded_and_zipped():
    gen = lambda name, src: node(A.Generator, node(A.PVar, name), src)
    comp = node(A.Comprehension, node(A.TupleLit, (var("x"), var("y"))),
                ((gen("x", arr(1, 2, 3)), gen("y", app("iota", var("x"))),
                  node(A.Guard, binop("!=", var("y"), lit(1)))),))
    assert value(comp) == [(1, 0), (2, 0), (3, 0), (3, 2)]
    zipped = node(A.Comprehension, binop("+", var("a"), var("b")),
                  ((gen("a", arr(1, 2)),), (gen("b", arr(10, 20)),)))
    assert value(zipped) == [11, 22]
    uneven = node(A.Comprehension, var("a"), ((gen("a", arr(1, 2)),), (gen("b", arr(1)),)))
    with pytest.raises(SizeError):
        value(uneven)


def test_unknown_name():
    with pytest.raises(AccelNameError):
        value(var("nope"))


def test_sequences():
    seq = app("produce", lit(3), lam(["i"], app("iota", var("i"))))
    assert isinstance(value(seq), Sequence)
    assert value(app("elements", seq)) == [0, 0, 1]
    assert value(app("tabulate", seq)) == [[], [0], [0, 1]]
    folded = app("foldSeq", node(A.OpFunc, "+"), lit(0),
                 app("mapSeq", var("length"), seq))
    assert value(folded) == 3


def test_cancellation_raises_interrupted():
    token = CancelToken()
    token.set()
    with pytest.raises(Interrupted):
        value(app("map", lam(["x"], var("x")), app("iota", lit(10))), cancel=token)
    token.clear()
    assert value(app("iota", lit(2)), cancel=token) == [0, 1]


def test_interp_imports_neither_numba_nor_jupyter():
    import subprocess
    import sys
    code = ("import sys, accel_kernel.backends.interp, accel_kernel.values; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('numba', 'ipykernel', 'ipywidgets', 'awkward')]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_every_builtin_name_is_implemented():
    builtins = pytest.importorskip("accel_kernel.lang.builtins")
    from accel_kernel.backends.interp import ALL_NAMES
    assert set(builtins.BUILTINS) == set(ALL_NAMES)
