"""Scalar code of the `cpu` back end (`backends/cpu/scalar_source.py`) against the numpy
target's evaluator (`backends/numpy/scalar_code.py`), element by element, errors included.

Two corpora: the scalar functions of the flat programs of `tests/programs/*.accel` (every
`Map`, `Scalar`, `Reduce` and `Scan` function, deduplicated up to renaming) and hand-written
tricky lambdas (wrap-around, C division, powers, shifts, short circuits, loops, tuples, free
arrays, sections). Each corpus is one module compiled with numba once; every function runs
lane by lane on edge values and random ones. `for x in xs` (which the numpy target does not
run in scalar code) is compared with the interpreter instead.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accel_kernel.backends.cpu.errors import ERR_LENGTH, ErrorTable
from accel_kernel.backends.cpu.scalar_source import free_parameters, scalar_function
from accel_kernel.backends.interp.evaluator import Interpreter
from accel_kernel.backends.numpy.scalar_code import LaneEvaluator
from accel_kernel.backends.numpy.values import Segs
from accel_kernel.ir import flat as F
from accel_kernel.lang import ast
from accel_kernel.lang import scalar_ops as table
from accel_kernel.lang.errors import AccelError, AccelIndexError, DivisionByZero, SizeError
from accel_kernel.lang.printer import print_expr, print_pattern
from accel_kernel.lang.source import Span
from accel_kernel.session import Session

from .test_numpy_build import at, fn, src

numba = pytest.importorskip("numba")

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
NUMPY_TYPES = table.DTYPES
EDGES = {
    "bool": [False, True],
    "i64": [0, 1, -1, 2, -2, 3, -7, 7, 10, 63, 64, -64, 2 ** 62, -2 ** 63, 2 ** 63 - 1],
    "i32": [0, 1, -1, 2, -3, 7, 10, 31, 32, -2 ** 31, 2 ** 31 - 1],
    "f64": [0.0, -0.0, 1.5, -2.5, 0.5, 3.0, 2.5, -0.5, math.inf, -math.inf, math.nan, 1e300,
            1e20, -3e19, 0.1, 1e-310],
}
EDGES["f32"] = EDGES["f64"]
for _t in ("i8", "i16", *table.UNSIGNED):       # 0, 1, the ends of the range and the width
    _low, _high = table.int_range(_t)
    EDGES[_t] = sorted({0, 1, 2, 7, table.BITS[_t] - 1, table.BITS[_t], _low, _high,
                        _high // 2, _high // 2 + 1} | ({-1, -7} if _low < 0 else set()))
LANES = 40
TRANSCENDENTAL = {"exp", "log", "sin", "cos", "tan", "atan2"}


@dataclass
class Case:
    fn: F.ScalarFn
    arg_types: list
    free: dict[str, F.Rep] = field(default_factory=dict)
    free_values: dict[str, Any] = field(default_factory=dict)
    oracle: str = "numpy"                 # or "interp" (for `for x in xs`)
    ints: tuple[int, int] = (-8, 9)       # the range of the random integers
    edges: int = LANES // 2               # how many lanes take edge values

    @property
    def ulps(self) -> int:
        """How far floats may be apart: numpy computes `**`, `exp`, `sin`... with its own
        SIMD code (SVML), numba calls libm; both are within an ulp or two of the exact
        value. Everything else must agree bit for bit."""
        for node in ast.walk(self.fn.body):
            if (isinstance(node, ast.Var) and node.name in TRANSCENDENTAL
                    or isinstance(node, ast.BinOp) and node.op == "**"):
                return 4
        return 0

    def label(self) -> str:
        params = " ".join(print_pattern(p) for p in self.fn.params)
        return f"\\{params} -> {print_expr(self.fn.body)} on {self.arg_types}"


# ---------------------------------------------------------------- inputs


def column(t, n: int, rng: np.random.Generator, ints: tuple[int, int] = (-8, 9),
           edge_count: int = LANES // 2) -> Any:
    """n values of scalar type `t` (a tuple type gives a tuple of columns): up to
    `edge_count` edge values and random ones, shuffled."""
    if isinstance(t, tuple):
        return tuple(column(p, n, rng, ints, edge_count) for p in t)
    edges = list(EDGES[t])
    edges = [edges[k] for k in rng.permutation(len(edges))][:min(n // 2, edge_count)]
    k = n - len(edges)
    if t == "bool":
        rest = list(rng.integers(0, 2, k).astype(bool))
    elif t in table.INTS:
        low, high = table.int_range(t)
        rest = list(rng.integers(max(ints[0], low), min(ints[1], high + 1), k))
    else:
        rest = list(np.round(rng.normal(0, 10, k), 2))
    values = edges + rest
    with np.errstate(over="ignore"):        # 1e300 as f32 is inf
        return np.array([values[j] for j in rng.permutation(n)], dtype=NUMPY_TYPES[t])


def lane(value: Any, k: int) -> Any:
    if isinstance(value, tuple):
        return tuple(lane(v, k) for v in value)
    return value[k]


def lanes_of(value: Any, idx: list[int]) -> Any:
    if isinstance(value, tuple):
        return tuple(lanes_of(v, idx) for v in value)
    return value[idx]


def free_arguments(case: Case) -> list:
    """The free parameters' values, as `free_parameters` says to pass them."""
    out = []
    for param in free_parameters(case.free):
        value = case.free_values[param.var]
        for step in param.path:
            value = value[step] if isinstance(step, int) else getattr(value, step)
        out.append(value)
    return out


