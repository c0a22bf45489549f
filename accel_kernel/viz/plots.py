"""Small SVG plots as plain strings (the dashboard's and `%trace`'s): `line_plot`, one line
with its y range's two ends labelled, `series_plot`, several named lines on the same axes
with a legend under them (a cluster's workers), and `launch_timeline`, kernel launches as
bars. Pure: numbers in, SVG text out."""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Callable, Sequence


def count(n: int) -> str:
    return f"{n:,}"


def seconds_text(t: float) -> str:
    if t <= 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


@dataclass(frozen=True)
class LaunchMark:
    """One kernel launch on the timeline: `time` its start, seconds since the first event."""
    time: float
    seconds: float
    name: str
    device: str
    elements: int


PLOT_WIDTH, PLOT_HEIGHT = 300, 110
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 52, 8, 18, 16


def escape(text: str) -> str:
    return html.escape(text, quote=True)


def svg(width: int, height: int, body: str, css_class: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="{css_class}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" '
            f'font-size="10">{body}</svg>')


# the lines' colours (the first is the one line's), and the colour of "this process"
PALETTE = ("#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#7f7f7f")
THIS_PROCESS = "#ff7f0e"
_LEGEND_ROW, _LEGEND_ITEM = 13, 100      # a legend row's height, an item's width


@dataclass(frozen=True)
class Series:
    """One line of a plot; `name` labels it in the legend ("": the only line, no legend)."""
    name: str
    xs: Sequence[float]
    ys: Sequence[float]
    colour: str = PALETTE[0]


def line_plot(xs: Sequence[float], ys: Sequence[float], title: str, *, log: bool = False,
              label: Callable[[float], str] = lambda v: f"{v:.3g}",
              width: int = PLOT_WIDTH, height: int = PLOT_HEIGHT,
              css_class: str = "accel-plot") -> str:
    """A small line plot (one polyline, the y range's two ends labelled; `log`: a log10 y
    axis, for chunk sizes that double). An empty series draws the axes and "no data"."""
    return series_plot([Series("", xs, ys)], title, log=log, label=label, width=width,
                       height=height, css_class=css_class)


