"""Rules for sequences (LANGUAGE.md §7): run chunk by chunk outside every map.

- SEQ-LAZY: outside every map, `produce`, `stream`, `mapSeq` and `zipWithSeq` make no
  statement: they give a `SeqVal`, the sequence's description, which its consumer runs.
- SEQ-LOOP: a consumer outside every map (`foldSeq`, `elements`, `tabulate`, or a sequence
  used as a value: a cell's result, a global, a branch) is one `SeqLoop`. Its body computes
  one chunk: a level of `count` points (the chunk is the lifting context, Clifton-Everest
  5.1-5.2) on which each element is made (`produce`'s function applied to `start + k`, a
  streamed array's chunk of rows) and the functions of `mapSeq`/`zipWithSeq` are applied,
  lifted like the body of a map; then the consumer's part: `foldSeq` reduces the chunk with
  its operator and combines the result with the accumulator (`op acc (reduce op ne
  chunk)`: foldSeq has reduce's contract, an associative operator and its neutral element);
  the loop also keeps `op` on two accumulators (its `combine`), with which a cluster joins
  the partial folds of chunks run apart;
  `elements` appends the chunk's flat values, `tabulate` its rows. The host's scheduler
  picks every step's chunk size (`runtime/scheduler.py`).
- SEQ-LENGTHS: the lengths of zipped sequences are checked before the loop (interp checks
  them after computing both sequences: with elements that fail as well, the two may report
  different errors; docs/sequences.md).
- Inside a map, a sequence is an array (SEQ-ARRAY): `produce` is `generate`, `mapSeq` is
  `map`, `foldSeq` is `reduce`; a sequence made outside the map is run into an array first.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.assert_message import field
from ...ir.flat import Assert, Block, FVar, ScalarRep, SeqLoop, TupleRep
from ...lang import ast
from ...lang import types as T
from .context import Env, FunVal, Leaf, Level, SeqVal, TupleVal, leaves, map_leaves
from .control import _rebuild

I64 = ScalarRep("i64")
SEQUENCE_FUNCTIONS = {"produce", "stream", "mapSeq", "zipWithSeq", "foldSeq", "elements",
                      "tabulate"}
_LAZY = {"mapSeq": "map", "zipWithSeq": "zip"}
_AS_ARRAY = {"mapSeq": "map", "zipWithSeq": "map2", "foldSeq": "reduce",
             "produce": "generate"}


class SequenceRules:
    """Mixin of the flattener: `sequence(name, args, node, env)` and `settle(value)`."""

    def sequence(self, name: str, args: list[Any], node: ast.Node, env: Env) -> Any:
        if env.level is None:
            if name == "produce":
                return SeqVal("produce", node, tuple(args))
            if name == "stream":                # of an array; of a sequence: itself
                return self.as_seq(args[0], node) if self._streams_a_sequence(node) \
                    else SeqVal("stream", node, (args[0],))
            if name in ("mapSeq", "zipWithSeq"):
                return SeqVal(_LAZY[name], node,
                              (args[0], *(self.as_seq(a, node) for a in args[1:])))
            return self.consume(name, args[:-1], self.as_seq(args[-1], node), node, env)
        # inside a map a sequence is an array; the shape analysis gives sequences fresh
        # labels without index variables: the facts inside their functions cannot say what
        # differs between elements
        args = [self.settle(a) for a in args]
        env = replace(env, trusted=False)
        with self.b.rule("SEQ-ARRAY", node, "a sequence inside a map: computed as an array"):
            pass
        if name in ("stream", "tabulate"):
            return args[0]
        if name == "elements":
            return self.seq_elements(args[0], node, env)
        return getattr(self, "lib_" + _AS_ARRAY[name])(args, node, env)

    def _streams_a_sequence(self, node: ast.Node) -> bool:
        return isinstance(node, ast.Apply) and bool(node.args) and \
            isinstance(self.type_of(node.args[-1]), T.Seq)

    def as_seq(self, v: Any, node: ast.Node) -> SeqVal:
        """A sequence value: one not run yet, or one stored in a variable (a global, a
        def's parameter: its elements as an array, or a Python iterable pulled row by row,
        whose length is known only at run time), streamed by rows."""
        return v if isinstance(v, SeqVal) else SeqVal("stored", node, (v,))

    def settle(self, v: Any) -> Any:
        """`v` with every sequence in it run into an array (as `tabulate` does)."""
        if isinstance(v, SeqVal):
            return self.consume("tabulate", [], v, v.node, Env({}))
        if isinstance(v, TupleVal):
            return TupleVal(tuple(self.settle(p) for p in v.parts))
        return v

    def seq_elements(self, chunk: Any, node: ast.Node, env: Env) -> Any:
        """`elements` of an array of elements: the rows joined when they are arrays."""
        t = self.type_of(node.args[-1]) if isinstance(node, ast.Apply) else None
        if isinstance(t, T.Seq) and isinstance(t.elem, (T.Array, T.Seq)):
            return self.flatten_rows(self._home(chunk, env), node, env)
        return chunk

    # ------------------------------------------------------------------ the loop
    def consume(self, name: str, extra: list[Any], s: SeqVal, node: ast.Node,
                env: Env) -> Any:
        with self.b.at_node(node):
            length = self.seq_length(s)[0]
        host = Env(env.scope, None, False, env.floor)
        note = ("a sequence outside every map: one loop over chunks the scheduler sizes; "
                "its body is the chunk's lifted computation")
        with self.b.rule("SEQ-LOOP", node, note):
            if name == "foldSeq":
                op, ne = extra
                ne = self.settle(ne)
                return self._attempts(self._param_reps(ne, None, True),
                                      lambda reps: self._fold_loop(op, ne, reps, length, s,
                                                                   node, host))
            return self._append_loop(name, length, s, node, host)

    def _fold_loop(self, op: Any, ne: Any, reps: list, length: Any, s: SeqVal,
                   node: ast.Node, env: Env) -> tuple[bool, Any]:
        params = [FVar(self.b.fresh("acc"), r) for r in reps]
        state = _rebuild(ne, [Leaf(p) for p in params])
        with self.b.block() as frame:
            start, count, streams, chunk = self._chunk(s, env)
            part = self.library("reduce", [op, ne, chunk], node, env)
            new = self.apply_value(op, [state, part], node, env)
        ok, out = self._body(frame, leaves(new), reps, None)
        if not ok:
            return False, out
        # the combine: `op` on two partial accumulators, for a cluster (runtime/cluster.py)
        right = [FVar(self.b.fresh("acc"), r) for r in reps]
        with self.b.block() as joined:
            both = self.apply_value(op, [state, _rebuild(ne, [Leaf(r) for r in right])],
                                    node, env)
        ok, combined = self._body(joined, leaves(both), reps, None)
        if not ok:
            return False, combined
        inits = [self.coerce(x, r).atom for x, r in zip(leaves(ne), reps)]
        loop = SeqLoop(tuple(params), tuple(inits), length, start, count, tuple(streams),
                       Block(tuple(frame.stmts), tuple(out)), tuple(right),
                       Block(tuple(joined.stmts), tuple(combined)))
        targets = self.b.emit(loop, list(reps), "acc")
        return True, _rebuild(ne, [Leaf(t) for t in targets])

    def _append_loop(self, name: str, length: Any, s: SeqVal, node: ast.Node,
                     env: Env) -> Any:
        with self.b.block() as frame:
            start, count, streams, chunk = self._chunk(s, env)
            if name == "elements":
                chunk = self.seq_elements(chunk, node, env)
            parts = leaves(chunk)
        loop = SeqLoop((), (), length, start, count, tuple(streams),
                       Block(tuple(frame.stmts), tuple(p.atom for p in parts)))
        targets = self.b.emit(loop, [p.atom.rep for p in parts], "seq")
        return _rebuild(chunk, [Leaf(t) for t in targets])

    def _chunk(self, s: SeqVal, env: Env):
        """In the loop's body: the step's `start` and `count`, the streamed values' chunks
        and the chunk's elements as an array (the lifted body of the sequence's functions
        over a level of `count` points)."""
        start = FVar(self.b.fresh("start"), I64)
        count = FVar(self.b.fresh("count"), I64)
        level = Level(1, "regular", None, count, extent=count)
        streams: list[tuple[FVar, FVar]] = []
        element = self._element(s, start, level, streams, replace(env, level=level))
        return start, count, streams, self.leave(element, level)

    def _element(self, s: SeqVal, start: FVar, level: Level, streams: list, env: Env) -> Any:
        """Every element of the chunk, stacked over `level`."""
        if s.kind == "produce":
            n, f = s.args
            index = self.mapf("\\k -> s + k", [self.iota(level.points)], "i64", "index",
                              s=start)
            return self.apply_value(f, [Leaf(index, level)], s.node, env)
        if s.kind in ("stream", "stored"):
            def chunk_of(leaf: Leaf) -> Leaf:
                if not isinstance(leaf.atom, FVar) or leaf.level is not None:
                    raise NotImplementedError("flatten: streaming this value is not built yet")
                chunk = FVar(self.b.fresh("chunk"), leaf.atom.rep)
                streams.append((leaf.atom, chunk))
                return Leaf(chunk, level)
            return map_leaves(s.args[0], chunk_of)
        f, *sources = s.args
        elements = [self._element(x, start, level, streams, env) for x in sources]
        return self.apply_value(f, elements, s.node, env)

    def seq_length(self, s: SeqVal) -> tuple[Any, bool]:
        """The sequence's length (an unlifted i64 atom) and whether it may be unknown until
        the run ends (a stored Python iterable without `len` has length -1), with the checks
        interp makes: a negative `produce` size, zipped lengths that differ (an unknown one
        is checked by the run as its rows come)."""
        if s.kind == "produce":
            n = s.args[0].atom
            with self.b.at_node(s.node):
                ok = self.scalarf("n >= 0", "bool", "ok", n=n)
                self.b.check(Assert(ok, "SizeError", "negative size " + field(n)))
            return n, False
        if s.kind in ("stream", "stored"):
            with self.b.at_node(s.node):
                return self.lengths_of(s.args[0]).atom, s.kind == "stored"
        if s.kind == "map":
            return self.seq_length(s.args[1])
        (a, open_a), (b, open_b) = self.seq_length(s.args[1]), self.seq_length(s.args[2])
        if a != b:
            test = "a == b || a < 0 || b < 0" if open_a or open_b else "a == b"
            with self.b.at_node(s.node):
                ok = self.scalarf(test, "bool", "ok", a=a, b=b)
                self.b.check(Assert(ok, "SizeError", "zipWithSeq: sequence lengths differ "
                                    f"({field(a)} and {field(b)})"))
        return (b, open_b) if open_a else (a, open_a)