# ---------------------------------------------------------------- running both sides


def compile_cases(cases: list[Case]) -> tuple[list, list, ErrorTable, str]:
    """One module with a numba function per case, as the cpu back end will write them."""
    errors = ErrorTable()
    sources, types = [], []
    for k, case in enumerate(cases):
        source, result_type = scalar_function(case.fn, f"f_{k}", case.arg_types, case.free,
                                              errors)
        sources.append("@njit(cache=False)\n" + source)
        types.append(result_type)
    text = ("import numpy as np\nfrom numba import njit\n"
            "from accel_kernel.backends.cpu.stop_flag import stop_asked\n"
            "from accel_kernel.backends.cpu.int_division import trunc_div, trunc_rem\n"
            "from accel_kernel.backends.cpu.unchecked import load\n\n\n"
            + "\n\n".join(sources))
    namespace: dict = {}
    exec(compile(text, "<cpu scalar functions>", "exec"), namespace)
    return [namespace[f"f_{k}"] for k in range(len(cases))], types, errors, text


def run_compiled(f, args: list, free_args: list, errors: ErrorTable) -> Any:
    err = np.zeros(ERR_LENGTH, dtype=np.int64)
    value = f(*args, *free_args, err)
    error = errors.error(err)
    return error if error is not None else value


def run_numpy(case: Case, columns: list, n: int) -> list:
    """The numpy target's value (or error) for every lane: all lanes at once, and lane by
    lane when some lane fails (the batch reports only one error)."""
    def evaluate(cols, m):
        with np.errstate(all="ignore"):
            return LaneEvaluator(case.free_values).apply(case.fn, list(cols), m)
    try:
        out = evaluate(columns, n)
        return [lane(out, k) for k in range(n)]
    except AccelError:
        results = []
        for k in range(n):
            try:
                results.append(lane(evaluate([lanes_of(c, [k]) for c in columns], 1), 0))
            except AccelError as error:
                results.append(error)
        return results


def run_interp(case: Case, args: list) -> Any:
    """The interpreter's value for one lane (free arrays as lists, as the interpreter has
    them); simple parameter patterns only."""
    env = {name: (value.tolist() if isinstance(value, np.ndarray) else value)
           for name, value in case.free_values.items()}
    env = {name: ([NUMPY_TYPES[case.free[name].elem](x) for x in value]
                  if isinstance(value, list) else value) for name, value in env.items()}
    env.update({p.name: a for p, a in zip(case.fn.params, args)})
    try:
        with np.errstate(all="ignore"):
            return Interpreter({}, {}, {}).eval(case.fn.body, env, {})
    except AccelError as error:
        return error


def same(expected: Any, got: Any, t, ulps: int = 0) -> bool:
    if isinstance(t, tuple):
        return (isinstance(got, tuple) and len(got) == len(t)
                and all(same(e, g, p, ulps) for e, g, p in zip(expected, got, t)))
    if t in ("f32", "f64"):
        a = np.asarray(expected, dtype=NUMPY_TYPES[t])
        b = np.asarray(got, dtype=NUMPY_TYPES[t])
        if bool(np.isnan(a) and np.isnan(b)) or a.tobytes() == b.tobytes():
            return True
        return bool(np.isfinite(a) and np.isfinite(b)
                    and abs(a - b) <= ulps * np.spacing(max(abs(a), abs(b))))
    return type(got) is (bool if t == "bool" else int) and got == expected


