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

A module with no numba functions (the `cuda` target's) is left whole. Nothing here runs
code; `driver.load` writes and imports what this returns.
"""
from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass

PREFIX = "accel_unit_"


@dataclass(frozen=True)
class Split:
    main: str                        # the module without its numba functions
    units: dict[str, str]            # unit module name -> its source


def split(source: str) -> Split:
    tree = ast.parse(source)
    numba = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef) and _jitted(s)}
    if not numba:
        return Split(source, {})
    preamble = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom, ast.Assign))]
    head = "\n".join(ast.unparse(s) for s in preamble)
    units, imports = {}, []
    for name in numba:
        text = _unit_source(name, numba, head)
        module = PREFIX + hashlib.sha256(text.encode()).hexdigest()[:16]
        units[module] = text
        imports.append(f"from {module} import fn_0 as {name}")
    rest = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name in numba)]
    docstring = ast.get_docstring(tree)
    body = [ast.unparse(s) for s in rest if not _is_docstring(s)]
    main = ([repr(docstring)] if docstring else []) + imports + body
    return Split("\n".join(main) + "\n", units)


def _jitted(fn: ast.FunctionDef) -> bool:
    for decorator in fn.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name) and target.id == "njit":
            return True
    return False


def _is_docstring(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def _unit_source(root: str, numba: dict[str, ast.FunctionDef], head: str) -> str:
    """The unit of `root`: the preamble, then its functions in canonical names."""
    order = [root]
    for name in order:                       # breadth first, in the order of the calls
        for called in _loads(numba[name]):
            if called in numba and called not in order:
                order.append(called)
    functions = {name: f"fn_{i}" for i, name in enumerate(order)}
    texts = [ast.unparse(_Canonical(functions).visit(_copy(numba[name])))
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
