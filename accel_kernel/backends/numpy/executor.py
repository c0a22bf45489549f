"""The `numpy` target: runs a flat program (`ir/flat.py`) with whole-array numpy operations.

    execute(program, globals, counters=None, trace=False, cancel=None) -> FlatCellValues
    call(form, args, globals, counters=None, cancel=None) -> value

Forms run in order, as the interpreter's `run_forms`: a "let" form binds its names (later
forms see them), an "expr" form gives a result, a "def" form is kept for `call` (the flatten
pass inlines calls, so nothing inside the program calls it). Values are the flat values of
`values.py`; `FlatCellValues.interp_results(types)` converts results for comparison with
the interpreter.

Each statement runs as a handful of numpy calls over all its elements: no Python loop over
elements or segments (the only loops are the IR's own `Loop`, and the log-depth rounds of a
tree reduction or scan). Errors are accel errors at the statement's span (or at the scalar
code node that failed); numpy warnings are silenced, as float arithmetic is IEEE.
"""
from __future__ import annotations

import time
from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ...ir import flat as F
from ...ir.assert_message import format_message
from ...lang import types as T
from ...lang.errors import (AccelError, AccelIndexError, DivisionByZero, Interrupted,
                           OutOfMemory, SizeError, StreamError)
from ...runtime.cancel import CancelToken
from ...runtime.memory import Memory, check_allocation
from ...runtime.sequences import HostStream, SequenceRun, release_pages
from ...runtime.deep import on_deep_stack
from . import library as lib
from .costs import Counters, count, lib_cost, log_depth
from .rows import (align, as_segs, check_indices, check_lengths, coerce, first_leaf,
                   flat_values, gather_rows, length, mask_rows, replicate, row, segment_ids,
                   segment_iota, size_error_name, sizes_of, sizes_to_offsets, slice_rows, tmap)
from .scalar_code import LaneEvaluator
from .operators import Operator
from .segmented import (innermost, reduce_inner, scan_inner, seg_filter, seg_reduce,
                        seg_scan)
from .values import DTYPES, FlatValue, Segs, from_flat, make_scalar, to_flat

ERRORS: dict[str, type[AccelError]] = {
    "IndexError": AccelIndexError, "SizeError": SizeError, "DivisionByZero": DivisionByZero}


@dataclass
class FlatCellValues:
    """What running a flat program gives (flat values): global bindings, results, defs."""
    bindings: dict[str, FlatValue] = field(default_factory=dict)
    results: list[FlatValue] = field(default_factory=list)
    defs: dict[str, F.FlatForm] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)

    def interp_results(self, types: list[T.Type | F.Rep]) -> list[Any]:
        return [from_flat(v, t) for v, t in zip(self.results, types)]

    def interp_bindings(self, types: Mapping[str, T.Type | F.Rep]) -> dict[str, Any]:
        return {name: from_flat(v, types[name]) for name, v in self.bindings.items()}


@on_deep_stack
def execute(program: F.FlatProgram, globals: Mapping[str, FlatValue],
            counters: Counters | None = None, trace: bool = False,
            cancel: CancelToken | None = None, executor: type | None = None,
            memory: Memory | None = None) -> FlatCellValues:
    """Run the forms of a flat program. `executor`: a subclass of `Executor` (the `cpu`
    target's host driver runs kernels compiled); `memory`: the session's (its events,
    budget and sequence schedule)."""
    counters = counters if counters is not None else Counters()
    if trace and counters.trace is None:
        counters.trace = []
    out = FlatCellValues(counters=counters)
    runner = (executor or Executor)(ChainMap(out.bindings, dict(globals)), counters, cancel,
                                    memory)
    with np.errstate(all="ignore"), runner:
        for form in program.forms:
            if form.kind == "def":
                out.defs[form.names[0]] = form
                continue
            values = runner.block(form.body, {})
            if form.kind == "let":
                out.bindings.update(zip(form.names, values))
            else:
                out.results.append(values[0] if len(values) == 1 else tuple(values))
    return out