def series_plot(series: Sequence[Series], title: str, *, log: bool = False,
                label: Callable[[float], str] = lambda v: f"{v:.3g}",
                width: int = PLOT_WIDTH, height: int = PLOT_HEIGHT,
                css_class: str = "accel-plot") -> str:
    """`line_plot` of several lines on the same axes; named lines get a marker on their last
    point (a line of one point is still seen) and a legend under the plot."""
    left, right = MARGIN_LEFT, width - MARGIN_RIGHT
    top, bottom = MARGIN_TOP, height - MARGIN_BOTTOM
    named = [line for line in series if line.name]
    per_row = max(1, (width - left) // _LEGEND_ITEM)
    legend_rows = -(-len(named) // per_row)
    full_height = height + _LEGEND_ROW * legend_rows
    parts = [f'<text x="{left}" y="12" font-weight="bold">{escape(title)}</text>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#999"/>',
             f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#999"/>']
    for k, line in enumerate(named):
        x = left + (k % per_row) * _LEGEND_ITEM
        y = height + (k // per_row) * _LEGEND_ROW + 8
        parts.append(f'<g class="accel-legend"><title>{escape(line.name)}</title>'
                     f'<rect x="{x}" y="{y - 8}" width="8" height="8" fill="{line.colour}"/>'
                     f'<text x="{x + 11}" y="{y}">{escape(short(line.name, 15))}</text></g>')
    pairs_of = [[(x, y) for x, y in zip(line.xs, line.ys)
                 if math.isfinite(x) and math.isfinite(y) and (y > 0 or not log)]
                for line in series]
    pairs = [pair for line_pairs in pairs_of for pair in line_pairs]
    if not pairs:
        parts.append(f'<text x="{(left + right) / 2}" y="{(top + bottom) / 2}" '
                     f'text-anchor="middle" fill="#999">no data</text>')
        return svg(width, full_height, "".join(parts), css_class)

    def scale(y: float) -> float:
        return math.log10(y) if log else y
    x_low, x_high = min(x for x, _ in pairs), max(x for x, _ in pairs)
    y_low, y_high = min(y for _, y in pairs), max(y for _, y in pairs)
    s_low, s_high = scale(y_low), scale(y_high)
    if s_high == s_low:
        s_low, s_high = s_low - 1, s_high + 1
    x_span = (x_high - x_low) or 1.0

    def at(x: float, y: float) -> str:
        return (f"{left + (x - x_low) / x_span * (right - left):.1f},"
                f"{bottom - (scale(y) - s_low) / (s_high - s_low) * (bottom - top):.1f}")
    for line, line_pairs in zip(series, pairs_of):
        if not line_pairs:
            continue
        points = " ".join(at(x, y) for x, y in line_pairs)
        parts.append(f'<polyline fill="none" stroke="{line.colour}" stroke-width="1.5" '
                     f'points="{points}"/>' if not line.name else
                     f'<polyline fill="none" stroke="{line.colour}" stroke-width="1.5" '
                     f'points="{points}"><title>{escape(line.name)}</title></polyline>')
        if line.name:
            cx, cy = at(*line_pairs[-1]).split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{line.colour}"/>')
    note = f"{len(pairs)} points" + (f", {len(named)} workers" if named else "")
    parts += [f'<text x="{left - 3}" y="{top + 4}" text-anchor="end">'
              f'{escape(label(y_high))}</text>',
              f'<text x="{left - 3}" y="{bottom}" text-anchor="end">{escape(label(y_low))}</text>',
              f'<text x="{right}" y="{height - 3}" text-anchor="end" fill="#666">'
              f'{escape(note + (", log scale" if log else ""))}</text>']
    return svg(width, full_height, "".join(parts), css_class)


def short(name: str, most: int) -> str:
    """A worker's name in at most `most` characters: without an address's scheme (`tcp://`),
    then its end (the port tells two workers of one host apart)."""
    name = name.split("://", 1)[-1]
    return name if len(name) <= most else "…" + name[-(most - 1):]


def launch_timeline(launches: Sequence[LaunchMark], *, width: int = 2 * PLOT_WIDTH,
                    rows: int = 6) -> str:
    """The launches as bars on a time axis, one row per kernel name (the `rows - 1` most
    launched names, the rest together in the last row)."""
    if not launches:
        return line_plot([], [], "kernel launches", width=width, height=40,
                         css_class="accel-plot-launches")
    by_name: dict[str, int] = {}
    for mark in launches:
        by_name[mark.name] = by_name.get(mark.name, 0) + 1
    names = sorted(by_name, key=lambda n: -by_name[n])
    if len(names) > rows:
        names = names[:rows - 1] + ["(others)"]
    row_of = {name: i for i, name in enumerate(names)}
    row_height = 14
    left, right, top = 120, width - MARGIN_RIGHT, MARGIN_TOP
    height = top + row_height * len(names) + MARGIN_BOTTOM
    start = min(m.time for m in launches)
    end = max(m.time + m.seconds for m in launches)
    span = (end - start) or 1e-9
    parts = [f'<text x="4" y="12" font-weight="bold">kernel launches '
             f'(the last {len(launches)}, {escape(seconds_text(end - start))})</text>']
    for name, row in row_of.items():
        y = top + row * row_height
        shown = name if len(name) <= 20 else name[:19] + "…"
        parts.append(f'<text x="{left - 4}" y="{y + 10}" text-anchor="end">'
                     f'<title>{escape(name)}</title>{escape(shown)}</text>')
    for mark in launches:
        row = row_of.get(mark.name, len(names) - 1)
        x = left + (mark.time - start) / span * (right - left)
        w = max(1.0, mark.seconds / span * (right - left))
        parts.append(f'<rect x="{x:.1f}" y="{top + row * row_height + 2}" width="{w:.1f}" '
                     f'height="{row_height - 4}" fill="#ff7f0e"><title>{escape(mark.name)} on '
                     f'{escape(mark.device)}: {count(mark.elements)} elements, '
                     f'{escape(seconds_text(mark.seconds))}</title></rect>')
    return svg(width, height, "".join(parts), "accel-plot-launches")
