"""Facts checked on data: the checking mode of `interp` (`Session(check_facts=True)`,
`accel run --check-facts`).

The `shape` and `regularity` stages describe the *core* program (the program after `desugar`,
which is what `flatten` reads), one fact per node id; the interpreter normally runs the parsed
program, whose nodes are others. So the checker runs the core program itself: the
`regularity` stage's program with that stage's types, on `FactChecker`, an `Interpreter` that
compares the facts of every node (expressions, and the patterns of `let`s and lambdas) with
each value the node takes. The core program means what the parsed one means (desugar keeps
meaning), so the values are those of an ordinary run. A fact that does not hold raises
`InternalError("regularity", ...)` naming the node (its text, id and span), the rule that
gave the fact, and the values:

- NEST: a node whose nest says `R` at depth d (`R>R>S`: d = 1) has rows of one length at that
  depth (every array d levels down has the same length); tuples componentwise (an array of
  tuples is a tuple of arrays).
- INDEPENDENT at level k (`∞`: every level): every point of the maps above level k gives the
  same *shape-relevant content*: the shape of an array (all its lengths, nested) and the value
  of a scalar (it may become a size or a condition). This is what `flatten` relies on: it
  stacks the per-point arrays of a node whose shape is independent as one regular block, and
  sizes or conditions computed once for all points. (The data of an independent array may
  differ: `map (\\x -> map (+x) ys) xs` gives rows of one shape and different values.)
- SHAPE: the node's shape descriptor, evaluated on the data where its sizes are known
  (literals, parameters and globals, the indices of the enclosing maps, `length`, value
  reads, operators; not labels and unknowns), gives the value's lengths.

Points. A map-like builtin (`map`, `map2`, `map3`, `generate`, the predicates of `filter` and
`partition`, `expand`'s two functions, `sort_by`'s key, `produce`, `mapSeq`, `zipWithSeq`:
what the `shape` stage analyses one level deeper) calls its function once per point; the
checker keeps the path of points being evaluated: per level, (which map call under the
enclosing point, which element). The level-k index variable of a fact is element k of the
path. Two evaluations of a node are compared when their paths agree except at the levels above
k and they are the same (n-th) evaluation of the node at their point, within the same (n-th)
call of each lambda being evaluated (so the n-th iteration
of a loop at one point is compared with the n-th at another). A `def` that `desugar` did not
inline starts its own path (its facts are those of its own form); a lambda run outside the
def it was made in is checked for nests only.
"""
from __future__ import annotations

import itertools
import weakref
from collections import ChainMap
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ...lang import ast
from ...lang.errors import AccelError, InternalError
from ...passes.base import show_node
from ...passes.regularity import Nest, Regularity, rule_for
from ...passes.shape_terms import (Cond, Const, Function, Generate, Index, IndexVar, Label,
                                   Length, Project, Read, Scalar, SizeLit, SizeOp, SizeVar,
                                   TupleShape, Unknown, Var)
from ...values import format_value
from . import scalars
from .evaluator import Interpreter
from .library import CONSTANTS, LIBRARY
from .model import BuiltinFunc, Closure, DefFunc, Sequence, Stored, is_function
from .patterns import bind, bind_sizes

# map-like builtins: the positions of the functions they apply once per point
POINTWISE = {"map": (0,), "map2": (0,), "map3": (0,), "generate": (1,), "filter": (0,),
             "partition": (0,), "expand": (0, 1), "sort_by": (0,), "produce": (1,),
             "mapSeq": (0,), "zipWithSeq": (0,)}

_UNKNOWN = object()       # a size or shape the descriptor does not determine
_LIMIT = 10_000_000       # larger extents are not built to be compared
_KEYS = 200_000           # independence: at most this many kept values to compare with
_MEMO = 1 << 16           # values whose nest or signature is remembered (by identity)
_BIG = 32                 # ... when they have at least this many elements


def check_facts(stages: list, globals: Mapping[str, Any], types: Mapping, instantiations: Mapping,
                cancel=None) -> None:
    """Run the `regularity` stage's program of `stages` on the checking interpreter, with the
    session's `globals` (and the types of their definitions). Raises InternalError at the
    first violated fact; an error of the program itself ends the check silently (the cell's
    own run reports it)."""
    stage = next((s for s in stages if s.name == "regularity"), None)
    if stage is None:
        return
    shape_stage = next((s for s in stages if s.name == "shape"), None)
    checker = FactChecker(stage, shape_stage, globals, ChainMap(stage.types, types),
                          ChainMap(stage.instantiations, instantiations), cancel)
    try:
        checker.run_forms(stage.program.forms)
    except InternalError:
        raise
    except AccelError:
        pass


