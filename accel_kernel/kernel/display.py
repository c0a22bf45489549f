"""Mime bundles and tracebacks the kernel sends: pure functions from results to dicts/strings.

- `result_bundle(value, type)`: `text/plain` (accel value syntax; past `MAX_TEXT_ELEMS`
  elements, like numpy, the first and last `EDGE_ITEMS` of every level and then the sized
  type: `[0, 1, 2, ..., 49999998, 49999999] : [50000000]i64`) and `text/html` (the type
  above the value; a table for 1-D and 2-D regular arrays of scalars, nested lists for ragged
  arrays, truncated past `MAX_ROWS`/`MAX_COLS` with an ellipsis; everything escaped).
  `value` is a session's `host.HostValue` (a flat array is read through a `FlatView`: only
  the elements shown are read, nothing is converted) or an interp value.
- `who_bundle(infos)`: the `%who` table.
- `error_content(err)`: the `ename`/`evalue`/`traceback` of an `error` message for an
  AccelError (headline with location, source line, caret line).
"""
from __future__ import annotations

import html
from typing import Any

from ..lang import types as T
from ..lang.errors import AccelError

MAX_ROWS = 20
MAX_COLS = 20
MAX_TEXT_ELEMS = 1000      # text/plain of an array of more elements is summarized (numpy's)
EDGE_ITEMS = 3             # ... showing this many first and last elements at every level

RED, RESET = "\x1b[31m", "\x1b[0m"

_STYLE = ("<style>.accel-value table{border-collapse:collapse;font-family:monospace}"
          ".accel-value td,.accel-value th{padding:1px 6px;text-align:right}"
          ".accel-value th{color:#888;font-weight:normal}"
          ".accel-type{color:#666;font-family:monospace;margin-bottom:2px}"
          ".accel-value ol{margin:0;padding-left:1.5em;font-family:monospace}</style>")


# ---------------------------------------------------------------- values

def result_bundle(value: Any, type: T.Type) -> dict[str, str]:
    """The execute_result data of a value of the given type (a `HostValue` or interp)."""
    value = _shown(value)
    return {"text/plain": value_text(value, type), "text/html": value_html(value, type)}


def _shown(value: Any) -> Any:
    """What the display reads of a value: a `HostValue`'s view (flat arrays read in place)."""
    from ..host import HostValue
    return value.view() if isinstance(value, HostValue) else value


def value_text(value: Any, type: T.Type) -> str:
    """Accel syntax; a value of more than `MAX_TEXT_ELEMS` array elements summarized as
    numpy does: `EDGE_ITEMS` first and last elements of every array, then its sized type."""
    from ..values import format_value
    value = _shown(value)
    if _elements(value, MAX_TEXT_ELEMS) <= MAX_TEXT_ELEMS:
        return format_value(value, type)
    return (f"{format_value(value, type, max_elems=2 * EDGE_ITEMS)} : "
            f"{sized_type(value, type)}")


def _elements(value: Any, limit: int) -> int:
    """How many scalars `value` holds (an array of tuples read flat: how many tuples); the
    counting stops past `limit`."""
    from ..values import is_array
    value = _listed(value)
    if isinstance(value, tuple):
        total = 0
        for part in value:
            total += _elements(part, limit - total)
            if total > limit:
                break
        return total
    if not is_array(value):
        return 1                                # a scalar
    if hasattr(value, "size"):                  # a FlatView: its buffers know
        return value.size
    if not len(value) or not (is_array(value[0]) or isinstance(value[0], tuple)):
        return len(value)
    total = 0
    for row in value:
        total += _elements(row, limit - total)
        if total > limit:
            break
    return total


def sized_type(value: Any, type: T.Type) -> str:
    """`type` with the size of every rectangular array level: `[50000000]i64`, `[3][4]f64`,
    `[3][]i64` (ragged rows); a sequence's type as it is."""
    if isinstance(type, T.Seq):                 # a sequence has no sizes in its type
        return T.show(type)
    if isinstance(type, T.Tuple) and isinstance(value, tuple):
        return "(" + ", ".join(sized_type(v, t) for v, t in zip(value, type.elems)) + ")"
    if not isinstance(type, T.Array):
        return T.show(type)
    rank = T.array_rank(type)
    shape = _shape(value, rank) or (len(value),)
    dims = [f"[{n}]" for n in shape] + ["[]"] * (rank - len(shape))
    return "".join(dims) + T.show(_innermost(type))


def _listed(value: Any) -> Any:
    """An interp sequence as the list of its elements (a sequence shows as its array)."""
    from ..backends.interp.model import Sequence
    return list(value.items) if isinstance(value, Sequence) else value


def _shape(value: Any, rank: int) -> tuple[int, ...] | None:
    """The shape of the top `rank` levels of an array when they are rectangular."""
    from ..values import regular_shape
    if hasattr(value, "regular_shape"):         # a FlatView: read off its offsets
        return value.regular_shape(rank)
    return regular_shape(value, rank)


def value_html(value: Any, type: T.Type) -> str:
    body = _html(_shown(value), type)
    return (f"{_STYLE}<div class=\"accel-value\"><div class=\"accel-type\">: "
            f"{_e(T.show(type))}</div>{body}</div>")


