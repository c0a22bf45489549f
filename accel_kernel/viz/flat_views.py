"""Views of a flat stage (`flatten` on): the program is a `FlatProgram` (`ir/flat.py`).

- `flat_dot(stage, highlight=...)`: Graphviz DOT, one node per statement labelled `#id op`
  with what it binds and their reps, filled by representation: regular green, irregular
  orange, avoided (computed once, outside the maps it came from) or scalar grey. Segment
  descriptors (offsets, segment ids, lengths) are their own nodes, drawn as yellow notes.
  Parameters and globals are inputs (pentagons); `if` blocks and loop bodies are clusters; a
  form's result has a double border. Edges go from the statement that binds a variable to
  each statement that reads it. A legend sits on top.
- `flat_text(stage)`: a header line, then the program as `ir/flat_printer` prints it.
- `flat_json(stage)`: `{"stage", "changed", "bindings": {NAME: {"rep", "representation",
  "op", "id", "location"}}, "nodes": [...], "steps": [...]}`; `representation` is
  `"regular"`, `"irregular"`, `"avoided"` or `"scalar"`.
- `flat_node_ids(stage)`: the ids drawn (statements), for the source listing.

Pure: text in, text out, as `graphs.py`.
"""
from __future__ import annotations

import html
from typing import Any, Iterable, Mapping

from ..compiler import Stage
from ..ir import flat as F
from ..ir.flat_printer import print_flat, print_op
from .colourings import GREEN, GREY, ORANGE, WHITE, YELLOW

KERNEL_FILL = "#eef3fb"       # the box of a fused kernel
KERNEL_LINE = "#3b6fb6"

FONT = "Helvetica,Arial,sans-serif"
HIGHLIGHT = "#d6006f"
DESCRIPTOR_OPS = (F.Offsets, F.SizesToOffsets, F.SegmentIds, F.SegmentIota, F.Lengths)
_FILL = {"regular": GREEN, "irregular": ORANGE, "scalar": GREY, "avoided": GREY}
WRAP_AFTER = 12           # a form of more statements is drawn in columns
COLUMN_STATEMENTS = 9     # of about this many statements each
MAX_COLUMNS = 3
COLUMNS_HINT = "// columns-hint: "


def avoided_ids(stage: Stage) -> set[int]:
    """The statements made by AVOID steps: code computed once, outside its maps."""
    out: set[int] = set()
    for step in stage.steps:
        if step.rule == "AVOID":
            out.update(step.changed)
    return out


def descriptor_names(program: F.FlatProgram) -> set[str]:
    """Variables that are segment descriptors: made by a descriptor operation, or used as
    the offsets of an operation."""
    out: set[str] = set()
    for stmt in statements(program):
        op = stmt.op
        if isinstance(op, DESCRIPTOR_OPS):
            out.update(t.name for t in stmt.targets)
        if isinstance(op, (F.SegFilter, F.SegLibrary)):
            out.add(stmt.targets[0].name)
        for name in ("offsets",):
            value = getattr(op, name, None)
            if isinstance(value, F.FVar):
                out.add(value.name)
    return out


def statements(program: F.FlatProgram) -> Iterable[F.Stmt]:
    for form in program.forms:
        yield from _block_stmts(form.body)


def _block_stmts(block: F.Block) -> Iterable[F.Stmt]:
    for stmt in block.stmts:
        yield stmt
        for inner in _blocks(stmt.op):
            yield from _block_stmts(inner)


def _blocks(op: Any) -> list[F.Block]:
    return F.blocks_of(op)


def representation_of(stmt: F.Stmt, avoided: set[int], descriptors: set[str]) -> str:
    if any(t.name in descriptors for t in stmt.targets):
        return "descriptor"
    if stmt.id in avoided:
        return "avoided"
    if not stmt.targets:
        return "scalar"
    kinds = [F.representation(t.rep) for t in stmt.targets]
    for kind in ("irregular", "regular"):
        if kind in kinds:
            return kind
    return "scalar"


def _op_name(op: Any) -> str:
    if isinstance(op, F.Library):
        return op.name
    if isinstance(op, F.SegLibrary):
        return "seg_" + op.name
    if isinstance(op, F.If):
        return "if"
    if isinstance(op, F.Loop):
        return "loop"
    if isinstance(op, F.Kernel):
        return "kernel"
    if isinstance(op, F.Assert):
        return "assert"
    return print_op(op).split(" ", 1)[0]