@dataclass(eq=False)
class _Frame:
    """A stretch of evaluation whose facts share one numbering of levels: the top level, or
    a call of a `def` (its levels start at `base`, the path's length at the call)."""
    base: int
    tracked: bool = True              # False: a lambda run outside the frame it was made in
    root: Mapping[str, Any] | None = None   # the def's parameters (its sizes' names)
    body: ast.Expr | None = None      # the def's body: its first evaluation gives `root`


@dataclass(frozen=True, eq=False)
class _Point(BuiltinFunc):
    """The function of a map-like builtin: each call is one point (`serial`: which map call
    under the enclosing point; `counter`: the element)."""
    target: Any = None
    serial: int = 0
    counter: Any = None


class FactChecker(Interpreter):
    def __init__(self, stage, shape_stage, globals, types, instantiations, cancel=None):
        super().__init__(globals, types, instantiations, cancel=cancel)
        self.shapes = stage.facts.get("shape", {})
        self.regs: Mapping[int, Regularity] = stage.facts.get("regularity", {})
        self.deps = getattr(self.shapes, "deps", {})
        self.let_bound = {p.id for form in stage.program.forms for node in ast.walk(form)
                          if isinstance(node, (ast.Let, ast.GlobalLet))
                          for p in ast.walk(node.pattern)}
        self.shape_rules: dict[int, list[str]] = {}
        for step in (shape_stage.steps if shape_stage is not None else ()):
            rules = self.shape_rules.setdefault(step.node, [])
            if step.rule not in rules:
                rules.append(step.rule)
        self.path: list[tuple[int, int]] = []
        self.counts: list[dict] = [{}]        # per point being evaluated: its evaluations
        self.calls: list[tuple[int, int]] = []   # the calls of lambdas being evaluated
        self.frames = [_Frame(0, root={})]
        self.seen: dict[Any, tuple[Any, tuple, Any]] = {}
        self.made_in: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.wrapped: dict[str, BuiltinFunc] = {}
        self.memo: dict[tuple, Any] = {}          # (what, id(value)) -> (value, result)
        self.plans: dict[int, tuple] = {}

    # ------------------------------------------------------------------ evaluation hooks

    def eval(self, node: ast.Expr, env, ts):
        frame = self.frames[-1]
        if frame.root is None and node is frame.body:
            frame.root = env
        value = super().eval(node, env, ts)
        if node.id in self.regs:
            self.check(node, value)
        return value

    def _let(self, node: ast.Let, env, ts):
        value = self.eval(node.value, env, ts)
        sizes: dict[str, int] = {}
        scope = bind(node.pattern, value, env, sizes)
        self.check_pattern(node.pattern, value)
        return self.eval(node.body, bind_sizes(scope, sizes), ts)

    def _lambda(self, node: ast.Lambda, env, ts):
        closure = super()._lambda(node, env, ts)
        self.made_in[closure] = self.frames[-1]
        return closure

    def _builtin(self, name: str, node: ast.Node, ts):
        value = super()._builtin(name, node, ts)
        if name in POINTWISE and isinstance(value, BuiltinFunc):
            if name not in self.wrapped:
                self.wrapped[name] = BuiltinFunc(name, value.arity,
                                                 self._pointwise(value, POINTWISE[name]))
            return self.wrapped[name]
        return value

    def _pointwise(self, builtin: BuiltinFunc, positions: tuple[int, ...]):
        def impl(it, *args):
            args = list(args)
            for k in positions:
                f = args[k]
                serial = self.count("map")
                args[k] = _Point("point", f.arity, None, f, serial, itertools.count())
            return builtin.impl(it, *args)
        return impl

    def _invoke(self, fn, args):
        if isinstance(fn, _Point):
            self.path.append((fn.serial, next(fn.counter)))
            self.counts.append({})
            try:
                return self.apply(fn.target, list(args))
            finally:
                self.path.pop()
                self.counts.pop()
        if isinstance(fn, DefFunc):
            return self._in_frame(_Frame(len(self.path), body=fn.defn.body),
                                  lambda: super(FactChecker, self)._invoke(fn, args))
        if isinstance(fn, Closure):
            if self.made_in.get(fn) is self.frames[-1]:
                return self._closure(fn, args)
            return self._in_frame(_Frame(len(self.path), tracked=False),
                                  lambda: self._closure(fn, args))
        return super()._invoke(fn, args)

    def _closure(self, fn: Closure, args):
        # the n-th call of this lambda at the point: evaluations inside it are compared with
        # those of the n-th call at other points (a local function called at several places
        # with different arguments, some of its nodes evaluated only for some of them)
        call = (fn.body.id, self.count(("call", fn.body.id, tuple(self.calls))))
        self.calls.append(call)
        try:
            result = super()._invoke(fn, args)
        finally:
            self.calls.pop()
        for param, arg in zip(fn.params, args):
            if param.id in self.regs:
                self.check_pattern(param, arg)
        return result

    def _def_constant(self, fn: DefFunc):
        return self._in_frame(_Frame(len(self.path), root={}),
                              lambda: super(FactChecker, self)._def_constant(fn))

    def _in_frame(self, frame: _Frame, run):
        self.frames.append(frame)
        try:
            return run()
        finally:
            self.frames.pop()

    def count(self, key) -> int:
        """How many times `key` (a node id, or "map" for map calls) came before at the point
        being evaluated."""
        counts = self.counts[-1]
        n = counts.get(key, 0)
        counts[key] = n + 1
        return n

    # ------------------------------------------------------------------ the checks

    def check_pattern(self, pattern: ast.Pattern, value) -> None:
        if pattern.id in self.regs and not isinstance(pattern, ast.PWild):
            self.check(pattern, value)
        if isinstance(pattern, ast.PTuple) and isinstance(value, tuple):
            for sub, part in zip(pattern.elems, value):
                self.check_pattern(sub, part)

    def check(self, node: ast.Node, value) -> None:
        plan = self.plans.get(node.id)
        if plan is None:
            plan = self.plans[node.id] = self._plan(node)
        reg, tree, shape, nested, described = plan
        if reg is None:
            return                                  # a function: nothing to check
        if (nested or described) and isinstance(value, (list, tuple, Sequence)):
            problem = self._nest_problem(value, tree) if nested else None
            if problem is not None:
                self.fail(node, f"its regularity {reg} says {problem}", value)
            problem = self._shape_problem(shape, value) if described else None
            if problem is not None:
                rules = ", ".join(self.shape_rules.get(node.id, [])) or "VAR"
                self.fail(node, f"its shape `{shape}` (shape rules {rules}) says {problem}",
                          value, rule=False)
        if reg.level != 0 and len(self.path) > self.frames[-1].base:
            self._independence(node, value, reg)

    def _plan(self, node: ast.Node) -> tuple:
        """What to check of a node: (its triple, nest, shape, whether the nest says `R` below
        the outermost dimension, whether the shape says any length)."""
        reg, shape = self.regs[node.id], self.shapes.get(node.id)
        if isinstance(shape, Function) or isinstance(node, ast.Lit):    # literals are constants
            return (None, None, None, False, False)
        tree = reg.tree
        nested = tree.parts is not None or any(tree.dims[1:])
        described = shape is not None and not isinstance(shape, (Label, Scalar))
        return (reg, tree, shape, nested, described)

    def fail(self, node: ast.Node, problem: str, value, rule: bool = True,
             other: str = "") -> None:
        text = show_node(node)
        if len(text) > 120:
            text = text[:117] + "..."
        where = node.span.location() if node.span is not None else "?"
        made_by = ""
        if rule:
            shape = self.shapes.get(node.id)
            name = rule_for(node, shape, node.id in self.let_bound, self.deps.get(node.id))[0] \
                if shape is not None else "?"
            made_by = f" (rule {name})"
        raise InternalError("regularity", (
            f"a fact of `{text}` (node {node.id} at {where}) is wrong: {problem}{made_by}; "
            f"the value{self._point()} is {_show(value)}{other}"), node.span)

    def _point(self) -> str:
        frame = self.frames[-1]
        inner = [k for _, k in self.path[frame.base:]]
        return f" at map point {inner}" if inner else ""

    # NEST
    def _nest_problem(self, value, nest: Nest) -> str | None:
        return self._remembered(("nest", str(nest)), value, lambda: _nest_problem(value, nest))

    def _remembered(self, what, value, compute):
        """`compute()`, remembered for a large value (a global read at every point)."""
        if not (_is_array(value) and len(value) >= _BIG):
            return compute()
        key = (what, id(value))
        cached = self.memo.get(key)
        if cached is not None and cached[0] is value:
            return cached[1]
        if len(self.memo) >= _MEMO:
            self.memo.clear()
        result = compute()
        self.memo[key] = (value, result)
        return result

    # SHAPE
    def _shape_problem(self, shape, value) -> str | None:
        frame = self.frames[-1]
        expected = _Descriptor(self, frame).shape(shape, {})
        return _match(expected, value, [])

    # INDEPENDENT
    def _independence(self, node: ast.Node, value, reg: Regularity) -> None:
        frame = self.frames[-1]
        if not frame.tracked:
            return
        inner = self.path[frame.base:]
        above = len(inner) if reg.level is None else min(reg.level, len(inner))
        if above == 0:
            return
        calls = tuple(self.calls)
        occurrence = self.count((node.id, calls))
        masked = (tuple(self.path[:frame.base]) + tuple((s, None) for s, _ in inner[:above])
                  + tuple(inner[above:]))
        key = (node.id, masked, calls, occurrence)
        sig = self._signature(value)
        seen = self.seen.get(key)
        if seen is None:
            if len(self.seen) < _KEYS:
                self.seen[key] = (sig, tuple(k for _, k in inner), value)
        elif seen[0] != sig:
            maps = "the enclosing maps" if reg.level is None else \
                f"the maps above level {reg.level}"
            what = "value" if not _has_array(value) else "shape"
            self.fail(node, f"its regularity {reg} says every point of {maps} gives the same "
                      f"{what}", value,
                      other=f", at map point {list(seen[1])} it is {_show(seen[2])}")

    def _signature(self, value):
        return self._remembered("sig", value, lambda: _signature(value))