@on_deep_stack
def call(form: F.FlatForm, args: list[FlatValue], globals: Mapping[str, FlatValue],
         counters: Counters | None = None, cancel: CancelToken | None = None,
         executor: type | None = None, memory: Memory | None = None) -> FlatValue:
    """Run a "def" form on flat arguments (one per parameter)."""
    runner = (executor or Executor)(ChainMap(dict(globals)), counters or Counters(), cancel,
                                    memory)
    scope = {p.name: coerce(a, p.rep) for p, a in zip(form.params, args)}
    with np.errstate(all="ignore"), runner:
        values = runner.block(form.body, scope)
    return values[0] if len(values) == 1 else tuple(values)


class Executor:
    target = "numpy"                 # the name sequences' events give

    def __init__(self, globals: Mapping[str, FlatValue], counters: Counters,
                 cancel: CancelToken | None, memory: Memory | None = None):
        self.globals = globals
        self.counters = counters
        self.cancel = cancel
        self.memory = memory if memory is not None else Memory()
        self.env: ChainMap = ChainMap({}, globals)  # type: ignore[arg-type]
        self._ops: dict[type, Callable[[F.Stmt, Any], Any]] = {
            cls: getattr(self, "_" + cls.__name__.lower()) for cls in F.Op.__args__}

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        """Drop the table of bound methods when the run ends: it is a reference cycle, which
        would keep this run's buffers (a global's, after it is redefined) alive until
        Python's cyclic collector happens to run."""
        self._ops = {}

    # ------------------------------------------------------------------ blocks

    def block(self, block: F.Block, scope: dict, held: list[int] | None = None
              ) -> list[FlatValue]:
        """Run the block's statements in a new scope; gives its results. With `held`, the
        bytes of every value the block bound are appended to it (a sequence's step)."""
        saved = self.env
        self.env = saved.new_child(scope)
        try:
            for stmt in block.stmts:
                self._tick(stmt)
                value = self._ops[type(stmt.op)](stmt, stmt.op)
                self._bind(stmt, value)
            results = [self.atom(a) for a in block.result]
            if held is not None:
                held.append(sum(_nbytes(v) for v in self.env.maps[0].values()))
            return results
        finally:
            self.env = saved

    def _tick(self, stmt: F.Stmt | None) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Interrupted("evaluation interrupted", stmt.span if stmt else None)

    def _bind(self, stmt: F.Stmt, value: Any) -> None:
        try:
            bound = self._bind_targets(stmt, value)
        except ValueError as err:      # a rep mismatch: name the statement for the compiler
            names = ", ".join(t.name for t in stmt.targets)
            raise ValueError(f"{type(stmt.op).__name__} binding {names}: {err}") from err
        self.counters.record(stmt, bound)

    def _bind_targets(self, stmt: F.Stmt, value: Any) -> Any:
        """Bind the targets; gives the value bound (a tuple for several targets)."""
        targets = stmt.targets
        if not targets:
            return ()
        if len(targets) == 1:
            target = targets[0]
            if (isinstance(target.rep, F.Segmented) and isinstance(value, tuple)
                    and len(value) == 2 and isinstance(stmt.op, (F.SegFilter, F.SegLibrary))):
                value = Segs(*value)
            value = self.coerce(value, target.rep)
            self.env[target.name] = value
            return value
        value = tuple(self.coerce(v, t.rep) for v, t in zip(value, targets))
        for target, part in zip(targets, value):
            self.env[target.name] = part
        return value

    def coerce(self, value: Any, rep: F.Rep) -> Any:
        """`rows.coerce`: a value bound to a name of representation `rep` (a hook for the
        `cuda` driver, whose values may be on the device)."""
        return coerce(value, rep)

    def atom(self, atom: F.Atom) -> FlatValue:
        if isinstance(atom, F.Const):
            return make_scalar(atom.elem, atom.value)
        return self.env[atom.name]

    def _cost(self, stmt: F.Stmt, work: int, depth: int) -> None:
        self.counters.add(stmt, int(work), int(depth))

    # ------------------------------------------------------------------ scalar code

    def evaluator(self, fn: F.ScalarFn) -> LaneEvaluator:
        free = {v.name: self.atom(v) for v in fn.free}
        return LaneEvaluator(free, self.env, tick=lambda: self._tick(None))

    def operator(self, fn: F.ScalarFn) -> Operator:
        return Operator(fn, self.evaluator(fn))

    def apply(self, fn: F.ScalarFn, args: list, n: int) -> Any:
        """`fn` over the rows of `args` (rank-1 arrays or tuples of them)."""
        return self.evaluator(fn).apply(fn, list(args), n)

    def _scalar(self, stmt: F.Stmt, op: F.Scalar) -> Any:
        ev = self.evaluator(op.fn)
        out = ev.apply(op.fn, [], 1)
        self._cost(stmt, 1 + ev.work, 1 + ev.steps)
        return tmap(lambda x: x[0], out)

    def _map(self, stmt: F.Stmt, op: F.Map) -> Any:
        args = [self.atom(a) for a in op.args]
        lanes, n, rebuild = align(args, stmt.span)
        ev = self.evaluator(op.fn)
        out = ev.apply(op.fn, lanes, n)
        self._cost(stmt, n + ev.work, 1 + ev.steps)
        return rebuild(out)

    # ------------------------------------------------------------------ constructors

    def _literal(self, stmt: F.Stmt, op: F.Literal) -> Any:
        value = to_flat(op.value, op.rep)
        self._cost(stmt, count(value), 1)
        return value

    def _iota(self, stmt: F.Stmt, op: F.Iota) -> Any:
        n = self.atom(op.n)
        if int(n) < 0:
            raise SizeError(f"iota: negative size {int(n)}", stmt.span)
        check_allocation(int(n) * np.asarray(n).dtype.itemsize, f"iota {int(n)}", stmt.span)
        self._cost(stmt, int(n), 1)
        return np.arange(int(n), dtype=np.asarray(n).dtype)

    def _replicate(self, stmt: F.Stmt, op: F.Replicate) -> Any:
        n, x = self.atom(op.n), self.atom(op.x)
        if int(n) < 0:
            raise SizeError(f"replicate: negative size {int(n)}", stmt.span)
        check_allocation(int(n) * _nbytes(x), f"replicate {int(n)}", stmt.span)
        self._cost(stmt, int(n) * count(x), 1)
        return replicate(x, int(n))

    # ------------------------------------------------------------------ reductions and scans

    def _reduce(self, stmt: F.Stmt, op: F.Reduce) -> Any:
        arr, operator = self.atom(op.arr), self.operator(op.op)
        ne = self.atom(op.ne)
        out = innermost(lambda a: reduce_inner(operator, ne, a),
                        lambda o, x: seg_reduce(operator, ne, o, x), arr)
        self._cost(stmt, count(arr) + operator.evaluator.work,
                   log_depth(count(arr)) + operator.evaluator.steps)
        return out

    def _scan(self, stmt: F.Stmt, op: F.Scan) -> Any:
        arr, operator = self.atom(op.arr), self.operator(op.op)
        ne = self.atom(op.ne)
        out = innermost(lambda a: scan_inner(operator, ne, a),
                        lambda o, x: tmap(lambda v: Segs(o, v), seg_scan(operator, ne, o, x)),
                        arr)
        self._cost(stmt, count(arr) + operator.evaluator.work,
                   log_depth(count(arr)) + operator.evaluator.steps)
        return out

    def _segreduce(self, stmt: F.Stmt, op: F.SegReduce) -> Any:
        offsets, values = self.atom(op.offsets), self.atom(op.values)
        operator = self.operator(op.op)
        out = seg_reduce(operator, self.atom(op.ne), offsets, values)
        n = count(values)
        self._cost(stmt, n + len(offsets) - 1 + operator.evaluator.work,
                   log_depth(n) + operator.evaluator.steps)
        return out

    def _segscan(self, stmt: F.Stmt, op: F.SegScan) -> Any:
        offsets, values = self.atom(op.offsets), self.atom(op.values)
        operator = self.operator(op.op)
        out = seg_scan(operator, self.atom(op.ne), offsets, values)
        n = count(values)
        self._cost(stmt, n + operator.evaluator.work, log_depth(n) + operator.evaluator.steps)
        return out

    def _copy(self, stmt: F.Stmt, op: F.Copy) -> Any:
        out = np.array(self.atom(op.arr), copy=True)
        self._cost(stmt, count(out), 1)
        return out

    def _writerows(self, stmt: F.Stmt, op: F.WriteRows) -> Any:
        arr, indices, rows = self.atom(op.arr), self.atom(op.indices), self.atom(op.rows)
        arr[indices] = rows                 # in place: `arr` is a buffer of its own
        self._cost(stmt, count(rows), 1)
        return arr

    def _filter(self, stmt: F.Stmt, op: F.Filter) -> Any:
        keep, arr = self.atom(op.keep), self.atom(op.arr)
        check_lengths("filter", [len(keep), length(arr)], stmt.span)
        self._cost(stmt, len(keep), log_depth(len(keep)))
        return mask_rows(arr, keep)

    def _segfilter(self, stmt: F.Stmt, op: F.SegFilter) -> Any:
        keep, offsets = self.atom(op.keep), self.atom(op.offsets)
        self._cost(stmt, len(keep) + len(offsets) - 1, log_depth(len(keep)))
        return seg_filter(keep, offsets, self.atom(op.values))

    # ------------------------------------------------------------------ segment descriptors

    def _sizestooffsets(self, stmt: F.Stmt, op: F.SizesToOffsets) -> Any:
        sizes = self.atom(op.sizes)
        negative = np.flatnonzero(sizes < 0)
        if len(negative):
            name, first = size_error_name(stmt.span), int(sizes[negative[0]])
            raise SizeError(f"{name}: negative size {first}", stmt.span)
        total = int(np.sum(sizes, dtype=np.float64))        # (an i64 sum may wrap around)
        check_allocation(total * 8, f"{size_error_name(stmt.span)}: {total} elements in all",
                         stmt.span)
        self._cost(stmt, len(sizes), log_depth(len(sizes)))
        return sizes_to_offsets(sizes)

    def _lengths(self, stmt: F.Stmt, op: F.Lengths) -> Any:
        offsets = self.atom(op.offsets)
        self._cost(stmt, len(offsets) - 1, 1)
        return sizes_of(offsets)

    def _segmentids(self, stmt: F.Stmt, op: F.SegmentIds) -> Any:
        offsets = self.atom(op.offsets)
        check_allocation(int(offsets[-1]) * 8, f"segment_ids of {int(offsets[-1])} elements",
                         stmt.span)
        self._cost(stmt, int(offsets[-1]) + len(offsets) - 1, log_depth(int(offsets[-1])))
        return segment_ids(offsets)

    def _segmentiota(self, stmt: F.Stmt, op: F.SegmentIota) -> Any:
        offsets = self.atom(op.offsets)
        check_allocation(int(offsets[-1]) * 8, f"segment_iota of {int(offsets[-1])} elements",
                         stmt.span)
        self._cost(stmt, int(offsets[-1]) + len(offsets) - 1, log_depth(int(offsets[-1])))
        return segment_iota(offsets)

    # ------------------------------------------------------------------ indexing

    def _gather(self, stmt: F.Stmt, op: F.Gather) -> Any:
        arr, indices = self.atom(op.arr), self.atom(op.indices)
        check_indices(indices, length(arr), stmt.span)
        out = gather_rows(arr, indices)
        self._cost(stmt, count(out), 1)
        return out

    def _seggather(self, stmt: F.Stmt, op: F.SegGather) -> Any:
        offsets, values = self.atom(op.offsets), self.atom(op.values)
        segments, indices = self.atom(op.segments), self.atom(op.indices)
        check_indices(indices, sizes_of(offsets)[segments], stmt.span)
        out = gather_rows(values, offsets[:-1][segments] + indices)
        self._cost(stmt, count(out), 1)
        return out

    def _index(self, stmt: F.Stmt, op: F.Index) -> Any:
        arr, i = self.atom(op.arr), self.atom(op.index)
        check_indices(np.asarray(i), length(arr), stmt.span)
        out = row(arr, int(i))
        self._cost(stmt, count(out), 1)
        return out

    def _length(self, stmt: F.Stmt, op: F.Length) -> Any:
        self._cost(stmt, 1, 1)
        value = self.atom(op.arr)
        if isinstance(value, HostStream):       # -1: a Python iterable without `len`
            return np.int64(-1 if value.length is None else value.length)
        return np.int64(length(value))

    # ------------------------------------------------------------------ views

    def _rebuild(self, stmt: F.Stmt, op: F.Rebuild) -> Any:
        self._cost(stmt, 1, 0)
        offsets = self.atom(op.offsets)
        return tmap(lambda v: Segs(offsets, v), self.atom(op.values))

    def _offsets(self, stmt: F.Stmt, op: F.Offsets) -> Any:
        self._cost(stmt, 1, 0)
        return as_segs(first_leaf(self.atom(op.arr))).offsets

    def _values(self, stmt: F.Stmt, op: F.Values) -> Any:
        self._cost(stmt, 1, 0)
        return tmap(flat_values, self.atom(op.arr))

    def _reshape(self, stmt: F.Stmt, op: F.Reshape) -> Any:
        rows = int(self.atom(op.rows))
        self._cost(stmt, 1, 0)

        def split(a: np.ndarray) -> np.ndarray:
            width = a.shape[0] // rows if rows else 0
            return a.reshape((rows, width) + a.shape[1:])
        return tmap(split, self.atom(op.arr))

    def _maketuple(self, stmt: F.Stmt, op: F.MakeTuple) -> Any:
        self._cost(stmt, 0, 0)
        return tuple(self.atom(p) for p in op.parts)

    def _project(self, stmt: F.Stmt, op: F.Project) -> Any:
        self._cost(stmt, 0, 0)
        return self.atom(op.tup)[op.index]

    # ------------------------------------------------------------------ library

    def _library(self, stmt: F.Stmt, op: F.Library) -> Any:
        args = [self.atom(a) for a in op.args]
        out = lib.library(self, op.name, args, op.fns, stmt.span)
        work, depth = lib_cost(op.name, sum(count(a) for a in args), count(out))
        self._cost(stmt, work, depth)
        return out

    def _seglibrary(self, stmt: F.Stmt, op: F.SegLibrary) -> Any:
        offsets, values = self.atom(op.offsets), self.atom(op.values)
        args = [self.atom(a) for a in op.args]
        out = lib.seg_library(self, op.name, offsets, values, args, op.fns, stmt.span)
        work, depth = lib_cost(op.name, count(values) + len(offsets) - 1, count(out))
        self._cost(stmt, work, depth)
        return out

    # ------------------------------------------------------------------ control

    def _if(self, stmt: F.Stmt, op: F.If) -> Any:
        self._cost(stmt, 1, 1)
        values = self.block(op.then if self.atom(op.cond) else op.else_, {})
        return values[0] if len(values) == 1 else tuple(values)

    def _kernel(self, stmt: F.Stmt, op: F.Kernel) -> Any:
        """A fused kernel, run statement by statement (the reference for compiled ones)."""
        values = self.block(op.body, {})
        return values[0] if len(values) == 1 else tuple(values)

    def _assert(self, stmt: F.Stmt, op: F.Assert) -> Any:
        ok = self.atom(op.ok)
        self._cost(stmt, count(ok), log_depth(count(ok)))
        if not np.all(ok):
            raise ERRORS[op.kind](self.assert_message(stmt, op, ok), stmt.span)
        return ()

    def assert_message(self, stmt: F.Stmt, op: F.Assert, ok: Any) -> str:
        """The failed assert's message with its numbers filled in (`ir.assert_message`); a
        negative size names the library function of the statement's source text, as the
        interpreter does."""
        message = format_message(op.message, ok, lambda name: self.env[name])
        if message.startswith("negative size"):
            message = f"{size_error_name(stmt.span)}: {message}"
        return message

    def _loop(self, stmt: F.Stmt, op: F.Loop) -> Any:
        if op.bound is None and op.cond is None:
            raise ValueError("a Loop needs a bound or a condition")
        state = [self.coerce(self.atom(a), p.rep) for a, p in zip(op.init, op.params)]
        bound = int(self.atom(op.bound)) if op.bound is not None else None
        i = 0
        while True:
            self._tick(stmt)
            scope = {p.name: v for p, v in zip(op.params, state)}
            if bound is not None:
                if i >= bound:
                    break
                if op.index is not None:
                    scope[op.index.name] = make_scalar("i64", i)
            elif op.cond is not None and not self.block(op.cond, scope)[0]:
                break
            self._cost(stmt, 1, 1)
            state = [self.coerce(v, p.rep)
                     for v, p in zip(self.block(op.body, scope), op.params)]
            i += 1
        return state[0] if len(state) == 1 else tuple(state)


    # ------------------------------------------------------------------ sequences
    def _seqloop(self, stmt: F.Stmt, op: F.SeqLoop) -> Any:
        """The sequence's steps (`runtime/sequences.py`): each binds the chunk's start, size
        and streamed rows, runs the body, folds its accumulator and keeps its appended parts;
        those are concatenated at the end (only the consumer's result and one chunk alive)."""
        sources = [self.atom(x) for x, _ in op.streams]
        known = None if op.length is None else int(self.atom(op.length))
        length = _sequence_length(known if known is None or known >= 0 else None, sources,
                                  stmt.span)
        state = [self.coerce(self.atom(a), p.rep) for a, p in zip(op.init, op.params)]
        if self.memory.cluster is not None:          # its steps as tasks (runtime/cluster.py)
            from .cluster import run_on_cluster
            steps = run_on_cluster
        else:
            steps = Executor._steps_here
        try:
            state, appended = steps(self, stmt, op, length, sources, state)
        except AccelError as error:
            if error.span is None:
                error.span = stmt.span         # the runtime's own errors: at the consumer
            raise
        results = state + [self.seq_concat(parts, rep) for parts, rep in
                           zip(appended, [t.rep for t in stmt.targets[len(op.params):]])]
        return results[0] if len(results) == 1 else tuple(results)

    def _steps_here(self, stmt: F.Stmt, op: F.SeqLoop, length: int | None,
                    sources: list[Any], state: list[Any]) -> tuple[list, list[list]]:
        """The steps in this process: the final state and each appended part's chunks."""
        appended: list[list[Any]] = [[] for _ in range(op.appended)]
        line = stmt.span.line if stmt.span is not None else 0
        run = SequenceRun(length, self.memory, self.target, line)
        try:
            for start, count in run:
                self._tick(stmt)
                raw = [self.seq_pull(v, start, count) for v in sources]
                count = _chunk_rows(raw, count, start, length, stmt.span)
                if count == 0:                          # the Python iterables ended
                    break
                while True:
                    chunks = [self.seq_chunk(r, v, chunk.rep)
                              for r, v, (_, chunk) in zip(raw, sources, op.streams)]
                    try:
                        out, seconds, nbytes = self.step(op, start, count, state, chunks)
                        break
                    except OutOfMemory:            # refused before it was made: try half
                        if count == 1:
                            raise
                        count = run.shrink(count)
                        raw = [self.seq_unpull(v, r, count) for v, r in zip(sources, raw)]
                state = out[:len(op.params)]
                for parts, value in zip(appended, out[len(op.params):]):
                    parts.append(value)
                run.done(seconds, nbytes, count)
            _no_rows_left(sources, run.start, stmt.span)
        except BaseException as error:
            run.finish("cancelled" if isinstance(error, Interrupted) else "error")
            raise
        run.finish("done")
        return state, appended

    def step(self, op: F.SeqLoop, start: int, count: int, state: list[Any],
             chunks: list[Any]) -> tuple[list[Any], float, int]:
        """One step of a sequence: the body on the chunk [start, start + count) whose
        streamed values are `chunks`, the accumulator `state`; gives the body's results (the
        new state, then the appended parts), the seconds it computed and the bytes it held.
        OutOfMemory when a value was refused before it was made (try fewer elements)."""
        scope = {op.start.name: make_scalar("i64", start),
                 op.count.name: make_scalar("i64", count),
                 **{p.name: v for p, v in zip(op.params, state)},
                 **{chunk.name: c for (_, chunk), c in zip(op.streams, chunks)}}
        held: list[int] = []
        began = time.perf_counter()
        out = self.block(op.body, scope, held)
        seconds = time.perf_counter() - began
        out = [self.coerce(v, p.rep) for v, p in zip(out, op.params)] + out[len(op.params):]
        for chunk in chunks:
            tmap(release_pages, chunk)
        return out, seconds, held[0] + sum(_nbytes(c) for c in chunks)

    def combine(self, op: F.SeqLoop, left: list[Any], right: list[Any]) -> list[Any]:
        """A fold's operator on two partial accumulators (`SeqLoop.combine`)."""
        assert op.combine is not None
        scope = {**{p.name: v for p, v in zip(op.params, left)},
                 **{r.name: v for r, v in zip(op.right, right)}}
        out = self.block(op.combine, scope)
        return [self.coerce(v, p.rep) for v, p in zip(out, op.params)]

    def worker_factory(self) -> Any:
        """How a cluster's worker makes this target's executor (`cluster.py`); None when
        the target does not run on a cluster."""
        from .cluster import NumpyFactory
        return NumpyFactory()

    def seq_pull(self, value: Any, start: int, count: int) -> Any:
        """A streamed value's rows [start, start + count): a view of an array's rows, or the
        next rows of a Python iterable (a list, fewer when it ends)."""
        if isinstance(value, HostStream):
            return value.take(count)
        return slice_rows(value, start, start + count)

    def seq_unpull(self, value: Any, rows: Any, count: int) -> Any:
        """The first `count` of the rows pulled; a Python iterable gets the others back."""
        if isinstance(value, HostStream):
            value.unread(rows[count:])
            return rows[:count]
        return slice_rows(rows, 0, count)

    def seq_chunk(self, rows: Any, value: Any, rep: F.Rep) -> Any:
        """The chunk's value of representation `rep` (a Python iterable's rows converted)."""
        if isinstance(value, HostStream):
            from .boundary import rows_to_flat
            return self.coerce(rows_to_flat(rows, value.elem_type), rep)
        return rows

    def seq_concat(self, parts: list[Any], rep: F.Rep) -> Any:
        """The appended parts of every step, in order, as one value of `rep`."""
        return concat_all(parts, rep)