# ---------------------------------------------------------------- text

def _fused(stage: Stage) -> Stage:
    """The `codegen` stage is drawn as the kernels of the program it was generated from."""
    module = stage.program
    if hasattr(module, "source"):
        from dataclasses import replace
        return replace(stage, program=module.program)
    return stage


def flat_text(stage: Stage, previous: str | None = None) -> str:
    from .text import stage_header
    if hasattr(stage.program, "source"):                 # codegen: the generated module
        return stage_header(stage, previous) + "\n" + stage.program.source
    return stage_header(stage, previous) + "\n" + print_flat(stage.program)


# ---------------------------------------------------------------- JSON

def flat_json(stage: Stage) -> dict[str, Any]:
    if hasattr(stage.program, "source"):                 # codegen: the generated module
        module = stage.program
        return {"stage": stage.name, "changed": stage.changed, "source": module.source,
                "key": module.key,
                "kernels": [{"name": k.name, "kind": k.kind, "statement": k.stmt_id,
                             "inputs": list(k.inputs), "outputs": [t.name for t in k.outputs]}
                            for k in module.kernels.values()],
                "steps": [step.to_json() for step in stage.steps]}
    avoided, descriptors = avoided_ids(stage), descriptor_names(stage.program)
    bindings: dict[str, Any] = {}
    nodes = []
    for form in stage.program.forms:
        for p in form.params:
            bindings[p.name] = {"rep": F.show_rep(p.rep), "representation":
                                F.representation(p.rep), "op": "param", "id": None,
                                "location": None}
    for stmt in statements(stage.program):
        kind = representation_of(stmt, avoided, descriptors)
        where = stmt.span.location() if stmt.span is not None else None
        for t in stmt.targets:
            rep_kind = F.representation(t.rep)
            bindings[t.name] = {
                "rep": F.show_rep(t.rep),
                "representation": "avoided" if stmt.id in avoided else rep_kind,
                "op": _op_name(stmt.op), "id": stmt.id, "location": where,
                "descriptor": t.name in descriptors}
        nodes.append({"id": stmt.id, "op": _op_name(stmt.op), "origin": stmt.origin,
                      "kind": kind, "location": where,
                      "targets": [{"name": t.name, "rep": F.show_rep(t.rep)}
                                  for t in stmt.targets]})
    return {"stage": stage.name, "changed": stage.changed, "bindings": bindings,
            "nodes": nodes, "steps": [step.to_json() for step in stage.steps]}


def flat_node_ids(stage: Stage) -> dict[int, set[int]]:
    stage = _fused(stage)
    return {stmt.id: {stmt.id} for stmt in statements(stage.program)}


# ---------------------------------------------------------------- DOT

def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _h(text: str) -> str:
    return html.escape(text, quote=False)


def _short(text: str, width: int = 44) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


