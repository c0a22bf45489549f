"""Graphviz DOT of one compilation stage (`compiler.Stage`): pure, no rendering here.

The drawing is a data-flow graph of the stage's program, top to bottom:

- one node per IR expression that matters: an application (`map`, `reduce`, `iota`, a def),
  an array literal, a range, an `if`, an update, a let-bound value (named `n = ...`). Scalar
  sub-expressions (`x * x + 1`, `zs[j]`, `length`-free arithmetic) are folded into the node
  that uses them, literals and global functions into its text; a variable is an edge from the
  node that binds it (a parameter, a let, a generator, a loop variable).
- a lambda passed to an operation, a loop body and a comprehension are clusters; the lambda's
  result flows into the operation by a dashed edge. Shapes: rounded box an operation,
  ellipse a bound variable, pentagon an input (parameter, global value), square box a
  condition (guard, `while`) with a dotted edge; a double border is the result.
- every node shows `#id` (the IR node's stable id, the same in every stage and in the text
  view's source listing), its text, its type, and what the stage knows about it (a shape, a
  regularity triple); its tooltip is the source line it came from.
- the colours are the stage's own (`colourings.COLOURINGS`): a new stage only needs a
  `Colouring` there.

`stage_dot(stage, highlight=..., known=...)` gives the DOT; `highlight` draws nodes with a thick
magenta border (the `%step` views), `known` limits the facts shown to those node ids (an
analysis seen half way through its rewrite log). The output is deterministic.
"""
from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping

from ..compiler import Stage, previous_stage
from ..lang import ast
from ..lang import types as T
from ..lang.builtins import BUILTINS
from ..lang.printer import print_expr, print_pattern
from .colourings import COLOURINGS, DEFAULT_COLOURING, Colouring, NodeInfo, has_array

FONT = "Helvetica,Arial,sans-serif"
CODE_FONT = "Menlo,Consolas,DejaVu Sans Mono,monospace"
HIGHLIGHT = "#d6006f"
WRAP = 30            # characters per line of a node's text
MAX_LINES = 3


# ---------------------------------------------------------------- the graph

@dataclass
class GraphNode:
    name: str                          # DOT node name
    id: int                            # IR node id shown as #id
    kind: str                          # op | input | binder | guard
    text: str
    span: Any = None
    members: set[int] = field(default_factory=set)   # ids folded into this node
    bound: str = ""                    # `n` of `let n = ...`
    result: bool = False               # the value of a def or top-level expression


@dataclass
class Cluster:
    name: str
    label: str
    id: int = 0
    tooltip: str = ""
    nodes: list[str] = field(default_factory=list)
    clusters: list["Cluster"] = field(default_factory=list)


@dataclass(frozen=True)
class Operand:
    """How a sub-expression appears in its user: an edge from `node` (or none), and the AST
    printed in the user's text in its place."""
    node: str | None
    text: ast.Expr