# ---------------------------------------------------------------- helpers


def _lengths_differ(a: int, b: int | str, span: Any) -> SizeError:
    return SizeError(f"zipWithSeq: sequence lengths differ ({a} and {b})", span)


def _sequence_length(known: int | None, sources: list[Any], span: Any) -> int | None:
    """The elements of a sequence: `known` (produce's count), else those of its streamed
    values that know theirs (None: Python iterables only, known when they end)."""
    lengths = [known] if known is not None else []
    for value in sources:
        if isinstance(value, HostStream):
            if value.started():
                raise StreamError("this Python iterable was consumed by an earlier run: "
                                  "bind it again to stream it again", span)
            if value.length is not None:
                lengths.append(value.length)
        else:
            lengths.append(length(value))
    for other in lengths[1:]:
        if other != lengths[0]:
            raise _lengths_differ(lengths[0], other, span)
    return lengths[0] if lengths else None


def _chunk_rows(chunks: list[Any], count: int, start: int, total: int | None,
                span: Any) -> int:
    """The rows of a step's chunks (fewer than asked when Python iterables end: then all
    must end together, and where the length is known, not before it)."""
    rows = {len(c) if isinstance(c, list) else length(c) for c in chunks} or {count}
    if len(rows) > 1:
        raise _lengths_differ(start + min(rows), start + max(rows), span)
    got = rows.pop()
    if got < count and total is not None:
        raise _lengths_differ(total, start + got, span)
    return got