# ---------------------------------------------------------------- values

def _is_array(v) -> bool:
    return isinstance(v, (list, Sequence, _Lazy))


def _has_array(v) -> bool:
    if _is_array(v):
        return True
    return isinstance(v, tuple) and any(_has_array(x) for x in v)


def _component(v, k: int):
    """Component `k` of a tuple, or of every tuple of an array of tuples."""
    if isinstance(v, tuple):
        return v[k] if k < len(v) else _UNKNOWN
    if _is_array(v):
        return [_component(x, k) for x in v]
    return _UNKNOWN


def _nest_problem(value, nest: Nest) -> str | None:
    if nest.parts is not None:
        for k, part in enumerate(nest.parts):
            problem = _nest_problem(_component(value, k), part)
            if problem is not None:
                return f"(component {k}) {problem}"
        return None
    level = [value]
    for depth, regular in enumerate(nest.dims):
        if not level or not all(_is_array(a) for a in level):
            return None
        if regular and depth > 0:
            lengths = sorted({len(a) for a in level})
            if len(lengths) > 1:
                shown = ", ".join(map(str, lengths[:6])) + (", ..." if len(lengths) > 6 else "")
                return (f"the arrays {depth} level{'s' if depth > 1 else ''} down have one "
                        f"length (`R` at depth {depth}); they have lengths {shown}")
        if not any(nest.dims[depth + 1:]):
            return None
        level = [x for a in level for x in a]
    return None