class _Dot:
    def __init__(self, stage: Stage, highlight: set[int], values: Mapping[int, str],
                 inputs: Mapping[str, str], compact: bool = False):
        self.stage = stage
        self.compact = compact            # no `#id`s (slides)
        self.highlight = highlight
        self.values = values              # statement id -> its value on real data
        self.input_values = inputs        # input name -> its value
        self.avoided = avoided_ids(stage)
        self.descriptors = descriptor_names(stage.program)
        self.lines: list[str] = []
        self.edges: list[tuple[str, str]] = []
        self.binder: dict[str, str] = {}          # variable -> DOT node that binds it
        self.inputs: dict[str, str] = {}
        self.reps: dict[str, F.Rep] = {}          # variable -> its rep, where it is read
        self.buffers: dict[str, F.FVar] = {}      # a kernel's outputs (inner and outer names)
        self.kernel_of: dict[str, str] = {}       # DOT node -> the kernel box it is in
        self.current_kernel = ""
        self.column_of: dict[str, tuple[int, int]] = {}   # DOT node -> (form, column)
        self.column = (0, 0)
        self.layout: list[str] = []       # rank constraints of the columns (invisible)

    def node_name(self, stmt: F.Stmt) -> str:
        return f"s{stmt.id}" if stmt.id else f"s_{id(stmt)}"

    def input(self, var: F.FVar, indent: str) -> str:
        if var.name not in self.inputs:
            name = f"in_{len(self.inputs)}"
            self.inputs[var.name] = name
            kind = F.representation(var.rep)
            label = f"<<b>{_h(var.name)}</b><br/><font point-size=\"9\">{_h(F.show_rep(var.rep))}</font>"
            if var.name in self.input_values:
                label += f"<br/>{_value_row(self.input_values[var.name])}"
            label += ">"
            self.lines.append(f'{indent}{name} [label={label}, shape=invhouse, '
                              f'fillcolor="{_FILL.get(kind, WHITE)}", style="filled"];')
        return self.inputs[var.name]

    def uses(self, stmt: F.Stmt) -> list[str]:
        names: list[str] = []
        op = stmt.op
        for field in op.__dataclass_fields__:
            value = getattr(op, field)
            items = value if isinstance(value, tuple) else (value,)
            for item in items:
                if isinstance(item, F.FVar) and field not in ("params", "index"):
                    names.append(item.name)
                    self.reps.setdefault(item.name, item.rep)
                elif isinstance(item, F.ScalarFn):
                    names += [f.name for f in item.free]
                    self.reps.update({f.name: f.rep for f in item.free})
        return names

    def block(self, block: F.Block, indent: str, result: bool = False) -> None:
        for stmt in block.stmts:
            self.stmt(stmt, indent, result and _is_result(stmt, block))

    def columns(self, form: int, block: F.Block, indent: str) -> None:
        """A form's body; a long one in columns of about `COLUMN_STATEMENTS` statements
        (borderless clusters labelled `column k of n`, their first statements on one rank,
        each column in program order), read as a newspaper's: a long chain fits the page's
        width. Graphviz mostly keeps the columns left to right; the labels say the order."""
        stmts = block.stmts
        sizes = [len(list(_block_stmts(F.Block((stmt,), ())))) for stmt in stmts]
        total = sum(sizes)
        # (a fused program's kernels are boxes too wide and tall to stand side by side)
        if total <= WRAP_AFTER or any(isinstance(stmt.op, F.Kernel) for stmt in stmts):
            self.block(block, indent, result=True)
            return
        share = total / min(MAX_COLUMNS, -(-total // COLUMN_STATEMENTS))   # a column's
        parts: list[list[F.Stmt]] = [[]]
        done = 0
        for stmt, size in zip(stmts, sizes):
            if parts[-1] and done + size / 2 > share * len(parts):
                parts.append([])
            parts[-1].append(stmt)
            done += size
        tops: list[str] = []
        for column, part in enumerate(parts):
            self.column = (form, column)
            self.lines.append(f"{indent}subgraph cluster_columns_{form}_{column} {{")
            # Graphviz keeps the columns' order only mostly: each says which it is
            self.lines.append(f'{indent}  graph [label="column {column + 1} of {len(parts)}", '
                              'pencolor="transparent", fontcolor="#888888", fontsize=9];')
            firsts = []                  # each statement's first node (a kernel's first)
            for stmt in part:
                known = set(self.column_of)
                self.stmt(stmt, indent + "  ", _is_result(stmt, block))
                firsts += [n for n in self.column_of if n not in known][:1]
            self.lines.append(f"{indent}}}")
            tops += firsts[:1]
            self.layout += [f"  {a} -> {b} [style=invis];" for a, b in zip(firsts, firsts[1:])]
        self.column = (0, 0)
        self.lines.append(f"{indent}{{rank=same; " + "; ".join(tops) + ";}")
        # Graphviz's crossing minimisation may still put the columns right to left; a second
        # hint, an invisible node whose edges to the tops keep their order, helps in some of
        # those cases and spoils others: written as a comment that `widgets.order_columns`
        # turns on when the drawing came out in the wrong order
        head = f"columns_{form}"
        hint = [f'{head} [style=invis, shape=point, width=0, height=0, label="", ordering=out];'
                ] + [f"{head} -> {top} [style=invis];" for top in tops]
        self.lines += [f"{indent}{COLUMNS_HINT}{line}" for line in hint]

    def stmt(self, stmt: F.Stmt, indent: str, result: bool) -> None:
        name = self.node_name(stmt)
        self.kernel_of[name] = self.current_kernel
        if not isinstance(stmt.op, F.Kernel):       # a kernel is a box, not a node
            self.column_of[name] = self.column
        kind = representation_of(stmt, self.avoided, self.descriptors)
        targets = ", ".join(f"{t.name}: {F.show_rep(t.rep)}" for t in stmt.targets)
        op_text = _op_name(stmt.op)
        detail = "" if isinstance(stmt.op, (F.If, F.Loop)) else _short(print_op(stmt.op))
        if isinstance(stmt.op, F.Assert):
            detail = f"{stmt.op.kind}: {stmt.op.message}"
        rows = [f"<b>{_h(op_text)}</b>" if self.compact else
                f"<b>#{stmt.id}&#160;{_h(op_text)}</b>"]
        if targets:
            rows.append(_h(_short(targets)))
        if detail:
            rows.append(f'<font point-size="9" color="#333333">{_h(detail)}</font>')
        if stmt.id in self.values:
            rows.append(_value_row(self.values[stmt.id]))
        label = "<" + '<br align="left"/>'.join(rows) + '<br align="left"/>>'
        shape = "note" if kind == "descriptor" else \
            ("diamond" if isinstance(stmt.op, F.Assert) else "box")
        fill = YELLOW if kind == "descriptor" else _FILL.get(kind, WHITE)
        style = "filled" if shape != "box" else "filled,rounded"
        if kind == "avoided":
            style += ",dashed"
        attrs = [f"label={label}", f"shape={shape}", f'fillcolor="{fill}"', f'style="{style}"']
        if stmt.span is not None:
            attrs.append(f"tooltip={_q(stmt.span.location())}")
        if stmt.id in self.highlight:
            attrs.append(f'color="{HIGHLIGHT}", penwidth=3.5')
        if result:
            attrs.append("peripheries=2")
        if isinstance(stmt.op, F.Kernel):
            self.kernel(stmt, stmt.op, indent)
            return
        for used in self.uses(stmt):
            self.edges.append((used, name))
        if isinstance(stmt.op, (F.If, F.Loop)):
            self.lines.append(f"{indent}{name} [{', '.join(attrs)}];")
            for k, inner in enumerate(_blocks(stmt.op)):
                part = _block_name(stmt.op, k)
                self.lines.append(f"{indent}subgraph cluster_{name}_{k} {{")
                block_label = part if self.compact else f"#{stmt.id} {part}"
                self.lines.append(f'{indent}  graph [label={_q(block_label)}, '
                                  'style="rounded", color="#999999", fontsize=10];')
                if isinstance(stmt.op, F.Loop):
                    for p in stmt.op.params:
                        self.binder[p.name] = name
                    if stmt.op.index is not None:
                        self.binder[stmt.op.index.name] = name
                self.block(inner, indent + "  ")
                for a in inner.result:
                    if isinstance(a, F.FVar):
                        self.edges.append((a.name, name))
                self.lines.append(f"{indent}}}")
        else:
            self.lines.append(f"{indent}{name} [{', '.join(attrs)}];")
        for t in stmt.targets:
            self.binder[t.name] = name

    def kernel(self, stmt: F.Stmt, op: F.Kernel, indent: str) -> None:
        """A fused kernel: a box around the statements it runs as one loop nest; what it
        writes out are buffers (labelled edges)."""
        lines = ", ".join(str(n) for n in op.lines)
        label = f"kernel {op.name} ({op.kind})" + (f" · line{'s' if len(op.lines) > 1 else ''} "
                                                   f"{lines}" if lines else "")
        self.lines.append(f"{indent}subgraph cluster_kernel_{stmt.id or id(stmt)} {{")
        self.lines.append(f'{indent}  graph [label={_q(label)}, style="filled,rounded", '
                          f'fillcolor="{KERNEL_FILL}", color="{KERNEL_LINE}", penwidth=1.5, '
                          'fontsize=11];')
        outer, self.current_kernel = self.current_kernel, op.name
        self.block(op.body, indent + "  ")
        self.current_kernel = outer
        self.lines.append(f"{indent}}}")
        for t, a in zip(stmt.targets, op.body.result):
            if isinstance(a, F.FVar) and a.name in self.binder:
                self.binder[t.name] = self.binder[a.name]
                self.buffers[t.name] = t
                self.buffers[a.name] = t

    def _crosses(self, source: str, target: str) -> bool:
        return self.kernel_of.get(source, "") != self.kernel_of.get(target, "")

    def finish(self) -> list[str]:
        out = []
        seen = set()
        for used, target in self.edges:
            source = self.binder.get(used) or self.inputs.get(used)
            if source is None:
                source = self.input(F.FVar(used, self.reps.get(used, F.ScalarRep("?"))), "  ")
                out += self.lines[-1:]
                self.lines.pop()
            if (source, target) in seen or source == target:
                continue
            seen.add((source, target))
            attrs = ['style=dashed', 'color="#b08c00"'] if used in self.descriptors else []
            if self.column_of.get(source, (0, 0)) != self.column_of.get(target, (0, 0)):
                attrs.append("constraint=false")        # from one column into another
            buffer = self.buffers.get(used)
            if buffer is not None and self._crosses(source, target):
                attrs.append(f"label={_q(buffer.name + ': ' + F.show_rep(buffer.rep))}")
                attrs += ["fontsize=9", 'fontcolor="#1f4e9c"', "penwidth=1.6"]
            style = f" [{', '.join(attrs)}]" if attrs else ""
            out.append(f"  {source} -> {target}{style};")
        return out


def _value_row(text: str) -> str:
    """A value on real data, in a node of the drawing."""
    return f'<font point-size="9" color="{VALUE_COLOUR}">= {_h(text)}</font>'


VALUE_COLOUR = "#1f4e9c"


def _block_name(op: Any, k: int) -> str:
    if isinstance(op, F.If):
        return "then" if k == 0 else "else"
    if op.cond is not None:
        return "while" if k == 0 else "do"
    return "do"


def _is_result(stmt: F.Stmt, block: F.Block) -> bool:
    names = {a.name for a in block.result if isinstance(a, F.FVar)}
    return any(t.name in names for t in stmt.targets)


_LEGEND = ((GREEN, "regular"), (ORANGE, "irregular"), (GREY, "scalar / avoided"),
           (YELLOW, "segment descriptor"))


def flat_dot(stage: Stage, *, highlight: Iterable[int] = (), title: str | None = None,
             previous: str | None = None, values: Mapping[int, str] | None = None,
             inputs: Mapping[str, str] | None = None, compact: bool = False,
             **_: Any) -> str:
    """The flat program as a graph: a node per statement coloured by its representation,
    segment descriptors as yellow notes, inputs on top; with `values` (statement id -> text)
    and `inputs` (name -> text), each node also shows its value on real data. `compact`
    (slides): no `#id`s."""
    stage = _fused(stage)
    dot = _Dot(stage, set(highlight), values or {}, inputs or {}, compact)
    for k, form in enumerate(stage.program.forms):
        label = {"def": f"def {form.names[0] if form.names else ''}",
                 "let": "let " + ", ".join(form.names), "expr": "expression"}[form.kind]
        dot.lines.append(f"  subgraph cluster_form_{k} {{")
        dot.lines.append(f'    graph [label={_q(label)}, style="rounded", color="#777777", '
                         'fontsize=11];')
        for p in form.params:
            name = dot.input(p, "    ")
            dot.binder[p.name] = name
        dot.columns(k, form.body, "    ")
        dot.lines.append("  }")
        if form.kind == "let":
            for name, atom in zip(form.names, form.body.result):
                if isinstance(atom, F.FVar) and atom.name in dot.binder:
                    dot.binder[name] = dot.binder[atom.name]
    edges = dot.finish() + dot.layout
    head = title or f"stage {stage.name}"
    if not stage.changed and previous:
        head += f" (unchanged from {previous})"
    legend = "".join(f'<td bgcolor="{fill}" border="1" cellpadding="2"><font point-size="9">'
                     f"{_h(text)}</font></td>" for fill, text in _LEGEND)
    label = (f'label=<<table border="0" cellborder="0" cellspacing="3" cellpadding="1">'
             f'<tr><td align="left" colspan="{len(_LEGEND)}"><b>{_h(head)}</b></td></tr>'
             f"<tr>{legend}</tr></table>>")
    out = ["digraph flat {",
           f'  graph [rankdir=TB, fontname="{FONT}", fontsize=11, nodesep=0.25, ranksep=0.3,'
           ' newrank=true, labeljust=l, labelloc=t, pad=0.1];',
           f'  node [fontname="{FONT}", fontsize=11, margin="0.09,0.04", height=0.3,'
           ' penwidth=1, color="#555555"];',
           '  edge [color="#666666", arrowsize=0.6, penwidth=1];',
           f"  {label};"]
    return "\n".join(out + dot.lines + edges + ["}"]) + "\n"