def _html(value: Any, type: T.Type) -> str:
    from ..values import format_value, is_array
    if isinstance(type, T.Seq):
        value, type = (value if is_array(value) else list(value)), T.Array(type.elem)
    if isinstance(type, T.Array) and is_array(value):
        rank = T.array_rank(type)
        inner = _innermost(type)
        if rank <= 2 and isinstance(inner, T.Scalar):
            shape = _shape(value, rank)
            if shape is not None:
                return _table(value, rank, inner)
        return _nested_list(value, type)
    return f"<code>{_e(format_value(value, type, max_elems=MAX_COLS))}</code>"


def _innermost(t: T.Type) -> T.Type:
    while isinstance(t, T.Array):
        t = t.elem
    return t


def _table(value: list, rank: int, scalar: T.Type) -> str:
    """A 1-D array as one row, a 2-D regular array as rows; indices as headers."""
    from ..values import format_value
    if rank == 1:
        rows, shape = [value], f"{len(value)}"
    else:
        rows, shape = value, f"{len(value)} × {len(value[0]) if value else 0}"
    if not rows or not rows[0]:
        return f"<code>[]</code> <span class=\"accel-type\">(shape {shape})</span>"
    cols = len(rows[0])
    col_idx = _elided_indices(cols, MAX_COLS)
    row_idx = _elided_indices(len(rows), MAX_ROWS)
    header = "".join("<th>…</th>" if j is None else f"<th>{j}</th>" for j in col_idx)
    out = ["<table>", f"<tr>{'<th></th>' if rank == 2 else ''}{header}</tr>"]
    for i in row_idx:
        if i is None:
            out.append(f"<tr>{'<th>⋮</th>' if rank == 2 else ''}"
                       + "<td>⋮</td>" * len(col_idx) + "</tr>")
            continue
        cells = "".join("<td>…</td>" if j is None
                        else f"<td>{_e(format_value(rows[i][j], scalar))}</td>"
                        for j in col_idx)
        out.append(f"<tr>{f'<th>{i}</th>' if rank == 2 else ''}{cells}</tr>")
    out.append("</table>")
    return "".join(out) + f"<div class=\"accel-type\">shape {shape}</div>"


def _elided_indices(n: int, limit: int) -> list[int | None]:
    """0..n-1, or its first and last `limit // 2` with None (an ellipsis) between."""
    if n <= limit:
        return list(range(n))
    half = limit // 2
    return [*range(half), None, *range(n - half, n)]


def _nested_list(value: list, type: T.Type) -> str:
    """A ragged (or non-scalar) array: one list item per row, each row as accel text."""
    from ..values import format_value
    elem = type.elem if isinstance(type, T.Array) else None
    items = []
    for i in _elided_indices(len(value), MAX_ROWS):
        if i is None:
            items.append("<li style=\"list-style:none\">⋮</li>")
        else:
            items.append(f"<li value=\"{i}\"><code>"
                         f"{_e(format_value(value[i], elem, max_elems=MAX_COLS))}</code></li>")
    if not items:
        return "<code>[]</code>"
    return f"<ol start=\"0\">{''.join(items)}</ol>"


# ---------------------------------------------------------------- %who

def who_bundle(infos: list) -> dict[str, str]:
    """A table of GlobalInfo (name, kind, type) as text/plain and text/html."""
    if not infos:
        return {"text/plain": "no user globals", "text/html": "<p>no user globals</p>"}
    rows = [(g.name, g.kind, g.type) for g in infos]
    widths = [max(len(r[k]) for r in [("name", "kind", "type"), *rows]) for k in range(2)]
    lines = [f"{'name'.ljust(widths[0])}  {'kind'.ljust(widths[1])}  type"]
    lines += [f"{n.ljust(widths[0])}  {k.ljust(widths[1])}  {t}" for n, k, t in rows]
    body = "".join(f"<tr><td><code>{_e(n)}</code></td><td>{_e(k)}</td>"
                   f"<td><code>{_e(t)}</code></td></tr>" for n, k, t in rows)
    table = ("<table><tr><th style=\"text-align:left\">name</th>"
             "<th style=\"text-align:left\">kind</th><th style=\"text-align:left\">type</th>"
             f"</tr>{body}</table>")
    return {"text/plain": "\n".join(lines), "text/html": table}


# ---------------------------------------------------------------- errors

def error_content(err: AccelError) -> dict[str, Any]:
    """ename/evalue/traceback for an accel error: `KIND at cell[3]:1:5: message`, the line,
    the caret line."""
    return {"ename": err.kind, "evalue": err.message,
            "traceback": [f"{RED}{err.headline()}{RESET}", *err.excerpt()]}


def plain_error(ename: str, message: str) -> dict[str, Any]:
    """An error without a source position (meta-commands, internal errors)."""
    lines = message.split("\n")
    return {"ename": ename, "evalue": message,
            "traceback": [f"{RED}{ename}: {lines[0]}{RESET}", *lines[1:]]}


def _e(text: str) -> str:
    return html.escape(text, quote=True)