def _signature(v):
    """What must be the same at every point for an independent node: a scalar's value, an
    array's shape (all its lengths)."""
    if _is_array(v):
        return ("[]", len(v), _shape_signature(v))
    if isinstance(v, tuple):
        return tuple(_signature(x) for x in v)
    if is_function(v):
        return "fn"
    if isinstance(v, np.floating) and np.isnan(v):
        return ("nan",)
    return (type(v).__name__, v.item() if hasattr(v, "item") else v)


def _shape_signature(v):
    if _is_array(v):
        inner = [_shape_signature(x) for x in v]
        return (len(v), tuple(inner)) if any(x is not None for x in inner) else (len(v),)
    if isinstance(v, tuple):
        parts = tuple(_shape_signature(x) for x in v)
        return parts if any(x is not None for x in parts) else None
    return None


def _show(v) -> str:
    try:
        text = format_value(v, None, max_elems=6)
    except Exception:                       # a value the printer does not know (a function)
        text = repr(v)
    return text if len(text) <= 200 else text[:197] + "..."


# ---------------------------------------------------------------- shape descriptors on data

class _Lazy:
    """The array a `generate` descriptor describes, element by element on demand (`element`
    None: elements without arrays, nothing to compare)."""

    def __init__(self, n: int, element):
        self.n, self.element = n, element

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int):
        return self.element(k) if self.element is not None else _UNKNOWN


def _match(expected, value, where: list) -> str | None:
    """Where the lengths `expected` (a descriptor evaluated on data) and `value` differ."""
    if expected is _UNKNOWN or expected is value:
        return None
    if _is_array(expected):
        if not _is_array(value):
            return None
        if len(expected) != len(value):
            at = "".join(f"[{k}]" for k in where)
            return (f"length {len(expected)}" + (f" at {at}" if at else "") +
                    f", the value has length {len(value)}")
        if isinstance(expected, _Lazy) and expected.element is None:
            return None                     # elements not described (scalars)
        for k in range(len(value)):
            problem = _match(expected[k], value[k], where + [k])
            if problem is not None:
                return problem
        return None
    if isinstance(expected, tuple):
        for k, part in enumerate(expected):
            problem = _match(part, _component(value, k), where)
            if problem is not None:
                return f"(component {k}) {problem}"
    return None


