"""A session: the globals of a notebook (or of one `accel run`), kept across cells.

`Session.execute(code, name)` parses, type checks and evaluates one cell. It is transactional:
the cell's definitions are committed only when every form of the cell succeeded, so a failed
cell changes no global (the kernel extends this to a whole cell with meta-command lines with
`snapshot`/`restore`). Definitions are late-bound: redefining `g` makes every def that calls
`g` use the new one; those dependents are type checked again first (a dependent that no longer
checks fails the cell), and the result says which were affected.

The public methods raise only accel errors (and NotImplementedError for what is not built):
any other failure is an `InternalError` naming its stage, a `MemoryError` is `OutOfMemory`
(`boundary.accel_errors`, applied by `_accel_errors_only`).

The prelude (`prelude.accel`) is loaded into every session as ordinary accel definitions.

Cells run on `self.target_record` (a `targets.Target`; `self.target` is its name), by default
`targets.DEFAULT_TARGET` (`cpu`). The session reads the record's fields and calls its `run` and
`call`; it never compares target names. A construct the target does not build raises
NotImplementedError (no fallback to `interp`: see `targets`).

Values stay in the form the target made them (`host.HostValue`): a global let made by `cpu`
is its numpy buffers (and segment offsets), read as they are by the next `cpu` or `numpy`
cell, converted to interp values only when `interp` reads it, and the display reads only the
elements it shows. A def is kept as the interpreter's function value.
"""
from __future__ import annotations

import functools
import itertools
import time
from collections import ChainMap
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from . import cell_memo, compiler, targets
from .boundary import accel_errors
from .host import FLAT, INTERP, HostValue, interp_of
from .lang import ast
from .lang.builtins import BUILTINS
from .lang.errors import AccelError, AccelNameError
from .lang.parser import KEYWORDS, parse_program
from .lang.source import Source
from .lang.typecheck import CheckResult, GlobalEnv, bound_names, check_program
from .lang.types import Scheme, Type, show_scheme
from .passes.base import Options
from .runtime.budget import parse_size
from .runtime.cancel import CancelToken
from .runtime.events import EventStream, SeqBegin
from .runtime.scheduler import Scheduler
from .runtime.deep import deep


@dataclass(frozen=True)
class GlobalInfo:
    """What `%who`, completion and inspection show about a name."""
    name: str
    kind: str          # 'def' | 'let' | 'prelude' | 'builtin'
    type: str
    doc: str


@dataclass
class CellResult:
    host: HostValue | None = None     # the last top-level expression's value, as the target
    type: Type | None = None          # made it (converted when read: `value`, `text`, ...)
    defined: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    costs: tuple[int, int] | None = None    # (work, depth) of the run, on either target

    @property
    def has_value(self) -> bool:
        return self.type is not None

    @property
    def value(self) -> Any:
        """The interp value of the last top-level expression (converted on first read)."""
        return None if self.host is None else self.host.interp

    @property
    def text(self) -> str | None:
        return None if self.host is None else self.host.text()

    @property
    def json(self) -> Any:
        return None if self.host is None else self.host.json()

    @property
    def python(self) -> Any:
        return None if self.host is None else self.host.python()


@dataclass(frozen=True)
class _Global:
    name: str
    kind: str                      # 'def' | 'let' | 'prelude'
    scheme: Scheme
    value: Any                     # a let's HostValue; a def's interp function value
    deps: frozenset[str]
    form: ast.TopForm | None       # None for a value bound from outside (`bind`)
    doc: str


@dataclass(frozen=True)
class _Snapshot:
    """What `Session.snapshot` saves: the target and a copy of the globals (their entries and
    host values are never changed, so copying the dictionary is enough: no buffer is copied)."""
    target: targets.Target
    globals: dict
    budget: int | None = None
    schedule: Any = None
    cluster: Any = None


@dataclass
class _Compiled:
    """A parsed and checked cell, plus the dependents re-checked against it."""
    program: ast.Program
    checked: CheckResult
    rechecked: dict[str, CheckResult]
    source: Source | None = None


