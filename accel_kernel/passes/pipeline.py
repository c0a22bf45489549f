"""The compiler pipeline: named stages, each a pure pass over the IR with a log of its rewrites.

Stages, in order (DESIGN.md, "The pipeline"): `parse`, `typed`, `desugar`, `shape`,
`regularity`, `flatten`; `fuse` and `codegen` come later. `parse` and `typed` are the front end
(`lang/`); the others are passes (`Pass`): a name and `run(program, ctx) -> PassOutput`.

- A *transforming* pass (`desugar`) gives a new program. The runner type checks it again: that
  is the verification after the pass, and it gives every new node its type. A program that no
  longer checks is a bug of that pass, reported as `PassError` naming it.
- An *analysis* pass (`shape`, `regularity`) gives the program back unchanged plus `facts`: one
  fact per node id (a shape descriptor, a regularity triple). Facts accumulate: the
  `regularity` stage still knows every node's shape.
- A pass that gives another IR (`flatten` gives a `FlatProgram`) cannot be type checked: it
  verifies its own output (`verify(program) -> list[str]`, problems as text) and keeps the
  types and facts of its input. When such a pass raises `NotImplementedError` (a construct it
  does not handle yet), the pipeline ends before it unless that stage was asked for by name
  (`stop_after`), in which case the error goes up.

Every IR node keeps its source span and its id through all stages; a node a pass creates gets a
fresh id from `PassContext.fresh_id`. Every rule application goes through `ctx.log.record`, so
that the views can step through a pass one rule at a time. A pass reads nothing but its
arguments: no environment variables, no globals, no imports of `viz/` or `kernel/`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Protocol

from ..lang import ast
from ..lang.errors import AccelError
from ..lang.printer import print_expr, print_form, print_pattern
from ..lang.source import Span
from ..lang.typecheck import CheckResult, GlobalEnv, check_program
from ..runtime.deep import on_deep_stack
from ..lang.types import Type

FRONT_END = ("parse", "typed")
LATER_STAGES: tuple[str, ...] = ()


# ---------------------------------------------------------------- the rewrite log

@dataclass(frozen=True)
class Step:
    """One rule application: which rule, on which node, the text before and after."""
    stage: str
    rule: str                         # e.g. "comprehension-expand", "S1", "GENERATE-2"
    node: int                         # id of the node the rule applied to (0: the program)
    before: str                       # accel-like text
    after: str
    span: Span | None = None
    changed: tuple[int, ...] = ()     # ids of the nodes the step created or gave a new fact
    note: str = ""                    # why, in words (a fallback's reason, a refused rewrite)

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "rule": self.rule, "node": self.node,
                "before": self.before, "after": self.after,
                "location": self.span.location() if self.span else None,
                "changed": list(self.changed), "note": self.note}


def show_node(node: ast.Node | str) -> str:
    """Accel text of a node for the log (patterns and forms included)."""
    if isinstance(node, str):
        return node
    if isinstance(node, (ast.PVar, ast.PWild, ast.PTuple)):
        return print_pattern(node)
    if isinstance(node, (ast.Def, ast.GlobalLet, ast.TopExpr)):
        return print_form(node)
    return print_expr(node)


class RewriteLog:
    """The steps of one pass, in the order they were taken."""

    def __init__(self, stage: str):
        self.stage = stage
        self.steps: list[Step] = []

    def record(self, rule: str, before: ast.Node | str, after: ast.Node | str, *,
               node: ast.Node | None = None, changed: tuple[int, ...] = (),
               note: str = "") -> None:
        """Log one rule application. `node` defaults to `before` when that is a node; its span
        and id locate the step."""
        where = node if node is not None else (before if isinstance(before, ast.Node) else None)
        if not changed and isinstance(after, ast.Node) and after.id:
            changed = (after.id,)
        self.steps.append(Step(
            stage=self.stage, rule=rule, node=where.id if where is not None else 0,
            before=show_node(before), after=show_node(after),
            span=where.span if where is not None else None, changed=changed, note=note))


# ---------------------------------------------------------------- passes

@dataclass(frozen=True)
class Options:
    """Compiler options, passed in explicitly (never read from the environment)."""
    inline_prelude: bool = True       # desugar inlines calls of prelude and user defs
    # the flat representation of each global let's value (the session's values: `[r2]` for a
    # rectangular `[][]` value), so that flatten keeps an earlier cell's regular array regular
    global_reps: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # SEQ-INNER (flatten): a per-point reduction over an unlifted array is a loop inside the
    # scalar function. Off for the `numpy` target, whose scalar functions run lane by lane
    # in Python loops: there the reduction is flattened (replicated) instead
    seq_inner: bool = True


@dataclass
class PassContext:
    """What a pass may use besides its input: fresh ids and names, options, the rewrite log,
    the types of the input program, and the definitions of the globals it may inline."""
    stage: str
    ids: Iterator[int]
    log: RewriteLog
    env: GlobalEnv
    types: Mapping[int, Type]
    instantiations: Mapping[int, Mapping[str, Type]]
    definitions: Mapping[str, ast.Def]          # global defs (prelude and user) by name
    facts: Mapping[str, Mapping[int, Any]]      # facts of the analyses run before this pass
    options: Options = field(default_factory=Options)
    _names: set[str] = field(default_factory=set)
    _next: dict[str, int] = field(default_factory=dict)      # next suffix to try, per base

    def fresh_id(self) -> int:
        return next(self.ids)

    def fresh_name(self, base: str, avoid: set[str] | frozenset[str] = frozenset()) -> str:
        """A name not used before in this pass nor in `avoid`: `base_1`, `base_2`, ..."""
        base = base.rstrip("_0123456789") or "v"
        k = self._next.get(base, 1)
        while f"{base}_{k}" in self._names or f"{base}_{k}" in avoid:
            k += 1
        self._next[base] = k + 1
        name = f"{base}_{k}"
        self._names.add(name)
        return name


@dataclass(frozen=True)
class PassOutput:
    program: Any                      # an ast.Program, or another IR (a FlatProgram)
    facts: Mapping[int, Any] = field(default_factory=dict)   # analyses only


class Pass(Protocol):
    name: str
    transforms: bool                  # True: gives a new program; False: an analysis

    def run(self, program: ast.Program, ctx: PassContext) -> PassOutput: ...


class PassError(Exception):
    """A pass produced an IR that does not verify: a compiler bug, named after the pass."""

    def __init__(self, stage: str, message: str):
        super().__init__(f"internal error: the `{stage}` pass produced an invalid program: "
                         f"{message}")
        self.stage = stage


# ---------------------------------------------------------------- stage results

@dataclass(frozen=True)
class Stage:
    """The IR after one stage, with everything the views need."""
    name: str
    program: Any                                # ast.Program; FlatProgram from `flatten` on
    types: Mapping[int, Type]
    instantiations: Mapping[int, Mapping[str, Type]]
    facts: Mapping[str, Mapping[int, Any]]      # analysis name -> node id -> fact
    steps: tuple[Step, ...]
    changed: bool                               # False: same program as the stage before
    seconds: float
    source: ast.Program                         # the parsed program, for the source listing

    def nodes(self) -> Iterator[Any]:
        """The IR nodes: AST nodes, or for a flat program its statements (each has an `id`
        and a `span`; the `codegen` stage's are those of the program it was made from)."""
        if not isinstance(self.program, ast.Program):
            from ..ir.flat import blocks_of
            program = getattr(self.program, "program", None) or self.program
            pending = [form.body for form in program.forms]
            while pending:
                block = pending.pop(0)
                for stmt in block.stmts:
                    yield stmt
                    pending += blocks_of(stmt.op)
            return
        for form in self.program.forms:
            yield from ast.walk(form)


def default_passes() -> list[Pass]:
    """The passes after the front end, in order: the pipeline is this literal list."""
    from .desugar import DESUGAR
    from .flatten import FLATTEN
    from ..backends.cpu.codegen import CODEGEN
    from .fuse import FUSE
    from .regularity import REGULARITY
    from .shape import SHAPE
    return [DESUGAR, SHAPE, REGULARITY, FLATTEN, FUSE, CODEGEN]


def stage_names() -> tuple[str, ...]:
    return FRONT_END + ("desugar", "shape", "regularity", "flatten", "fuse", "codegen")


def _analysis_changed(facts: Mapping[int, Any]) -> bool:
    return bool(facts)


@on_deep_stack                       # every stage recurses over the tree (runtime.deep)
def run_pipeline(program: ast.Program, checked: CheckResult, env: GlobalEnv,
                 definitions: Mapping[str, ast.Def], ids: Iterator[int],
                 passes: list[Pass], options: Options = Options(),
                 stop_after: str | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> list[Stage]:
    """All stages of a parsed and checked program. `env` and `definitions` are the globals the
    program was checked against (the prelude and earlier cells)."""
    stages = [
        Stage("parse", program, {}, {}, {}, (), True, 0.0, program),
        Stage("typed", program, checked.types, checked.instantiations, {}, (), True, 0.0,
              program),
    ]
    current = stages[-1]
    for p in passes:
        if stop_after in FRONT_END or (stop_after and stages[-1].name == stop_after):
            break
        started = clock()
        ctx = PassContext(stage=p.name, ids=ids, log=RewriteLog(p.name), env=env,
                          types=current.types, instantiations=current.instantiations,
                          definitions=definitions, facts=current.facts, options=options)
        try:
            out = p.run(current.program, ctx)
        except NotImplementedError:
            if stop_after is not None and stop_after not in [s.name for s in stages]:
                raise                 # the stage asked for cannot be reached: say why
            break                     # this program needs what the pass does not build yet
        if p.transforms and not isinstance(out.program, ast.Program):
            problems = p.verify(out.program) if hasattr(p, "verify") else []
            if problems:
                raise PassError(p.name, "; ".join(problems[:5]))
            types, instantiations = current.types, current.instantiations
            facts = dict(current.facts)
            changed = True
        elif p.transforms:
            types, instantiations = _verify(p.name, out.program, env)
            facts = dict(current.facts)
            changed = out.program != current.program or bool(ctx.log.steps)
        else:
            types, instantiations = current.types, current.instantiations
            facts = {**current.facts, p.name: out.facts}
            changed = _analysis_changed(out.facts)
        current = Stage(p.name, out.program, types, instantiations, facts,
                        tuple(ctx.log.steps), changed, clock() - started, program)
        stages.append(current)
    return stages


def _verify(stage: str, program: ast.Program, env: GlobalEnv):
    try:
        result = check_program(program, env)
    except AccelError as err:
        raise PassError(stage, err.format()) from None
    return result.types, result.instantiations