class _Descriptor:
    """Evaluates shape descriptors and size terms on the data of one point: an array-like of
    the described lengths (elements `_UNKNOWN` where not known), or `_UNKNOWN`."""

    def __init__(self, checker: FactChecker, frame: _Frame):
        self.checker, self.frame = checker, frame

    def lookup(self, name: str):
        root = self.frame.root or {}
        if name in root:
            return root[name]
        value = self.checker.globals.get(name)
        if isinstance(value, Stored):              # a global kept flat by the session
            value = value.interp
        if value is not None and not is_function(value):
            return value
        return CONSTANTS.get(name, _UNKNOWN)

    def shape(self, s, ix: dict):
        if isinstance(s, Var):
            return self.lookup(s.name)
        if isinstance(s, Const):
            return _const(s.dims)
        if isinstance(s, Generate):
            n = _int(self.size(s.size, ix))
            if n is None or not 0 <= n <= _LIMIT:
                return _UNKNOWN
            if isinstance(s.body, (Scalar, Label, Function)):
                return _Lazy(n, None)
            return _Lazy(n, lambda k: self.shape(s.body, {**ix, s.var: np.int64(k)}))
        if isinstance(s, Index):
            array, k = self.shape(s.shape, ix), _int(self.size(s.index, ix))
            if _is_array(array) and k is not None and 0 <= k < len(array):
                return array[k]
            return _UNKNOWN
        if isinstance(s, TupleShape):
            return tuple(self.shape(p, ix) for p in s.parts)
        if isinstance(s, Project):
            inner = self.shape(s.shape, ix)
            if isinstance(inner, tuple):
                return inner[s.index] if s.index < len(inner) else _UNKNOWN
            if _is_array(inner):
                return _Lazy(len(inner), lambda k: _component(inner[k], s.index))
            return _UNKNOWN
        if isinstance(s, Cond):
            c = self.size(s.cond, ix)
            if isinstance(c, (bool, np.bool_)):
                return self.shape(s.then if c else s.else_, ix)
        return _UNKNOWN                       # labels, scalars, functions

    def size(self, t, ix: dict):
        try:
            return self._size(t, ix)
        except (AccelError, ArithmeticError, TypeError, ValueError, IndexError, KeyError):
            return _UNKNOWN

    def _size(self, t, ix: dict):
        if isinstance(t, SizeLit):
            v = t.value
            return np.bool_(v) if isinstance(v, bool) else \
                np.int64(v) if isinstance(v, int) else np.float64(v)
        if isinstance(t, SizeVar):
            return self.lookup(t.name)
        if isinstance(t, IndexVar):
            if t in ix:
                return ix[t]
            path, frame = self.checker.path, self.frame
            at = frame.base + t.level
            if frame.tracked and at < len(path):
                return np.int64(path[at][1])
            return _UNKNOWN
        if isinstance(t, Length):
            array = self.shape(t.shape, ix)
            return np.int64(len(array)) if _is_array(array) else _UNKNOWN
        if isinstance(t, Read):
            array, k = self.size(t.array, ix), _int(self.size(t.index, ix))
            if _is_array(array) and k is not None and 0 <= k < len(array):
                return array[k]
            return _UNKNOWN
        if isinstance(t, SizeOp):
            args = [self.size(a, ix) for a in t.args]
            if any(a is _UNKNOWN or _is_array(a) for a in args):
                return _UNKNOWN
            if not t.op[:1].isalpha():
                if len(args) == 2:
                    return scalars.binop(t.op, args[0], args[1])
                return scalars.negate(args[0]) if t.op == "-" else scalars.logical_not(args[0])
            fn = LIBRARY.get(t.op)
            return fn.impl(self.checker, *args) if fn is not None else _UNKNOWN
        return _UNKNOWN                       # unknowns


def _int(v) -> int | None:
    if isinstance(v, (bool, np.bool_)) or v is _UNKNOWN:
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    return None


def _const(dims: tuple[int, ...]):
    if not dims:
        return _UNKNOWN
    inner = dims[1:]
    return _Lazy(dims[0], (lambda k: _const(inner)) if inner else None)


__all__ = ["FactChecker", "check_facts", "POINTWISE"]