class _Builder:
    def __init__(self, types: Mapping[int, T.Type]):
        self.types = types
        self.nodes: dict[str, GraphNode] = {}
        self.edges: dict[tuple[str, str], str] = {}   # (from, to) -> kind: data | fn | guard
        self.root = Cluster("root", "")
        self.inputs: dict[str, str] = {}
        self.order: list[tuple[str, str]] = []        # invisible edges: form below form

    # -- nodes and edges

    def add(self, cluster: Cluster, node: GraphNode) -> str:
        if node.name in self.nodes:            # an id drawn twice (a shared node): keep one
            return node.name
        self.nodes[node.name] = node
        cluster.nodes.append(node.name)
        return node.name

    def edge(self, source: str | None, target: str, kind: str = "data") -> None:
        if source is not None and source != target:
            self.edges.setdefault((source, target), kind)

    def global_input(self, var: ast.Var) -> str:
        if var.name not in self.inputs:
            name = f"g_{var.name}"
            self.inputs[var.name] = name
            self.nodes[name] = GraphNode(name, var.id, "input", var.name, var.span, {var.id})
            self.root.nodes.insert(0, name)
        return self.inputs[var.name]

    # -- types

    def def_type(self, form: ast.Def) -> str:
        parts = [self.types.get(p.id) for p in form.params] + [self.types.get(form.body.id)]
        if any(t is None for t in parts):
            return ""
        return " : " + " -> ".join(T.show(t) if not isinstance(t, T.Func) else
                                   f"({T.show(t)})" for t in parts)

    def type_of(self, e: ast.Node) -> T.Type | None:
        return self.types.get(e.id)

    def is_function(self, e: ast.Expr) -> bool:
        t = self.type_of(e)
        if t is not None:
            return isinstance(t, T.Func)
        return isinstance(e, (ast.Lambda, ast.OpFunc, ast.LeftSection, ast.RightSection))

    def foldable(self, e: ast.Expr) -> bool:
        """A scalar expression without binders or operations worth a node of their own: it is
        printed inside the node that uses it."""
        if isinstance(e, (ast.Lit, ast.Var, ast.OpFunc)):
            return True
        if isinstance(e, (ast.LeftSection, ast.RightSection)):
            return all(self.foldable(c) for c in ast.children(e) if _is_expr(c))
        if not isinstance(e, (ast.BinOp, ast.UnOp, ast.Index, ast.Project, ast.TupleLit,
                              ast.If, ast.Apply, ast.Ascribe)):
            return False
        t = self.type_of(e)
        if t is not None and (has_array(t) or isinstance(t, T.Func)):
            return False
        if t is None and (isinstance(e, ast.Apply) or getattr(e, "op", "") == "++"):
            return False
        if isinstance(e, ast.Apply):
            # `f x y` of scalars folds, and `length xs`; an operation taking a function or
            # an array does not
            if e.fn == ast.Var("length") and isinstance(e.args[0], ast.Var):
                return True
            if any(self.is_function(a) or self._array_typed(a) for a in e.args):
                return False
        return all(self.foldable(c) for c in ast.children(e) if _is_expr(c))

    def _array_typed(self, e: ast.Expr) -> bool:
        t = self.type_of(e)
        return t is not None and has_array(t)

    # -- expressions

    def operand(self, e: ast.Expr, env: dict[str, str], cluster: Cluster) -> Operand:
        """Draw `e` (as far as it needs nodes) and say how its user refers to it."""
        if isinstance(e, ast.Var):
            if e.name in env:
                return Operand(env[e.name], e)
            if self.is_global_function(e):
                return Operand(None, e)
            return Operand(self.global_input(e), e)
        if isinstance(e, (ast.Lit, ast.OpFunc)):
            return Operand(None, e)
        if isinstance(e, (ast.LeftSection, ast.RightSection)) and self.foldable(e):
            return Operand(None, e)
        if isinstance(e, ast.Let):
            env = dict(env)
            self.bind(e.pattern, e.value, env, cluster, e)
            return self.operand(e.body, env, cluster)
        if isinstance(e, ast.Lambda):
            return Operand(self.lambda_(e, env, cluster), ast.Var("λ"))
        if isinstance(e, ast.Loop):
            return self.placeholder(self.loop(e, env, cluster), e)
        if isinstance(e, ast.Comprehension):
            return self.placeholder(self.comprehension(e, env, cluster), e)
        if isinstance(e, ast.Ascribe):
            inner = self.operand(e.expr, env, cluster)
            if inner.node is not None and inner.node in self.nodes:
                self.nodes[inner.node].members.add(e.id)
            return inner
        return self.placeholder(self.op_node(e, env, cluster), e)

    def placeholder(self, node: str, e: ast.Expr) -> Operand:
        return Operand(node, ast.Var(f"#{self.nodes[node].id}"))

    def is_global_function(self, var: ast.Var) -> bool:
        """Library names and global functions are text; global values are input nodes."""
        if var.name in BUILTINS and var.name not in self.inputs:
            return True
        t = self.type_of(var)
        return isinstance(t, T.Func)

    def op_node(self, e: ast.Expr, env: dict[str, str], cluster: Cluster,
                kind: str = "op") -> str:
        """One node for `e`: foldable sub-expressions in its text, the others as edges."""
        members = {e.id}
        sources: list[tuple[str, str]] = []
        params: list[str] = []              # of lambdas passed to this operation

        def sub(child: ast.Node) -> ast.Node:
            if not _is_expr(child):
                return child
            if self.foldable(child):
                for var in _free_vars(child):
                    op = self.operand(var, env, cluster)
                    if op.node is not None:
                        sources.append((op.node, "data"))
                members.update(n.id for n in ast.walk(child))
                return child
            op = self.operand(child, env, cluster)
            if isinstance(child, ast.Lambda):
                params.extend(f"n{p.id}" for p in child.params)
            if op.node is not None:
                sources.append((op.node, "fn" if isinstance(child, ast.Lambda) else "data"))
            return op.text

        if self.foldable(e):
            shown = sub(e)
        elif _constant(e):                  # a literal array: one node, however nested
            shown = e
            members.update(n.id for n in ast.walk(e))
        else:
            shown = _map_children(e, sub)
        name = self.add(cluster, GraphNode(f"n{e.id}", e.id, kind, _show(shown), e.span,
                                           members))
        for source, edge_kind in sources:
            self.edge(source, name, edge_kind)
            # the operation's data goes into its lambda: drawn above it
            if edge_kind == "data":
                self.order.extend((source, param) for param in params if param in self.nodes)
        return name

    def value_node(self, e: ast.Expr, env: dict[str, str], cluster: Cluster) -> str:
        """A node of its own for `e` (a let-bound value, a result), even for a variable."""
        op = self.operand(e, env, cluster)
        if op.node is not None and self.nodes[op.node].kind == "op" \
                and not self.nodes[op.node].bound and op.text is not e:
            return op.node
        return self.op_node(e, env, cluster)

    def bind(self, pattern: ast.Pattern, value: ast.Expr, env: dict[str, str],
             cluster: Cluster, where: ast.Node) -> None:
        node = self.value_node(value, env, cluster)
        self.nodes[node].bound = _pattern_text(pattern)
        self.nodes[node].members.update(p.id for p in ast.walk(pattern))
        for name in ast.pattern_names(pattern):
            env[name] = node

    def binder(self, pattern: ast.Pattern, env: dict[str, str], cluster: Cluster,
               text: str | None = None, kind: str = "binder",
               source: str | None = None, node_id: int | None = None) -> str:
        ident = pattern.id if node_id is None else node_id
        name = self.add(cluster, GraphNode(
            f"n{ident}", ident, kind, text if text is not None else _pattern_text(pattern),
            pattern.span, {n.id for n in ast.walk(pattern)}))
        self.edge(source, name)
        for var in ast.pattern_names(pattern):
            env[var] = name
        return name

    def lambda_(self, e: ast.Lambda, env: dict[str, str], cluster: Cluster) -> str:
        params = " ".join(print_pattern(p) for p in e.params)
        inner = Cluster(f"cluster_{e.id}", f"#{e.id} \\{params} ->", e.id,
                        _tooltip(e.span))
        cluster.clusters.append(inner)
        env = dict(env)
        for p in e.params:
            self.binder(p, env, inner)
        result = self.value_node(e.body, env, inner)
        self.nodes[result].members.add(e.id)
        return result

    def loop(self, e: ast.Loop, env: dict[str, str], cluster: Cluster) -> str:
        init = self.operand_or_node(e.init, env, cluster)
        form = e.form
        inner = Cluster(f"cluster_{e.id}", f"#{e.id} loop", e.id, _tooltip(e.span))
        cluster.clusters.append(inner)
        env = dict(env)
        self.binder(e.pattern, env, inner, source=init.node,
                    text=f"{_pattern_text(e.pattern)} = {_show(init.text)}")
        if isinstance(form, ast.ForRange):
            bound = self.operand_or_node(form.bound, env, cluster)
            name = self.add(inner, GraphNode(f"n{form.id}", form.id, "binder",
                                             f"for {form.var} < {_show(bound.text)}",
                                             form.span, {form.id}))
            self.edge(bound.node, name)
            env[form.var] = name
        elif isinstance(form, ast.ForIn):
            array = self.operand_or_node(form.array, env, cluster)
            self.binder(form.pattern, env, inner, source=array.node,
                        text=f"for {_pattern_text(form.pattern)} in {_show(array.text)}")
        guard = None
        if isinstance(form, ast.While):
            guard = self.op_node(form.cond, env, inner, kind="guard")
            self.nodes[guard].text = "while " + self.nodes[guard].text
            self.nodes[guard].members.add(form.id)
        result = self.value_node(e.body, env, inner)
        head = _show(replace(e, init=init.text, body=ast.Var("…")))
        head = head.split(" do ")[0] if " do " in head else head
        node = self.add(cluster, GraphNode(f"n{e.id}", e.id, "op", head, e.span, {e.id}))
        self.edge(result, node, "fn")
        self.edge(guard, node, "guard")
        return node

    def operand_or_node(self, e: ast.Expr, env: dict[str, str], cluster: Cluster) -> Operand:
        """Foldable expressions stay text (with edges from their variables merged later by
        the caller); the rest get nodes."""
        if self.foldable(e) and not isinstance(e, ast.Var):
            vars_ = [self.operand(v, env, cluster) for v in _free_vars(e)]
            nodes = [v.node for v in vars_ if v.node is not None]
            if len(nodes) <= 1:
                return Operand(nodes[0] if nodes else None, e)
            return self.placeholder(self.op_node(e, env, cluster), e)
        return self.operand(e, env, cluster)

    def comprehension(self, e: ast.Comprehension, env: dict[str, str],
                      cluster: Cluster) -> str:
        inner = Cluster(f"cluster_{e.id}", f"#{e.id} comprehension", e.id,
                        _tooltip(e.span))
        cluster.clusters.append(inner)
        env = dict(env)
        guards: list[str] = []
        for branch in e.branches:
            for q in branch:
                if isinstance(q, ast.Generator):
                    source = self.operand_or_node(q.source, env, inner)
                    node = self.binder(q.pattern, env, inner, source=source.node,
                                       text=f"{_pattern_text(q.pattern)} <- "
                                            f"{_show(source.text)}")
                    self.nodes[node].members.add(q.id)
                elif isinstance(q, ast.Guard):
                    guard = self.op_node(q.cond, env, inner, kind="guard")
                    self.nodes[guard].members.add(q.id)
                    guards.append(guard)
                else:
                    self.bind(q.pattern, q.value, env, inner, q)
        body = self.value_node(e.body, env, inner)
        text = f"[{_show(ast.Var('#' + str(self.nodes[body].id)))} | …]"
        node = self.add(cluster, GraphNode(f"n{e.id}", e.id, "op", text, e.span, {e.id}))
        self.edge(body, node, "fn")
        for guard in guards:
            self.edge(guard, node, "guard")
        return node

    # -- top level

    def forms(self, forms: Iterable[ast.TopForm]) -> None:
        """Draw the forms one below the other: invisible edges from each form's result to
        the nodes of the next that nothing feeds, so that a program is tall, not wide."""
        previous: str | None = None
        for form in forms:
            before = set(self.nodes)
            result = self.form(form)
            fed = {target for _, target in self.edges}
            for name in self.nodes:
                if previous is not None and name not in before and name not in fed:
                    self.order.append((previous, name))
            previous = result or previous

    def form(self, form: ast.TopForm) -> str | None:
        """Draw one top-level form; its result node."""
        env: dict[str, str] = {}
        if isinstance(form, ast.Def):
            head = " ".join(["def", form.name, *(print_pattern(p) for p in form.params)])
            label = f"#{form.id} {head}" + self.def_type(form)
            cluster = Cluster(f"cluster_{form.id}", label, form.id, _tooltip(form.span))
            self.root.clusters.append(cluster)
            for p in form.params:
                self.binder(p, env, cluster, kind="input")
            result = self.value_node(form.body, env, cluster)
            self.nodes[result].result = True
            return result
        if isinstance(form, ast.GlobalLet):
            self.bind(form.pattern, form.value, env, self.root, form)
            names = ast.pattern_names(form.pattern)
            for name in names:
                self.inputs[name] = env[name]          # later forms use it as an edge
            return env[names[0]] if names else None
        if isinstance(form, ast.TopExpr):
            result = self.value_node(form.expr, env, self.root)
            self.nodes[result].result = True
            self.nodes[result].members.add(form.id)
            return result
        return None