def _no_rows_left(sources: list[Any], done: int, span: Any) -> None:
    """A Python iterable zipped with a sequence of known length must end with it."""
    for value in sources:
        if isinstance(value, HostStream) and value.take(1):
            extra = 1 + len(value.take(1 << 20))   # count what is left, up to a point
            raise _lengths_differ(done, done + extra if value.ended
                                  else f"more than {done + extra}", span)


def concat_all(parts: list[Any], rep: F.Rep) -> Any:
    """The rows of every part, in order (no part: an empty array of `rep`)."""
    if isinstance(rep, F.TupleRep):
        return tuple(concat_all([p[k] for p in parts], r) for k, r in enumerate(rep.parts))
    if isinstance(rep, F.Segmented):
        segs = [as_segs(p) for p in parts]
        sizes = [sizes_of(s.offsets) for s in segs]
        offsets = sizes_to_offsets(np.concatenate(sizes) if sizes
                                   else np.zeros(0, dtype=np.int64))
        return Segs(offsets, concat_all([s.values for s in segs], rep.inner))
    assert isinstance(rep, F.Regular)
    if not parts:
        return np.zeros((0,) * rep.rank, dtype=DTYPES[rep.elem])
    if len(parts) == 1:
        return parts[0]
    widths = {p.shape[1:] for p in parts}
    if len(widths) > 1:
        raise ValueError(f"the chunks of a regular sequence differ in shape: {sorted(widths)}")
    return np.concatenate(parts)



def _nbytes(value: Any) -> int:
    """The bytes of a flat value (its arrays' buffers), for the memory check of a copy."""
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, Segs):
        return _nbytes(value.offsets) + _nbytes(value.values)
    nbytes = getattr(value, "nbytes", None)         # numpy arrays and scalars, device arrays
    return int(nbytes) if nbytes is not None else int(np.asarray(value).nbytes)
