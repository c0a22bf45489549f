"""Running chosen passes on a program text as a session would, and finding bindings."""
from __future__ import annotations

from accel_kernel.compiler import run_pipeline
from accel_kernel.lang import ast
from accel_kernel.lang import types as T
from accel_kernel.lang.parser import parse_program
from accel_kernel.lang.source import Source
from accel_kernel.lang.typecheck import check_program
from accel_kernel.session import Session


def stages_of(text: str, passes, session: Session | None = None):
    """The stages of `text` through `passes` only, checked against a session's globals."""
    session = session or Session()
    program = parse_program(Source("test", text), session._ids)
    checked = check_program(program, session._env())
    definitions = {n: g.form for n, g in session._globals.items() if isinstance(g.form, ast.Def)}
    return run_pipeline(program, checked, session._env(), definitions, session._ids,
                        list(passes))


def binding(stage, name: str) -> ast.Node:
    """The first `def` or pattern variable called `name` in the stage's program."""
    for form in stage.program.forms:
        for node in ast.walk(form):
            if isinstance(node, (ast.Def, ast.PVar)) and node.name == name:
                return node
    raise KeyError(name)


def unseq(t: T.Type) -> T.Type:
    """Sequences are shown as arrays at the top level."""
    if isinstance(t, (T.Seq, T.Array)):
        return T.Array(unseq(t.elem))
    if isinstance(t, T.Tuple):
        return T.Tuple(tuple(unseq(e) for e in t.elems))
    return t
