"""The compiler: the stages in order and the driver that runs the passes, verifying after each.

Stages, in order (`STAGES`, the one list of them: the session, the CLI, the kernel's magics
and the views read it): `parse` and `typed` are the front end (`lang/`); `desugar`, `shape`,
`regularity`, `flatten` and `fuse` are the passes of `passes/`, and `codegen` is the `cpu`
back end's (`backends/cpu/codegen.py`). A pass is a name and `run(program, ctx) ->
PassOutput`; what it may use and what it gives are in `passes/base.py`.

`run_pipeline` runs a list of passes (`default_passes()`, the pipeline as a literal list) over
a parsed and checked program and gives one `Stage` per stage: its IR, types, facts, rewrite
steps and timing. After a transforming pass it type checks the new program again (or, for a
pass that gives another IR, calls the pass's own `verify`); a program that does not verify is
a `PassError` naming the pass. A pass that raises `NotImplementedError` ends the pipeline
before its stage unless that stage was asked for by name (`stop_after`), in which case the
error goes up. This module sits above `passes/` and `backends/`: it imports both, and neither
imports it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from .lang import ast
from .lang.errors import AccelError
from .lang.typecheck import CheckResult, GlobalEnv, check_program
from .lang.types import Type
from .passes.base import Options, Pass, PassContext, PassError, RewriteLog, Step
from .runtime.deep import on_deep_stack

FRONT_END = ("parse", "typed")
# every stage, in order: the only list of them (the session, the CLI, the kernel's magics and
# the views read it through `stage_names`); `default_passes` has one pass for each after
# the front end
STAGES: tuple[str, ...] = FRONT_END + ("desugar", "shape", "regularity", "flatten", "fuse",
                                       "codegen")
LATER_STAGES: tuple[str, ...] = ()     # stages named but not built yet: refused by name


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
            from .ir.flat import blocks_of
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
    """The passes after the front end, in order: the pipeline is this literal list, one pass
    per stage of `STAGES` (tests/test_compiler.py checks that they agree)."""
    from .backends.cpu.codegen import CODEGEN
    from .passes.desugar import DESUGAR
    from .passes.flatten import FLATTEN
    from .passes.fuse import FUSE
    from .passes.regularity import REGULARITY
    from .passes.shape import SHAPE
    return [DESUGAR, SHAPE, REGULARITY, FLATTEN, FUSE, CODEGEN]


def stage_names() -> tuple[str, ...]:
    """Every stage, in order."""
    return STAGES


def previous_stage(name: str) -> str | None:
    """The stage before `name` (None for the first stage and for a name that is no stage)."""
    names = stage_names()
    index = names.index(name) if name in names else 0
    return names[index - 1] if index > 0 else None


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