def numba_type_name(nb_type) -> Any:
    if isinstance(nb_type, numba.types.BaseTuple):
        return tuple(numba_type_name(t) for t in nb_type.types)
    nb_type = numba.types.unliteral(nb_type)      # a constant result is typed Literal[...]
    return table.scalar_type(np.dtype(str(nb_type)))


def check_cases(cases: list[Case], seed: int) -> int:
    """Compiles the cases into one module and compares every lane; gives the lanes run."""
    functions, types, errors, text = compile_cases(cases)
    rng = np.random.default_rng(seed)
    failures, count = [], 0
    for case, f, t in zip(cases, functions, types):
        columns = [column(a, LANES, rng, case.ints, case.edges) for a in case.arg_types]
        free_args = free_arguments(case)
        got = [run_compiled(f, [lane(c, k) for c in columns], free_args, errors)
               for k in range(LANES)]
        if case.oracle == "numpy":
            expected = run_numpy(case, columns, LANES)
        else:
            expected = [run_interp(case, [lane(c, k) for c in columns]) for k in range(LANES)]
        returned = numba_type_name(f.nopython_signatures[0].return_type)
        if returned != t:
            failures.append(f"{case.label()}: numba returns {returned}, accel type {t}")
        for k, (e, g) in enumerate(zip(expected, got)):
            count += 1
            inputs = [lane(c, k) for c in columns]
            if isinstance(e, AccelError) or isinstance(g, AccelError):
                if not (isinstance(e, AccelError) and isinstance(g, AccelError)
                        and (e.kind, e.span, e.message) == (g.kind, g.span, g.message)):
                    failures.append(f"{case.label()} at {inputs}: expected {e!r}, got {g!r}")
            elif not same(e, g, t, case.ulps):
                failures.append(f"{case.label()} at {inputs}: expected {e!r}, got {g!r}")
    assert not failures, "\n".join(failures[:20])
    return count


# ---------------------------------------------------------------- the programs' functions


def _leaf_type(rep: F.Rep):
    if isinstance(rep, F.TupleRep):
        return tuple(_leaf_type(p) for p in rep.parts)
    if isinstance(rep, F.Segmented):
        return _leaf_type(rep.inner)
    return rep.elem


def _scalar_functions(block: F.Block):
    """(fn, argument types) of every scalar function a statement applies element by
    element."""
    for stmt in block.stmts:
        op = stmt.op
        if isinstance(op, F.Map):
            yield op.fn, [_leaf_type(a.rep) for a in op.args]
        elif isinstance(op, F.Scalar):
            yield op.fn, []
        elif isinstance(op, (F.Reduce, F.Scan)):
            yield op.op, [_leaf_type(op.arr.rep)] * 2
        elif isinstance(op, (F.SegReduce, F.SegScan)):
            yield op.op, [_leaf_type(op.values.rep)] * 2
        elif isinstance(op, F.If):
            yield from _scalar_functions(op.then)
            yield from _scalar_functions(op.else_)
        elif isinstance(op, F.Loop):
            yield from _scalar_functions(op.body)
            if op.cond is not None:
                yield from _scalar_functions(op.cond)


def _canonical(fn: F.ScalarFn, arg_types: list, free: dict) -> str:
    """The function's text with parameters and free variables renamed by position."""
    text = "\\" + " ".join(print_pattern(p) for p in fn.params) + " -> " + print_expr(fn.body)
    names = [n for p in fn.params for n in re.findall(r"\w+", print_pattern(p))] + list(free)
    for k, name in enumerate(dict.fromkeys(names)):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", f"#{k}", text)
    return f"{text} {arg_types} {list(free.values())}"


def _features(case: Case) -> set[str]:
    """What a case exercises: node kinds, operators, builtins, argument types."""
    out = {f"args {case.arg_types}", f"free {sorted(map(str, case.free.values()))}"}
    for node in ast.walk(case.fn.body):
        out.add(type(node).__name__)
        if isinstance(node, ast.BinOp):
            out.add(f"op {node.op} {case.arg_types}")
        elif isinstance(node, ast.Var):
            out.add(f"var {node.name}" if not node.name[-1].isdigit() else "var")
    return out


