"""Colours of the stage drawings: one `Colouring` per stage name (`COLOURINGS`).

A colouring looks at one drawn node (`NodeInfo`: its id, type, facts, whether the stage made
it) and gives its `Look`: fill colour, dashed border or not, and an extra label line (a shape,
a regularity triple). Its legend is drawn at the top of the graph. A new stage (`flatten`,
`fuse`, ...) needs only an entry here; a stage without one is coloured by type.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..lang import types as T


@dataclass(frozen=True)
class NodeInfo:
    """What a colouring may look at: the node's id, its type, its facts, whether the stage
    created it (its id is not in the parsed program)."""
    id: int
    kind: str                          # op | input | binder | guard
    type: T.Type | None
    facts: Mapping[str, Any]           # analysis name -> fact of this node
    created: bool


@dataclass(frozen=True)
class Look:
    fill: str = "#ffffff"
    dashed: bool = False               # border
    extra: str = ""                    # a label line under the type


@dataclass(frozen=True)
class LegendEntry:
    fill: str
    text: str
    dashed: bool = False


@dataclass(frozen=True)
class Colouring:
    look: Callable[[NodeInfo], Look]
    legend: tuple[LegendEntry, ...]


GREY, BLUE, DEEP_BLUE, WHITE = "#ececec", "#d8e7f5", "#a9c9ea", "#ffffff"
GREEN, ORANGE, VIOLET, YELLOW = "#c5e8b7", "#fdbf7e", "#e2cff5", "#fff1c1"


def type_fill(t: T.Type | None) -> str:
    if t is None or isinstance(t, T.Func):
        return WHITE
    if isinstance(t, T.Seq):
        return YELLOW
    if has_array(t):
        return DEEP_BLUE if _nested(t) else BLUE
    return GREY


def has_array(t: T.Type) -> bool:
    if isinstance(t, (T.Array, T.Seq)):
        return True
    return isinstance(t, T.Tuple) and any(has_array(e) for e in t.elems)


def _nested(t: T.Type) -> bool:
    if isinstance(t, T.Array):
        return has_array(t.elem)
    return isinstance(t, T.Tuple) and any(_nested(e) for e in t.elems)


_TYPE_LEGEND = (LegendEntry(GREY, "scalar"), LegendEntry(BLUE, "array"),
                LegendEntry(DEEP_BLUE, "nested array"), LegendEntry(WHITE, "function"))


def _by_type(node: NodeInfo) -> Look:
    return Look(type_fill(node.type))


def _desugar(node: NodeInfo) -> Look:
    return Look(VIOLET if node.created else type_fill(node.type))


def _shape(node: NodeInfo) -> Look:
    fact = node.facts.get("shape")
    return Look(type_fill(node.type), extra="" if fact is None else f"shape {fact}")


def regularity_fill(fact: Any) -> str:
    """Irregular when any part of the nesting is (`Ir`), scalar when every part is `S`."""
    nest = getattr(fact, "nest", "")
    if "Ir" in nest:
        return ORANGE
    if all(part in ("", "S") for part in re.split(r"[(), ]+", nest)):
        return GREY
    return GREEN


def regularity_text(fact: Any) -> str:
    """`⟨R>Ir>S, dep, 1⟩`: the triple, shorter than its `str` so that nodes stay narrow."""
    level = "∞" if fact.level is None else str(fact.level)
    return f"⟨{fact.nest}, {'ind' if fact.independent else 'dep'}, {level}⟩"


def _regularity(node: NodeInfo) -> Look:
    fact = node.facts.get("regularity")
    if fact is None:
        return Look(WHITE)
    return Look(regularity_fill(fact), dashed=not fact.independent,
                extra=regularity_text(fact))


COLOURINGS: dict[str, Colouring] = {
    "parse": Colouring(lambda node: Look(WHITE), ()),
    "typed": Colouring(_by_type, _TYPE_LEGEND),
    "desugar": Colouring(_desugar, (LegendEntry(VIOLET, "made by desugar"), *_TYPE_LEGEND)),
    "shape": Colouring(_shape, _TYPE_LEGEND),
    "regularity": Colouring(_regularity, (
        LegendEntry(GREEN, "regular"), LegendEntry(ORANGE, "irregular"),
        LegendEntry(GREY, "scalar"), LegendEntry(WHITE, "dependent (dep)", dashed=True),
        LegendEntry(WHITE, "independent (ind)"))),
}
DEFAULT_COLOURING = Colouring(_by_type, _TYPE_LEGEND)
