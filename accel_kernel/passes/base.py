"""What every pass is made of: the rewrite log, the options, the context a pass runs in, its
output and the `Pass` protocol (the driver that runs the passes is `compiler.py`).

A pass is a name and `run(program, ctx) -> PassOutput`:

- A *transforming* pass (`desugar`) gives a new program. The driver type checks it again:
  that is the verification after the pass, and it gives every new node its type. A program
  that no longer checks is a bug of that pass, reported as `PassError` naming it.
- An *analysis* pass (`shape`, `regularity`) gives the program back unchanged plus `facts`:
  one fact per node id (a shape descriptor, a regularity triple). Facts accumulate: the
  `regularity` stage still knows every node's shape.
- A pass that gives another IR (`flatten` gives a `FlatProgram`) cannot be type checked: it
  verifies its own output (`verify(program) -> list[str]`, problems as text) and keeps the
  types and facts of its input. When such a pass raises `NotImplementedError` (a construct it
  does not handle yet), the pipeline ends before it unless that stage was asked for by name.

Every IR node keeps its source span and its id through all stages; a node a pass creates gets
a fresh id from `PassContext.fresh_id`. Every rule application goes through the one rewriter,
`with ctx.log.apply("NAME", node) as step: ... step.after = new`, which logs it under its name
(the string literal at the place the rule is written, so grep finds the rule) with the node
before and after and the span, so that the views can step through a pass one rule at a time;
no pass writes steps by hand. A pass reads nothing but its arguments: no environment
variables, no globals, no imports of `viz/`, `kernel/` or `backends/` (a back end's own
passes import this module, not the other way round).
"""
from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping, Protocol

from ..lang import ast
from ..lang.printer import print_expr, print_form, print_pattern
from ..lang.source import Span
from ..lang.typecheck import GlobalEnv
from ..lang.types import Type


# ---------------------------------------------------------------- the rewrite log

@dataclass(frozen=True)
class Step:
    """One rule application: which rule, on which node, the text before and after (`before`
    and `after`, printed from the nodes when first read: a cell's compile takes many steps
    and most logs are never shown; printing every one took a fifth of a def's compile)."""
    stage: str
    rule: str                         # e.g. "comprehension-expand", "S1", "GENERATE-2"
    node: int                         # id of the node the rule applied to (0: the program)
    before_node: ast.Node | str = field(repr=False)     # what `before` and `after` print
    after_node: ast.Node | str = field(repr=False)
    span: Span | None = None
    changed: tuple[int, ...] = ()     # ids of the nodes the step created or gave a new fact
    note: str = ""                    # why, in words (a fallback's reason, a refused rewrite)

    @functools.cached_property
    def before(self) -> str:
        """Accel-like text."""
        return show_node(self.before_node)

    @functools.cached_property
    def after(self) -> str:
        return show_node(self.after_node)

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


@dataclass
class Application:
    """A rule being applied (what `RewriteLog.apply` yields): the rule's code sets `after`, the
    node or text it made; it may also say which nodes it made (`changed`, by default the id of
    `after`), refine the `note`, or pick the more specific of the names written at the call
    (`rule`)."""
    rule: str
    before: ast.Node | str
    node: ast.Node | None                   # the node the step is about (its id and span)
    note: str = ""
    after: ast.Node | str = ""
    changed: tuple[int, ...] = ()


class RewriteLog:
    """The steps of one pass, in the order they were taken: the one rewriter every pass applies
    its rules through."""

    def __init__(self, stage: str):
        self.stage = stage
        self.steps: list[Step] = []

    @contextmanager
    def apply(self, rule: str, before: ast.Node | str, *, node: ast.Node | None = None,
              note: str = "", changed: tuple[int, ...] = (),
              first: bool = False) -> Iterator[Application]:
        """Apply the rule named `rule` to `before`: the body of the `with` makes the new node
        and sets `after`; when it ends, the application is logged. `node` (by default
        `before`, when that is a node) locates the step by its id and span. With `first`, the
        step goes where the rule began, before the steps of the rules applied inside it (a
        pre-order log). A rule that raises was not applied: nothing is logged for it."""
        where = node if node is not None else (before if isinstance(before, ast.Node) else None)
        application = Application(rule, before, where, note, changed=changed)
        index = len(self.steps)
        yield application
        step = self._step(application)
        if first:
            self.steps.insert(index, step)
        else:
            self.steps.append(step)

    def _step(self, a: Application) -> Step:
        changed = a.changed
        if not changed and isinstance(a.after, ast.Node) and a.after.id:
            changed = (a.after.id,)
        return Step(stage=self.stage, rule=a.rule, node=a.node.id if a.node is not None else 0,
                    before_node=a.before, after_node=a.after,
                    span=a.node.span if a.node is not None else None, changed=changed,
                    note=a.note)

    def mark(self) -> int:
        """Where the log is now, to come back to (`rollback`) when an attempt is undone."""
        return len(self.steps)

    def rollback(self, mark: int) -> None:
        """Forget the steps taken since `mark`."""
        del self.steps[mark:]

    def forget(self, ids: set[int]) -> None:
        """Nodes a later rule removed are no longer among what the earlier steps made."""
        self.steps[:] = [replace(step, changed=tuple(i for i in step.changed if i not in ids))
                         for step in self.steps]


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
    # FUSE-SEGMENTED-FILTER (fuse): a filter over the elements of a segmented kernel joins it.
    # Off for the `cuda` target, whose filter kernels run over elements, not segments
    segmented_filter: bool = True
    # FUSE-HIST (fuse): a `reduce_by_index` joins the kernel that makes its indices. Off for
    # the `cuda` target, whose kernel writer has no histogram kernel (its reduce_by_index is
    # a library call, atomics or sorted runs)
    hist: bool = True


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