def _is_expr(node: ast.Node) -> bool:
    return not isinstance(node, (ast.TScalar, ast.TArray, ast.TTuple, ast.TFunc, ast.TSeq,
                                 ast.PVar, ast.PWild, ast.PTuple))


def _constant(e: ast.Expr) -> bool:
    return all(isinstance(n, (ast.Lit, ast.ArrayLit, ast.TupleLit, ast.UnOp))
               for n in ast.walk(e))


def _free_vars(e: ast.Expr) -> list[ast.Var]:
    """The variables of a binder-free expression, first occurrence of each name."""
    seen: dict[str, ast.Var] = {}
    for node in ast.walk(e):
        if isinstance(node, ast.Var) and node.name not in seen:
            seen[node.name] = node
    return list(seen.values())


def _map_children(e: ast.Expr, fn: Callable[[ast.Node], ast.Node]) -> ast.Expr:
    changes: dict[str, Any] = {}
    for name in e.__dataclass_fields__:
        if name in ("span", "id"):
            continue
        value = getattr(e, name)
        if isinstance(value, ast.Node):
            changes[name] = fn(value)
        elif isinstance(value, tuple) and value and isinstance(value[0], ast.Node):
            changes[name] = tuple(fn(v) for v in value)
    return replace(e, **changes)