def _accel_errors_only(phase: str):
    """A public method raises only AccelError (and NotImplementedError for what is not built):
    see `boundary.accel_errors`; `phase` names the stage when the traceback does not."""
    def wrap(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            with accel_errors(phase, self.target):
                return method(self, *args, **kwargs)
        return run
    return wrap


class Session:
    def __init__(self, target: str | targets.Target = targets.DEFAULT_TARGET,
                 check_facts: bool = False, options: targets.CompileOptions | None = None,
                 budget: int | str | None = None, cluster: Any = None):
        self.cancel = CancelToken()
        self.events = EventStream()      # the runtime's events (runtime/events.py)
        # check the shape and regularity facts of every cell on its data before running it
        # (backends/interp/facts.py): a wrong fact is an InternalError of `regularity`
        self.check_facts = check_facts
        self.target_record = targets.get(target)
        # how compiled targets build (the one place the environment is read: $ACCEL_CACHE_DIR)
        self.compile_options = options or targets.CompileOptions.from_environment()
        self._ids = itertools.count(1)
        self._globals: dict[str, _Global] = {}
        self._types: dict[int, Type] = {}
        self._instantiations: dict[int, dict[str, Type]] = {}
        self._loading_prelude = False
        self._flat_calls: dict[tuple, tuple] = {}     # call_flat's compiled wrappers
        self._memos = cell_memo.CellMemos()           # cells' compiled forms, by text
        self.last_counters = None                     # work and depth of the last flat run
        self.last_compile = 0.0                       # seconds compiling the last cell
        self.last_sequence_events: list = []          # events of the last cell with a sequence
        from .runtime.memory import Memory
        self.memory = Memory(events=self.events)      # buffers of the compiled targets
        self.set_budget(budget)
        self.set_cluster(cluster)
        self._load_prelude()

    # ------------------------------------------------------------------ public API

    @property
    def target(self) -> str:
        """The name of the target cells run on (`target_record` is its record)."""
        return self.target_record.name

    def set_target(self, target: str | targets.Target) -> None:
        chosen = targets.get(target)
        chosen.check_compiler()          # a target chosen explicitly is checked at once
        self.target_record = chosen

    @property
    def budget(self) -> int | None:
        """The device memory budget in bytes (None: no budget)."""
        return self.memory.budget

    def set_budget(self, budget: int | str | None) -> None:
        """Bound the memory of the compiled targets (`512MB`, `1.5GiB`, bytes; None for no
        bound): a sequence's chunks hold at most half of it (`runtime/sequences.py`), and past
        it device buffers are evicted to host memory (`runtime/budget.py`). ValueError for a
        size that cannot be read."""
        if isinstance(budget, str):
            budget = parse_size(budget)
        if budget is not None and budget < 0:
            raise ValueError(f"a memory budget cannot be negative ({budget})")
        self.memory.set_budget(budget)

    @property
    def schedule(self) -> Scheduler:
        """How sequences choose their chunk sizes (`runtime/scheduler.py`)."""
        return self.memory.schedule

    def set_schedule(self, schedule: str | Scheduler) -> None:
        """`adaptive` or `fixed N` (`%schedule`); ValueError for anything else."""
        self.memory.schedule = Scheduler.parse(schedule) if isinstance(schedule, str) \
            else schedule

    @property
    def cluster(self) -> Any:
        """Where sequences run: a `runtime.cluster.Cluster`, or None (this process)."""
        return self.memory.cluster

    def set_cluster(self, cluster: Any) -> None:
        """Run sequences' steps as tasks on a Dask cluster (`runtime/cluster.py`): `local N`
        (a LocalCluster of N worker processes, started on first use), a scheduler's address
        (`tcp://HOST:8786`), a `distributed.Client`, or None / `off` (this process). The
        cluster set before is closed. ValueError for anything else."""
        from .runtime.cluster import Cluster
        chosen = Cluster.parse(cluster)
        if self.memory.cluster is not None and self.memory.cluster is not chosen:
            self.memory.cluster.close()
        self.memory.cluster = chosen

    def close(self) -> None:
        """Close what the session started (a local cluster)."""
        self.set_cluster(None)

    @deep
    @_accel_errors_only("execute")
    def execute(self, code: str, name: str = "cell") -> CellResult:
        """Run one cell. Raises AccelError (and changes nothing) when any part of it fails."""
        self.cancel.clear()
        started = time.perf_counter()
        memo = self._memos.find(code, self._globals, self.target_record, self.compile_options)
        if memo is not None:            # the same text, and nothing its compile read changed
            memo.compiled.source.rename(name)
            compiled = replace(memo.compiled,
                               rechecked=self._recheck_dependents(memo.compiled.checked))
            reads = memo.reads
        else:
            compiled = self._compile(code, name)
            reads = cell_memo.reads(compiled.program, self._globals)
        if self.check_facts:
            self._check_facts(compiled)
        checked_at = time.perf_counter()
        self.last_compile = 0.0
        with self.events.recording() as log:
            values, stages = self._evaluate(compiled, memo.stages if memo else None)
        if any(isinstance(e, SeqBegin) for e in log):   # `%trace` plots them
            self.last_sequence_events = log
        finished = time.perf_counter()
        result = self._commit(compiled, values, kind="def")
        if reads is not None:
            self._memos.keep(code, cell_memo.CellMemo(
                replace(compiled, rechecked={}), stages, self.target_record,
                self.compile_options, reads))
        result.timings = {"check": checked_at - started}
        if not self.target_record.reference:
            result.timings["compile"] = self.last_compile
        result.timings["run"] = finished - checked_at - self.last_compile
        if getattr(values, "costs", None) is not None:
            result.costs = (values.costs.work, values.costs.depth)
        return result

    @deep
    @_accel_errors_only("check")
    def check(self, code: str, name: str = "cell") -> CheckResult:
        """Parse and type check a cell against the session's globals, changing nothing."""
        return self._compile(code, name).checked

    @deep
    @_accel_errors_only("call")
    def call(self, name: str, args: list[Any]) -> Any:
        """Call a global def with interp values (used by the library API)."""
        interp = self._interpreter(self._types, self._instantiations)
        return interp.call(interp_of(self._globals[name].value), list(args))

    def scheme(self, name: str) -> Scheme | None:
        entry = self._globals.get(name)
        return entry.scheme if entry is not None else None

    def names(self) -> list[GlobalInfo]:
        return [self._info(g) for g in self._globals.values() if g.kind != "prelude"]

    def state(self) -> tuple:
        """What a compiled view of a global depends on, as objects to compare by identity
        (`is`): the target and every global's entry (an entry is replaced, never changed,
        when its name is bound again; `restore` puts the old ones back)."""
        return (self.target_record, *self._globals.values())

    def lookup(self, name: str) -> GlobalInfo | None:
        if name in self._globals:
            return self._info(self._globals[name])
        if name in BUILTINS:
            builtin = BUILTINS[name]
            return GlobalInfo(name, "builtin", show_scheme(builtin.scheme), builtin.doc)
        return None

    def completions(self, prefix: str) -> list[str]:
        names = set(KEYWORDS) | set(BUILTINS) | set(self._globals)
        if "." in prefix:                        # Futhark's qualified names: `f64.sq`
            from .lang.parser import qualified_names
            names = set(qualified_names())
        return sorted(n for n in names if n.startswith(prefix))

    @deep
    @_accel_errors_only("stages")
    def stages(self, target: str, name: str = "stages", stop_after: str | None = None):
        """The compilation stages (`compiler.Stage` list) of a global def or let named
        `target`, or else of `target` read as cell text (an expression, or forms). Nothing is
        evaluated and no global changes; bad text raises AccelError with its position."""
        program, checked = self._target_program(target, name)
        return self._pipeline(program, checked, stop_after)

    def _target_program(self, target: str, name: str) -> tuple[ast.Program, CheckResult]:
        entry = self._globals.get(target.strip())
        if entry is not None and entry.form is not None and entry.kind != "prelude":
            program = ast.Program((entry.form,))
        else:
            program = parse_program(Source(name, target), self._ids)
        return program, check_program(program, self._env())

    @deep
    @_accel_errors_only("flat_run")
    def flat_run(self, target: str, name: str = "stages"):
        """Flattening on real data: the flatten stage of `target` (as for `stages`), its flat
        program run on the session's values with every binding's value traced, and the work
        and depth of the flat program next to the interpreter's (`viz.flat_run.FlatRun`).
        A def has no inputs: its run is empty. Nothing changes in the session; an accel
        error while running stops the run and is recorded in it."""
        from .backends import numpy as flat_numpy
        from .viz.flat_run import FlatRun, interp_costs
        program, checked = self._target_program(target, name)
        stages = self._pipeline(program, checked, stop_after="flatten",
                                target=targets.TRACED)
        env = self._flat_globals(_stage(stages, "regularity").program)
        counters = flat_numpy.Counters(trace=[])
        fields: dict[str, Any] = {"inputs": dict(sorted(env.items())), "stages": stages,
                                  "runs": not all(isinstance(f, ast.Def) for f in program.forms)}
        try:
            out = flat_numpy.execute(stages[-1].program, env, counters=counters,
                                     cancel=self.cancel)
            if out.results:
                fields["result"] = HostValue.of(FLAT, out.results[-1],
                                                checked.expr_types[-1]).text()
        except AccelError as err:
            fields["error"] = err.format().splitlines()[0]
        try:
            types = ChainMap(checked.types, self._types)
            instantiations = ChainMap(checked.instantiations, self._instantiations)
            values = self._interpreter(types, instantiations).run_forms(program.forms)
            fields["interp_work"], fields["interp_depth"] = interp_costs(values)
        except AccelError:
            pass
        return FlatRun.from_counters(stages[-1], counters, **fields)

    @deep
    @_accel_errors_only("stages")
    def program_stages(self, code: str, name: str, entry: str | None = None,
                       stop_after: str | None = None, target: str | None = None):
        """The stages of a whole program text (a file): every form, or with `entry` only the
        forms that bind that name (the rest are still compiled, for inlining); `target`:
        compiled for that target (its `codegen`), else for the session's."""
        program = parse_program(Source(name, code), self._ids)
        checked = check_program(program, self._env())
        stages = self._pipeline(program, checked, stop_after,
                                targets.get(target) if target else None)
        if entry is None:
            return stages
        if entry not in checked.schemes:
            raise AccelNameError(f"`{entry}` is not defined by this program (it defines "
                                 f"{', '.join(checked.schemes) or 'nothing'})")
        return [replace(stage, program=_forms_binding(stage.program, entry))
                for stage in stages]

    def _pipeline(self, program: ast.Program, checked: CheckResult, stop_after: str | None,
                  target: targets.Target | None = None):
        definitions = {n: g.form for n, g in self._globals.items() if isinstance(g.form, ast.Def)}
        # the types of earlier cells too: a pass may inline their defs
        checked = replace(checked, types=ChainMap(checked.types, self._types),
                          instantiations=ChainMap(checked.instantiations, self._instantiations))
        record = target or self.target_record
        options = Options(global_reps=self._global_reps(), seq_inner=record.seq_inner,
                          segmented_filter=record.segmented_filter, hist=record.hist)
        passes = compiler.default_passes()
        if record.codegen is not None:         # the target's own codegen stage (`cuda`)
            passes = [record.codegen() if p.name == "codegen" else p for p in passes]
        return compiler.run_pipeline(program, checked, self._env(), definitions, self._ids,
                                     passes, options=options, stop_after=stop_after)

    def _global_reps(self) -> dict[str, Any]:
        """The flat representation of every global let's value (read off its flat form, or
        computed once from its interp form: `HostValue.rep`)."""
        reps = {name: entry.value.rep for name, entry in self._globals.items()
                if entry.kind == "let"}
        return {name: rep for name, rep in reps.items() if rep is not None}

    @_accel_errors_only("bind")
    def bind(self, values: dict[str, HostValue], doc: str) -> CellResult:
        """Make each name a global let holding a value from outside accel (`%load`, `%%python`,
        `%%accel --in`). AccelNameError for a name that is not an accel identifier or names a
        def, builtin or keyword; the defs that read a rebound let are type checked again
        (an AccelError, and nothing changes, when one no longer checks)."""
        for name in values:
            entry = self._globals.get(name)
            if (not name.isidentifier() or name in KEYWORDS or name in BUILTINS
                    or (entry is not None and entry.kind != "let")):
                what = "a def or builtin" if entry is not None or name in BUILTINS else \
                    "a keyword" if name in KEYWORDS else "not an accel name"
                raise AccelNameError(f"cannot bind `{name}`: it is {what}")
        checked = CheckResult(schemes={n: Scheme((), v.type) for n, v in values.items()})
        compiled = _Compiled(ast.Program(()), checked, self._recheck_dependents(checked))
        result = self._commit(compiled, None, kind="let")
        for name, value in values.items():
            self._globals.pop(name, None)
            self._globals[name] = _Global(name, "let", checked.schemes[name], value,
                                          frozenset(), None, doc)
        result.defined = list(values)
        return result

    def global_value(self, name: str) -> Any:
        """The stored value of a global: a let's `HostValue`, a def's function value."""
        return self._globals[name].value

    def snapshot(self) -> "_Snapshot":
        """The session's state (its globals, target, budget, schedule and cluster), for
        `restore`: the kernel makes a whole cell, meta-commands included, one transaction
        with it."""
        return _Snapshot(self.target_record, dict(self._globals), self.budget, self.schedule,
                         self.cluster)

    def restore(self, snapshot: "_Snapshot") -> None:
        """Put back the state of `snapshot` (what a failed cell changed is undone). The types
        of nodes are kept (they are keyed by node ids, never reused); the host values are
        shared (never changed); the compiled calls are dropped."""
        self.target_record = snapshot.target
        self.memory.schedule = snapshot.schedule
        if snapshot.cluster is not self.cluster:      # a cluster the cell named is closed
            self.set_cluster(snapshot.cluster)       # (one closed by it starts again on use)
        if snapshot.budget != self.budget:
            self.set_budget(snapshot.budget)
        self._globals.clear()
        self._globals.update(snapshot.globals)
        self._flat_calls.clear()

    def reset(self) -> None:
        """Forget every user global (the prelude stays)."""
        self._flat_calls.clear()
        self._memos.clear()
        for name in [n for n, g in self._globals.items() if g.kind != "prelude"]:
            del self._globals[name]

    # ------------------------------------------------------------------ stages of a cell

    def _env(self, extra: dict[str, Scheme] | None = None,
             extra_deps: dict[str, frozenset[str]] | None = None) -> GlobalEnv:
        schemes = {n: g.scheme for n, g in self._globals.items()}
        deps = {n: g.deps for n, g in self._globals.items()}
        schemes.update(extra or {})
        deps.update(extra_deps or {})
        return GlobalEnv(schemes=schemes, deps=deps)

    def _compile(self, code: str, name: str) -> _Compiled:
        source = Source(name, code)
        program = parse_program(source, self._ids)
        checked = check_program(program, self._env())
        return _Compiled(program, checked, self._recheck_dependents(checked), source)

    def _recheck_dependents(self, checked: CheckResult) -> dict[str, CheckResult]:
        """Type check again, in definition order, every def that uses a redefined def."""
        changed = {n for n in checked.schemes if n in self._globals}
        schemes, deps = dict(checked.schemes), dict(checked.deps)
        rechecked: dict[str, CheckResult] = {}
        for entry in self._globals.values():
            if entry.kind == "let" or entry.name in checked.schemes:
                continue
            if not (entry.deps & changed):
                continue
            try:
                result = check_program(ast.Program((entry.form,)), self._env(schemes, deps))
            except AccelError as err:
                culprits = ", ".join(sorted(entry.deps & changed))
                err.message = (f"`{entry.name}` uses {culprits}, redefined by this cell, and no "
                               f"longer type checks: {err.message}")
                raise
            rechecked[entry.name] = result
            schemes[entry.name] = result.schemes[entry.name]
            changed.add(entry.name)
        return rechecked

    def _interpreter(self, types, instantiations):
        from .backends.interp import Interpreter
        values = {n: g.value for n, g in self._globals.items()}
        return Interpreter(values, types, instantiations, cancel=self.cancel)

    def _evaluate(self, compiled: _Compiled, stages: list | None = None):
        """Run the cell: its bindings (a let's value as a `HostValue`, a def's function value)
        and its results (`HostValue`s), and the stages it ran (None on `interp`; `stages`
        given: those, compiled before for the same cell)."""
        if not self.target_record.reference and compiled.program.forms \
                and not self._loading_prelude:
            return self._evaluate_flat(compiled, stages)
        types = ChainMap(compiled.checked.types, self._types)
        instantiations = ChainMap(compiled.checked.instantiations, self._instantiations)
        for result in compiled.rechecked.values():
            types.maps.insert(0, result.types)
            instantiations.maps.insert(0, result.instantiations)
        values = self._interpreter(types, instantiations).run_forms(compiled.program.forms)
        checked = compiled.checked
        for form in compiled.program.forms:
            if isinstance(form, ast.GlobalLet):
                for name in ast.pattern_names(form.pattern):
                    values.bindings[name] = HostValue.of(INTERP, values.bindings[name],
                                                         checked.schemes[name].type)
        values.results[:] = [HostValue.of(INTERP, v, t)
                             for v, t in zip(values.results, checked.expr_types)]
        return values, None

    def _check_facts(self, compiled: _Compiled) -> None:
        """Run the cell's core program on the fact-checking interpreter (`check_facts`)."""
        from .backends.interp.facts import check_facts
        try:
            stages = self._pipeline(compiled.program, compiled.checked, stop_after="regularity")
        except NotImplementedError:
            return
        types = ChainMap(*[r.types for r in compiled.rechecked.values()], self._types)
        instantiations = ChainMap(*[r.instantiations for r in compiled.rechecked.values()],
                                  self._instantiations)
        check_facts(stages, {n: g.value for n, g in self._globals.items()}, types,
                    instantiations, cancel=self.cancel)

    def _evaluate_flat(self, compiled: _Compiled, stages: list | None):
        """Run a cell on a compiled target (its program compiled through the target's
        `last_stage`, then its `run`: `numpy` runs the flat IR with numpy, `cpu` the fused
        program with numba kernels). The values stay as the target gave them: `HostValue`s
        of its `value_form`, converted only when something reads them in another form."""
        from .backends.interp.evaluator import CellValues
        from .backends.interp.model import DefFunc
        target = self.target_record
        target.check_compiler()
        started = time.perf_counter()
        if stages is None:
            stages = self._pipeline(compiled.program, compiled.checked,
                                    stop_after=target.last_stage)
        env = self._flat_globals(_stage(stages, "regularity").program, target.value_form)
        compiled_at = time.perf_counter()
        out, compile_seconds = target.run(stages[-1].program, env, self.memory, self.cancel,
                                          self.compile_options)
        self.last_compile = (compiled_at - started) + compile_seconds
        values = CellValues()
        checked = compiled.checked
        for form in compiled.program.forms:
            if isinstance(form, ast.Def):
                values.bindings[form.name] = DefFunc(form, {})
            elif isinstance(form, ast.GlobalLet):
                for name in ast.pattern_names(form.pattern):
                    values.bindings[name] = HostValue.of(target.value_form, out.bindings[name],
                                                         checked.schemes[name].type)
        values.results.extend(HostValue.of(target.value_form, v, t)
                              for v, t in zip(out.results, checked.expr_types))
        if target.counts_costs:
            values.costs = out.counters      # work and depth, as the interpreter's
            self.last_counters = out.counters
        return values, stages

    def _flat_globals(self, core: ast.Program, form: str = FLAT) -> dict[str, Any]:
        """The global lets the core program `core` reads, in the value form `form` of the
        target that reads them: as they are when they are in that form already (a global
        made by a compiled target), else converted once (`HostValue.get` keeps it)."""
        used = {n.name for f in core.forms for n in ast.walk(f) if isinstance(n, ast.Var)}
        return {name: entry.value.get(form) for name in used
                if (entry := self._globals.get(name)) is not None and entry.kind == "let"}

    @deep
    @_accel_errors_only("call")
    def call_flat(self, name: str, args: list[Any], params: list[Type],
                  target: targets.Target = targets.TRACED) -> Any:
        """Call the global def `name` on a compiled target (`numpy` or `cpu`) with flat
        arguments of the concrete types `params` (the target's `from_host` makes them from
        numpy and Awkward arrays); gives the flat result. The call is compiled as a def whose
        parameters are annotated with those types, sized where the argument is rectangular
        (so a regular argument keeps a regular representation), and cached (on `cpu` with
        its compiled kernels)."""
        from .backends import numpy as flat_numpy
        stages, env = self._flat_call_stages(name, args, params, target)
        form = stages[-1].program.forms[0]
        target.check_compiler()
        counters = flat_numpy.Counters()
        out = target.call(stages[-1].program, form, args, env, self.memory, self.cancel,
                          counters, self._flat_calls, self.compile_options)
        if target.counts_costs:
            self.last_counters = counters
        return out

    @deep
    @_accel_errors_only("flat_run")
    def flat_call_run(self, name: str, args: list[Any], params: list[Type], result: Type):
        """`call_flat` traced: a `viz.flat_run.FlatRun` of the call, with the interpreter's
        work and depth for the same call."""
        from .backends import numpy as flat_numpy
        from .viz.flat_run import FlatRun
        stages, env = self._flat_call_stages(name, args, params)
        form = stages[-1].program.forms[0]
        counters = flat_numpy.Counters(trace=[])
        fields: dict[str, Any] = {"stages": stages, "inputs": {
            p.name: a for p, a in zip(form.params, args)}}
        try:
            out = flat_numpy.call(form, args, env, counters=counters, cancel=self.cancel)
            fields["result"] = HostValue.of(FLAT, out, result).text()
        except AccelError as err:
            fields["error"] = err.format().splitlines()[0]
        interp = self._interpreter(self._types, self._instantiations)
        values = [flat_numpy.from_flat(a, t) for a, t in zip(args, params)]
        try:
            interp.call(interp_of(self._globals[name].value), values)
            fields["interp_work"], fields["interp_depth"] = interp.costs.work, interp.costs.depth
        except AccelError:
            pass
        return FlatRun.from_counters(stages[-1], counters, **fields)

    def _flat_call_stages(self, name: str, args: list[Any], params: list[Type],
                          target: targets.Target = targets.TRACED):
        """The stages (through the target's last stage) of the wrapper def that calls `name`
        on flat arguments of these types and representations, and the globals it reads;
        cached until the globals change."""
        from .backends.numpy.boundary import rep_of_flat
        reps = [rep_of_flat(a, t) for a, t in zip(args, params)]
        annotations = [_annotation(t, r, f"s{k}_") for k, (t, r) in enumerate(zip(params, reps))]
        key = (name, tuple(annotations), target.name)
        if key not in self._flat_calls:
            form = self._globals[name].form
            own = [p.name for p in getattr(form, "params", ())[:len(args)]
                   if isinstance(p, ast.PVar)]       # the def's own names, when it has them
            names = own if len(set(own)) == len(args) else [f"p{k}" for k in range(len(args))]
            text = (f"def accel_call_ " + " ".join(f"({p}: {a})" for p, a in
                                                  zip(names, annotations))
                    + f" = {name} {' '.join(names)}")
            compiled = self._compile(text, f"<call of {name}>")
            stages = self._pipeline(compiled.program, compiled.checked,
                                    stop_after=target.last_stage, target=target)
            core = _stage(stages, "regularity").program
            self._flat_calls[key] = (stages, self._flat_globals(core, target.value_form))
        return self._flat_calls[key]

    def _commit(self, compiled: _Compiled, values, kind: str) -> CellResult:
        self._flat_calls.clear()
        checked = compiled.checked
        for result in [checked, *compiled.rechecked.values()]:
            self._types.update(result.types)
            self._instantiations.update(result.instantiations)
        result = CellResult()
        replaced = [n for n in checked.schemes if n in self._globals]
        for form in compiled.program.forms:
            for bound in bound_names(form):
                self._globals.pop(bound, None)   # re-insert at the end: definition order
                self._globals[bound] = _Global(
                    name=bound, kind=kind if isinstance(form, ast.Def) else "let",
                    scheme=checked.schemes[bound], value=values.bindings[bound],
                    deps=checked.deps.get(bound, frozenset()), form=form,
                    doc=_doc_comment(form))
                result.defined.append(bound)
        for dependent, recheck in compiled.rechecked.items():
            old = self._globals[dependent]
            self._globals[dependent] = _Global(
                name=old.name, kind=old.kind, scheme=recheck.schemes[dependent],
                value=old.value, deps=old.deps, form=old.form, doc=old.doc)
        if replaced:
            note = f"redefined {', '.join(replaced)}"
            if compiled.rechecked:
                note += f"; dependents now using the new definition: {', '.join(compiled.rechecked)}"
            result.notes.append(note)
        if checked.expr_types and values is not None and values.results:
            result.host, result.type = values.results[-1], checked.expr_types[-1]
        return result

    def _load_prelude(self) -> None:
        text = resources.files("accel_kernel").joinpath("prelude.accel").read_text()
        compiled = self._compile(text, "prelude.accel")
        self._loading_prelude = True          # the prelude is definitions: interp keeps them
        self._commit(compiled, self._evaluate(compiled)[0], kind="prelude")
        self._loading_prelude = False

    def _info(self, entry: _Global) -> GlobalInfo:
        return GlobalInfo(entry.name, entry.kind, show_scheme(entry.scheme), entry.doc)



def _stage(stages: list, name: str):
    return next(s for s in stages if s.name == name)


def _annotation(t: Type, rep: Any, prefix: str, outer: bool = True) -> str:
    """Accel syntax for the concrete type `t`, with a size name on every dimension that the
    value's representation `rep` shows to be rectangular: `[s0_0][s0_1]f64`, `[][s0_1]f64`
    (ragged rows), `[]f64`; arrays of tuples get no sizes. `outer=False`: the outer dimension of `rep` is the
    concatenation of a segmented level's rows, so it is not one size."""
    from .ir.flat import Regular, Segmented, TupleRep
    from .lang import types as T
    if isinstance(rep, TupleRep) and isinstance(t, T.Tuple):
        return "(" + ", ".join(_annotation(e, r, f"{prefix}{k}_", outer)
                               for k, (e, r) in enumerate(zip(t.elems, rep.parts))) + ")"
    if isinstance(rep, Regular) and isinstance(t, T.Array):
        dims, inner = [], t
        while isinstance(inner, T.Array):
            dims.append(f"[{prefix}{len(dims)}]" if dims or outer else "[]")
            inner = inner.elem
        return "".join(dims) + T.show(inner)
    if isinstance(rep, Segmented) and isinstance(t, T.Array):
        return "[]" + _annotation(t.elem, rep.inner, prefix + "i", outer=False)
    return T.show(t)


def _forms_binding(program, entry: str):
    """The forms of a stage's program that bind `entry` (an AST or a flat program)."""
    if isinstance(program, ast.Program):
        return ast.Program(tuple(f for f in program.forms if entry in bound_names(f)))
    if not hasattr(program, "forms"):            # the codegen stage: one module for all
        return program
    from dataclasses import replace
    return replace(program, forms=tuple(f for f in program.forms if entry in f.names))


def _doc_comment(form: ast.TopForm) -> str:
    """The `--` comment lines directly above a definition, joined: its one-line doc."""
    span = form.span
    if span is None:
        return ""
    lines: list[str] = []
    line = span.line - 1
    while line >= 1:
        text = span.source.line_text(line).strip()
        if not text.startswith("--"):
            break
        lines.insert(0, text.lstrip("-").strip())
        line -= 1
    if lines:
        return " ".join(lines)
    return f"defined at {span.location()}"