def covering(cases: list[Case], size: int) -> list[Case]:
    """A few cases that exercise everything the whole corpus does (greedy set cover), the
    rest spread over the corpus: numba compiles each function in ~0.1 s."""
    features = [_features(c) for c in cases]
    chosen: list[int] = []
    covered: set[str] = set()
    while len(chosen) < size:
        best = max(range(len(cases)), key=lambda k: len(features[k] - covered))
        if not features[best] - covered:
            break
        chosen.append(best)
        covered |= features[best]
    rest = [k for k in range(len(cases)) if k not in chosen]
    step = max(1, len(rest) // max(1, size - len(chosen)))
    chosen += rest[::step][:size - len(chosen)]
    return [cases[k] for k in sorted(chosen)]


def program_cases() -> list[Case]:
    rng = np.random.default_rng(7)
    seen, cases = set(), []
    for path in sorted(PROGRAMS.glob("*.accel")):
        try:
            stages = Session().program_stages(path.read_text(), path.name, stop_after="flatten")
        except AccelError:
            continue                    # the programs that test compile-time errors
        for form in stages[-1].program.forms:
            for f, arg_types in _scalar_functions(form.body):
                free = {v.name: v.rep for v in f.free}
                if not all(isinstance(r, F.ScalarRep) for r in free.values()):
                    continue
                if any(isinstance(n, ast.Loop) for n in ast.walk(f.body)):
                    continue    # random inputs need not end its loops (`while x != 1`):
                                # loops are checked on the programs' own inputs instead
                                # (tests/test_programs.py, tests/test_differential.py)
                key = _canonical(f, arg_types, free)
                if key in seen:
                    continue
                seen.add(key)
                values = {name: column(rep.elem, 1, rng)[0]
                          for name, rep in free.items()}
                cases.append(Case(f, arg_types, free, values))
    return cases


# all of them with ACCEL_CPU_SCALAR_CORPUS=all (about 250 functions, 25 s)
CORPUS_SIZE = os.environ.get("ACCEL_CPU_SCALAR_CORPUS", "36")


def test_the_programs_scalar_functions_agree_with_the_numpy_target():
    cases = program_cases()
    assert len(cases) >= 100
    if CORPUS_SIZE != "all":
        cases = covering(cases, int(CORPUS_SIZE))
    assert check_cases(cases, seed=1) == len(cases) * LANES


# ---------------------------------------------------------------- tricky lambdas

XS = np.array([3, -1, 4, 1, 5], dtype=np.int64)
FREE = {
    "xs": (F.Regular("i64", 1), XS),
    "fs": (F.Regular("f64", 1), np.array([0.5, -1.5, 2.25])),
    "xss": (F.Regular("i64", 2), np.arange(12, dtype=np.int64).reshape(3, 4)),
    "yss": (F.Segmented(F.Regular("i64", 1)),
            Segs(np.array([0, 2, 2, 5]), np.array([10, 20, 30, 40, 50]))),
    "zsss": (F.Segmented(F.Segmented(F.Regular("i64", 1))),
             Segs(np.array([0, 2, 4]),
                  Segs(np.array([0, 1, 3, 3, 5]), np.array([5, 6, 7, 8, 9])))),
    "ps": (F.TupleRep((F.Regular("i64", 1), F.Regular("f64", 1))),
           (np.array([1, 2, 3]), np.array([0.5, 1.5, 2.5]))),
    "m": (F.ScalarRep("i64"), np.int64(3)),
    "np": (F.ScalarRep("i32"), np.int32(-7)),      # a name generated code must not take
}
I64_2, I32_2, F64_2, F32_2 = ["i64", "i64"], ["i32", "i32"], ["f64", "f64"], ["f32", "f32"]

TRICKY = [
    # integers: wrap-around, C division, powers, shifts
    ("\\x y -> (x + y, x - y, x * y, -x, !x, abs x, x & y, x | y, x ^ y, min x y, max x y, "
     "x == y, x < y, x >= y)", I64_2),
    ("\\x y -> (x + y, x - y, x * y, -x, !x, abs x, x & y, x | y, x ^ y, min x y, max x y, "
     "x == y, x < y, x >= y)", I32_2),
    ("\\n -> (max 0 (n - 2), n + 1 > n, 0 - n < 0)", ["i64"]),
    ("\\x y -> (x / y, x % y)", I64_2),
    ("\\x y -> (x / y, x % y)", I32_2),
    ("\\x y -> x ** y", I64_2),
    ("\\x y -> x ** y", I32_2),
    ("\\x n -> (x << n, x >> n)", I64_2),
    ("\\x n -> (x << n, x >> n)", I32_2),
    ("\\x -> (x / 3, x % -4, x / -1, x % -1, x ** 2, x ** 3, x ** 0, x ** 5, x << 3, x << 64, "
     "x >> 70, x >> 1)", ["i64"]),
    ("\\x -> (x / 3i32, x % -4i32, x / -1i32, x ** 3i32, x << 31i32, x >> 40i32)", ["i32"]),
    ("\\x -> x ** -1 + x ** -2", ["i64"]),
    ("\\x -> x % 0", ["i64"]),
    ("\\x -> (10 /) x + (/ 0) x", ["i64"]),
    # short circuits guarding errors
    ("\\x y -> y != 0 && x / y > 1", I64_2),
    ("\\x y -> y == 0 || x % y == 0", I64_2),
    ("\\a b -> (a & b, a | b, a ^ b, !a, a == b, a != b, a < b, a && b, a || b)",
     ["bool", "bool"]),
    # floats
    ("\\x y -> (x + y, x - y, x * y, x / y, x % y, x ** y, -x, x == y, x < y)", F64_2),
    ("\\x y -> (x + y, x - y, x * y, x / y, x % y, x ** y, -x, x == y, x < y)", F32_2),
    ("\\x y -> (min x y, max x y, abs x, sqrt x, floor x, ceil x, round x)", F64_2),
    ("\\x y -> (min x y, max x y, abs x, sqrt x, floor x, ceil x, round x)", F32_2),
    ("\\x y -> (exp x, log x, sin x, cos x, tan x, atan2 x y, x * pi)", F64_2),
    ("\\x y -> (exp x, log x, sin x, cos x, tan x, atan2 x y)", F32_2),
    ("\\x -> (i32 x, i64 x, f32 x, f64 x)", ["f64"]),
    ("\\x -> (i32 x, i64 x, f32 x, f64 x)", ["f32"]),
    ("\\x -> (i32 x, i64 x, f32 x, f64 x)", ["i64"]),
    ("\\x -> (i32 x, i64 x, f32 x, f64 x)", ["i32"]),
    ("\\b -> (i32 b, i64 b, f32 b, f64 b)", ["bool"]),
    # loops
    ("\\n -> loop acc = 0 for i < n % 40 do acc + i * i", ["i64"]),
    ("\\n -> loop (a, b) = (0i32, 1i32) for i < n % 60 do (b, a + b)", ["i64"]),
    ("\\(n: i32) -> loop acc = 1i32 for i < n % 20i32 do acc * 3i32 + i", ["i32"]),
    ("\\n -> loop (x, k) = (abs (n % 1000) + 1, 0) while x != 1 do "
     "(if x % 2 == 0 then x / 2 else 3 * x + 1, k + 1)", ["i64"]),
    ("\\n d -> loop acc = 1 for i < n % 10 do acc + 100 / (d - i)", I64_2),
    ("\\n -> loop s = 0 for i < n % 8 do loop t = s for j < i do t + i * j", ["i64"]),
    ("\\x -> loop (a, b) = (x % 100, 0) while a > 0 && 100 / a > 1 do (a - 7, b + 1)",
     ["i64"]),
    ("\\n -> loop (x, y) = (1.0, 0.5) for i < n % 30 do (x * 1.1 + y, y / 3.0)", ["i64"]),
    # tuples, lets, ifs, constants
    ("\\(a, b) c -> (b, (a + c, a * c))", [("i64", "f64"), "i64"]),
    ("\\p -> let (q, (r, s)) = p in q * r + s", [("i64", ("i64", "i64"))]),
    ("\\x -> let (q, r) = (x / 3, x % 3) in q * 3 + r == x", ["i64"]),
    ("\\x -> let y = (if x > 0 then (let x = 1 in x) else x / 2) in x + y", ["i64"]),
    ("\\x -> if x > 0 then (x, 1.0) else if x < -5 then (0 - x, 2.0) else (x / 2, 0.5)",
     ["i64"]),
    ("\\c x y -> select c x (y + 1)", ["bool", "i64", "i64"]),
    ("\\x -> (x + (zero : i64), (highest : i32), (lowest : f64), (one : f32), "
     "(lowest : i64), (highest : f32))", ["i64"]),
    # functions after inlining
    ("\\x -> ((\\y -> y * 2) (x + 1), (+1) x, (2*) x, (/ 2) x, (-) x 1, (min) x 3, "
     "let f = \\a -> a * x in f 2 + f 3, let g = max x in g 4)", ["i64"]),
    ("(+)", I64_2),
    ("\\x -> \\y -> x - y", I64_2),
    # free variables and arrays
    ("\\i -> xs[i]", ["i64"]),
    ("\\i j -> xss[i][j] + m", I64_2),
    ("\\i j -> yss[i][j]", I64_2),
    ("\\i j k -> zsss[i][j][k]", ["i64", "i64", "i64"]),
    ("\\i -> (ps[i], length ps, length yss, length xs, i32 np)", ["i64"]),
    ("\\i -> i >= 0 && i < length xs && xs[i] > 2", ["i64"]),
    ("\\(i: i32) -> fs[i] * 2.0", ["i32"]),
]

INTERP_ONLY = [     # what the numpy target does not run in scalar code
    ("\\c x y -> select c (x, 1) (2, y)", ["bool", "i64", "i64"]),
    ("\\m -> loop acc = 0 for x in xs do acc + x * m", ["i64"]),
    ("\\m -> loop (lo, hi) = (m, m) for x in xs do (min lo x, max hi x)", ["i64"]),
]


def tricky_case(text: str, arg_types: list, oracle: str = "numpy") -> Case:
    names = [name for name in FREE if re.search(rf"(?<!\w){name}(?!\w)", text)]
    f = fn(text, *(F.FVar(name, FREE[name][0]) for name in names))
    indexing = "[" in text          # mostly indices in bounds, some just outside
    return Case(f, arg_types, {n: FREE[n][0] for n in names}, {n: FREE[n][1] for n in names},
                oracle, ints=(0, 3) if indexing else (-4, 9), edges=4 if indexing else 20)


def test_tricky_lambdas_agree_with_the_numpy_target_and_the_interpreter():
    cases = [tricky_case(text, types) for text, types in TRICKY]
    cases += [tricky_case(text, types, "interp") for text, types in INTERP_ONLY]
    assert check_cases(cases, seed=2) == len(cases) * LANES


# ---------------------------------------------------------------- the source text


def test_the_source_reads_like_the_lambda():
    """The loop polls the cancel flag before each block of 4096 iterations (`polling.py`)."""
    source = src("map (\\n -> loop acc = 0i32 for i < n do "
                 "if xs[i] > 0 then acc + i32 xs[i] else acc / 2i32) ns")
    xs = F.Regular("i64", 1)
    f = fn("\\n -> loop acc = 0i32 for i < n do "
           "if xs[i] > 0 then acc + i32 xs[i] else acc / 2i32", F.FVar("xs", xs), source=source)
    errors = ErrorTable()
    text, result_type = scalar_function(f, "f_1", ["i64"], {"xs": xs}, errors)
    assert result_type == "i32"
    assert text == '''\
def f_1(n, xs, err):
    # \\n -> loop acc = 0i32 for i < n do if xs[i] > 0 then acc + i32 xs[i] else acc / 2i32
    acc = np.int32(0)
    poll_block = 0
    poll_stop = n
    while not stop_asked(err):
        poll_end = min(poll_block + 4096, poll_stop)
        for i in range(poll_block, poll_end):
            if i < 0 or i >= xs.shape[0]:
                err[1] = i
                err[2] = xs.shape[0]
                err[0] = 1  # IndexError at cell:1:44
                return np.int32(0)
            if load(xs, i) > 0:
                if i < 0 or i >= xs.shape[0]:
                    err[1] = i
                    err[2] = xs.shape[0]
                    err[0] = 2  # IndexError at cell:1:69
                    return np.int32(0)
                acc_1 = np.int32(acc + np.int32(load(xs, i)))
            else:
                quotient = trunc_div(acc, np.int32(2))
                acc_1 = np.int32(quotient)
            acc = acc_1
        if poll_end >= poll_stop:
            break
        poll_block = poll_end
    return acc
'''
    second = source.text.index("xs[i] else")
    assert [(e.kind, e.span) for e in errors.sites] == [
        ("IndexError", at(source, "xs[i]")), ("IndexError", Span(source, second, second + 5))]


def test_names_are_fresh_and_never_shadow_what_generated_code_uses():
    f = fn("\\np err -> let np = np + err in let np = np * 2 in (\\min -> min + np) 1")
    text, _ = scalar_function(f, "g", ["i64", "i64"], {"range": F.ScalarRep("i64")},
                              ErrorTable())
    assert text.splitlines()[0] == "def g(np_, err_, range_, err):"
    # the scalar IR names a rebound `np` `np_1`, `np_2` (ir/scalar_lower.py)
    assert "np_1 = np.int64(np.uint64(np_) + np.uint64(err_))" in text
    assert "np_2 = np.int64(np.uint64(np_1) * np.uint64(2))" in text
    assert "return np.int64(np.uint64(1) + np.uint64(np_2))" in text


def test_free_parameters_split_tuples_and_segmented_arrays():
    free = {"yss": F.Segmented(F.Segmented(F.Regular("f64", 1))),
            "ps": F.TupleRep((F.Regular("i64", 1), F.ScalarRep("bool"))),
            "err": F.ScalarRep("i64")}
    params = free_parameters(free)
    assert [(p.name, p.var, p.path) for p in params] == [
        ("yss_offsets", "yss", ("offsets",)),
        ("yss_values_offsets", "yss", ("values", "offsets")),
        ("yss_values_values", "yss", ("values", "values")),
        ("ps_0", "ps", (0,)), ("ps_1", "ps", (1,)), ("err_", "err", ())]
    assert params[2].rep == F.Regular("f64", 1) and params[0].rep == F.OFFSETS


def test_the_error_table_gives_one_code_per_site_and_fills_in_the_message():
    source = src("xs[i] + 1 / y")
    errors = ErrorTable()
    index = errors.code("IndexError", "index {0} out of bounds for array of length {1}",
                        at(source, "xs[i]"))
    division = errors.code("DivisionByZero", "integer division by zero", at(source, "1 / y"))
    assert (index, division) == (1, 2)
    assert errors.code("DivisionByZero", "integer division by zero", at(source, "1 / y")) == 2
    assert errors.error(np.array([0, 0, 0])) is None
    error = errors.error(np.array([1, 7, 3]))
    assert isinstance(error, AccelIndexError) and error.span == at(source, "xs[i]")
    assert error.message == "index 7 out of bounds for array of length 3"
    with pytest.raises(DivisionByZero):
        errors.raise_if_failed(np.array([2, 0, 0]))
    shift = errors.code("SizeError", "negative shift amount {0}", None)
    assert isinstance(errors.error(np.array([shift, -2, 0])), SizeError)


@pytest.mark.parametrize("text, arg_types, what", [
    ("\\i -> yss[i]", ["i64"], "a row of an irregular array"),
    ("\\i -> xss[i]", ["i64"], "a row of a rank-2 array"),
    ("\\c x -> (if c then (+) else (-)) x 1", ["bool", "i64"], "an `if` that chooses a function"),
    ("\\x -> loop n = 0 for row in xss do n + 1", ["i64"], "`for x in xs` over anything"),
    ("\\x -> loop f = (+ 1) for i < 3 do f", ["i64"], "a loop whose state holds a function"),
    ("\\x -> length [x, x]", ["i64"], "`ArrayLit`"),
    ("\\x -> (+ 1)", ["i64"], "a result that is a function"),
])
def test_what_is_not_built_says_so(text, arg_types, what):
    f = fn(text)
    free = {"xss": F.Regular("i64", 2), "yss": F.Segmented(F.Regular("i64", 1))}
    with pytest.raises(NotImplementedError, match=re.escape(f"cpu: {what}")):
        scalar_function(f, "f", arg_types, free, ErrorTable())


def test_ill_typed_functions_are_compiler_bugs():
    with pytest.raises(ValueError, match="`y` is not bound"):
        scalar_function(fn("\\x -> x + y"), "f", ["i64"], {}, ErrorTable())
    with pytest.raises(ValueError, match="must come resolved"):
        scalar_function(fn("\\x -> x + zero"), "f", ["i64"], {}, ErrorTable())
    with pytest.raises(ValueError, match="types must agree"):
        scalar_function(fn("\\x -> x + 1"), "f", ["i32"], {}, ErrorTable())