def _show(e: ast.Expr) -> str:
    try:
        return print_expr(e)
    except (TypeError, AttributeError, KeyError):     # a node kind the printer lacks
        return type(e).__name__


def _pattern_text(p: ast.Pattern) -> str:
    return print_pattern(p) if p.annot is None else print_pattern(replace(p, annot=None))


def _tooltip(span: Any) -> str:
    if span is None:
        return ""
    line = span.line
    text = span.source.line_text(line).strip()
    where = f"line {line}" if not span.source.name.endswith(".accel") \
        else f"{span.source.name} line {line}"
    return f"{where}: {text}"


# ---------------------------------------------------------------- DOT text

def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _h(text: str) -> str:
    return html.escape(text, quote=False)


def _wrap(text: str, width: int = WRAP) -> list[str]:
    lines = textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES]
        lines[-1] = lines[-1][:width - 1] + "…"
    return lines


def _label(node: GraphNode, type_text: str, extra: str, compact: bool = False) -> str:
    text = f"{node.bound} = {node.text}" if node.bound else node.text
    # an ellipse is about 1.4 times as wide as its text: narrower lines keep it small
    lines = _wrap(text, WRAP - 8 if node.kind == "binder" else WRAP)
    first = _h(lines[0]) if compact else f'<b>#{node.id}&#160;</b>{_h(lines[0])}'
    rows = [first, *(_h(line) for line in lines[1:])]
    small = [line for x in (type_text, extra) if x
             for line in textwrap.wrap(x, WRAP + 8, break_on_hyphens=False)[:MAX_LINES]]
    body = '<br align="left"/>'.join(rows)
    for line in small:
        body += (f'<br align="left"/><font point-size="9" color="#333333">'
                 f'{_h(line)}</font>')
    return f"<{body}<br align=\"left\"/>>"


