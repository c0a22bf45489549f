"""Compile units of a generated module: the cache is by kernel, not by program.

A unit is one numba function of the module (`@njit`) with the numba functions it calls,
their names made canonical: the functions `fn_0` (the unit's own), `fn_1`, ... in the order
they are first called, the parameters and locals of each `v_0`, `v_1`, ... in the order they
first appear, comments dropped (`ast.unparse`). So the same kernel in two programs, two cells
or two processes is one source text, hashed into one file name, imported once per process
and compiled once by numba (its `cache=True` keeps the machine code beside the file). The
main module keeps everything else (the host functions) and imports each numba function from
its unit under its own name:

    split(source) -> Split(main, units)     # units: {module name: source}
    unit_sources(source, selected) -> {function name: unit source | None}

A module with no numba functions (the `cuda` target's) is left whole. Nothing here runs
code; `driver.load` writes and imports what this returns.
"""
from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from typing import Callable

PREFIX = "accel_unit_"


@dataclass(frozen=True)
class Split:
    main: str                        # the module without its numba functions
    units: dict[str, str]            # unit module name -> its source


def split(source: str) -> Split:
    units = unit_sources(source, _jitted)
    if not units or None in units.values():        # none, or one this does not follow
        return Split(source, {})
    names = {name: PREFIX + hashlib.sha256(text.encode()).hexdigest()[:16]
             for name, text in units.items()}
    tree = ast.parse(source)
    imports = [f"from {names[name]} import fn_0 as {name}" for name in units]
    rest = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name in units)]
    docstring = ast.get_docstring(tree)
    body = [ast.unparse(s) for s in rest if not _is_docstring(s)]
    main = ([repr(docstring)] if docstring else []) + imports + body
    return Split("\n".join(main) + "\n", {names[n]: units[n] for n in units})


def unit_sources(source: str, selected: Callable[[ast.FunctionDef], bool]
                 ) -> dict[str, str | None]:
    """Every selected module-level function of `source` by name: the source of its unit
    (the module's imports and assignments, then it and the selected functions it calls,
    transitively, in canonical names), or None where a call names a parameter of one of
    the unit's functions (a keyword argument: the renamed parameter would not match). The
    `cuda` target's PTX check keys its kernels by the same texts (`ptx.kernel_keys`)."""
    tree = ast.parse(source)
    functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef) and selected(s)}
    preamble = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom, ast.Assign))]
    head = "\n".join(ast.unparse(s) for s in preamble)
    return {name: _unit_source(name, functions, head) for name in functions}


def _jitted(fn: ast.FunctionDef) -> bool:
    for decorator in fn.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name) and target.id == "njit":
            return True
    return False


def _is_docstring(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def _unit_source(root: str, functions: dict[str, ast.FunctionDef], head: str) -> str | None:
    """The unit of `root`: the preamble, then its functions in canonical names."""
    order = [root]
    for name in order:                       # breadth first, in the order of the calls
        for called in _loads(functions[name]):
            if called in functions and called not in order:
                order.append(called)
    if any(isinstance(n, ast.Call) and n.keywords and isinstance(n.func, ast.Name)
           and n.func.id in functions for name in order for n in ast.walk(functions[name])):
        return None
    canonical = {name: f"fn_{i}" for i, name in enumerate(order)}
    texts = [ast.unparse(_Canonical(canonical).visit(_copy(functions[name])))
             for name in order]
    return head + "\n\n\n" + "\n\n\n".join(texts) + "\n"


def _loads(fn: ast.FunctionDef) -> list[str]:
    return [n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _copy(fn: ast.FunctionDef) -> ast.FunctionDef:
    return ast.parse(ast.unparse(fn)).body[0]          # type: ignore[return-value]


class _Canonical(ast.NodeTransformer):
    """Renames, inside one function, the unit's functions and the function's own names
    (parameters and whatever it assigns); globals (np, prange, math, ...) stay."""

    def __init__(self, functions: dict[str, str]):
        self.functions = functions
        self.local: dict[str, str] = {}

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        if self.local:                       # a nested function: renamed with its parent
            return self.generic_visit(node)  # type: ignore[return-value]
        bound = [a.arg for a in (*node.args.posonlyargs, *node.args.args,
                                 *node.args.kwonlyargs)]
        bound += [n.id for n in ast.walk(node)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))]
        for name in bound:
            self.local.setdefault(name, f"v_{len(self.local)}")
        node.name = self.functions[node.name]
        for decorator in node.decorator_list:
            self.visit(decorator)
        node.args = self.visit(node.args)
        node.body = [self.visit(s) for s in node.body]
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.local.get(node.arg, node.arg)
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.local.get(node.id) or self.functions.get(node.id) or node.id
        return node