_SHAPES = {"op": "box", "input": "invhouse", "binder": "ellipse", "guard": "box"}


def stage_dot(stage: Stage, *, highlight: Iterable[int] = (), known: set[int] | None = None,
              types: Mapping[int, T.Type] | None = None, title: str | None = None,
              previous: str | None = None, run: Any = None, compact: bool = False) -> str:
    """The DOT text of a stage. `types` stands in for the stage's own when it has none (the
    `parse` stage, drawn with the types of `typed` so that both have the same nodes). `run`
    (a `viz.flat_run.FlatRun`) adds the values on real data to a flat program's nodes.
    `compact` (slides) leaves out the node ids and the types: a node shows its text and
    what the stage knows about it."""
    if previous is None:
        previous = previous_stage(stage.name)
    if not isinstance(stage.program, ast.Program):      # a flat program (`flatten` on)
        from .flat_views import flat_dot
        from .flat_run import format_flat
        values = run.labels() if run is not None else None
        inputs = {n: format_flat(v, 8) for n, v in run.inputs.items()} if run else None
        return flat_dot(stage, highlight=highlight, title=title, values=values, inputs=inputs,
                        previous=previous, compact=compact)
    use_types = stage.types or types or {}
    builder = _Builder(use_types)
    builder.forms(stage.program.forms)
    colouring = COLOURINGS.get(stage.name, DEFAULT_COLOURING)
    source_ids = {n.id for form in stage.source.forms for n in ast.walk(form)}
    highlighted = set(highlight)

    out = ["digraph accel {",
           f'  graph [rankdir=TB, fontname="{FONT}", fontsize=11, nodesep=0.25, ranksep=0.3,'
           ' newrank=true, labeljust=l, labelloc=t, pad=0.1];',
           f'  node [fontname="{FONT}", fontsize=11, margin="0.09,0.04", height=0.3,'
           ' style="filled,rounded", penwidth=1, color="#555555"];',
           '  edge [color="#666666", arrowsize=0.6, penwidth=1];',
           "  " + _graph_label(stage, colouring, title, previous) + ";"]

    def facts_of(ids: Iterable[int]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for analysis, facts in stage.facts.items():
            for i in ids:
                if i in facts and (known is None or i in known):
                    found[analysis] = facts[i]
                    break
        return found

    def emit_node(name: str, indent: str) -> None:
        node = builder.nodes[name]
        # the facts of the expression the node stands for; a binder's are its pattern's
        ids = [node.id] if node.kind in ("op", "guard") else \
            [node.id, *sorted(node.members - {node.id})]
        t = use_types.get(node.id) if stage.types else None
        info = NodeInfo(node.id, node.kind, t, facts_of(ids), node.id not in source_ids)
        look = colouring.look(info)
        type_text = T.show(t) if t is not None and node.kind != "guard" and not compact \
            else ""
        style = ["filled"]
        if node.kind == "op":
            style.append("rounded")

        if look.dashed:
            style.append("dashed")
        attrs = [f"label={_label(node, type_text, look.extra, compact)}",
                 f"shape={_SHAPES.get(node.kind, 'box')}",
                 f'fillcolor="{look.fill}"', f'style="{",".join(style)}"']
        tooltip = _tooltip(node.span)
        if tooltip:
            attrs.append(f"tooltip={_quote(tooltip)}")
        if highlighted & ({node.id} | node.members):
            attrs.append(f'color="{HIGHLIGHT}", penwidth=3.5')
        if node.result:
            attrs.append("peripheries=2")
        out.append(f"{indent}{name} [{', '.join(attrs)}];")

    def emit_cluster(cluster: Cluster, indent: str) -> None:
        for name in cluster.nodes:
            emit_node(name, indent)
        for sub in cluster.clusters:
            out.append(f"{indent}subgraph {sub.name} {{")
            label = sub.label.split(" ", 1)[1] if compact else sub.label    # no `#id`
            attrs = [f"label={_quote(label)}", 'style="rounded"', 'color="#999999"',
                     "fontsize=10", f'fontname="{CODE_FONT}"']
            if sub.tooltip:
                attrs.append(f"tooltip={_quote(sub.tooltip)}")
            out.append(f"{indent}  graph [{', '.join(attrs)}];")
            emit_cluster(sub, indent + "  ")
            out.append(f"{indent}}}")

    emit_cluster(builder.root, "  ")
    for (source, target), kind in builder.edges.items():
        if kind == "fn":
            # no rank constraint: a function's body hangs beside the operation that takes
            # it, and the data flow is a spine on the left, not one tall column
            out.append(f'  {source} -> {target} [style=dashed, color="#7a7acc", '
                       'constraint=false];')
        elif kind == "guard":
            out.append(f'  {source} -> {target} [style=dotted, arrowhead=tee];')
        else:
            out.append(f"  {source} -> {target};")
    for source, target in builder.order:       # layout only: ranks, no horizontal pull
        out.append(f"  {source} -> {target} [style=invis, weight=0];")
    out.append("}")
    return "\n".join(out) + "\n"


def _graph_label(stage: Stage, colouring: Colouring, title: str | None,
                 previous: str | None) -> str:
    head = title or f"stage {stage.name}"
    if not stage.changed and previous:
        head += f" (unchanged from {previous})"
    cells = [f'<td align="left" colspan="{max(1, len(colouring.legend))}">'
             f'<b>{_h(head)}</b></td>']
    rows = [f"<tr>{''.join(cells)}</tr>"]
    if colouring.legend:
        legend = "".join(
            f'<td bgcolor="{e.fill}" border="1" cellpadding="2"'
            + (' style="dashed"' if e.dashed else "")
            + f'><font point-size="9">{_h(e.text)}</font></td>'
            for e in colouring.legend)
        rows.append(f"<tr>{legend}</tr>")
    return ('label=<<table border="0" cellborder="0" cellspacing="3" cellpadding="1">'
            + "".join(rows) + "</table>>")


def node_ids(stage: Stage, types: Mapping[int, T.Type] | None = None) -> dict[int, set[int]]:
    """The ids drawn as nodes in the stage's graph, each with the ids folded into it (for the
    source listing and the step views)."""
    if not isinstance(stage.program, ast.Program):
        from .flat_views import flat_node_ids
        return flat_node_ids(stage)
    builder = _Builder(stage.types or types or {})
    builder.forms(stage.program.forms)
    found = {node.id: set(node.members) for node in builder.nodes.values()}
    pending = list(builder.root.clusters)
    while pending:
        cluster = pending.pop()
        found.setdefault(cluster.id, {cluster.id})
        pending.extend(cluster.clusters)
    return found
