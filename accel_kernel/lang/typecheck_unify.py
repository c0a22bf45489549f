"""Unification with constrained type variables, for the type checker (stage `typed`).

A `Unifier` holds the substitution being built while one top-level form is checked. Its
variables are named `'1`, `'2`, ... (a name no user type or scheme uses). A variable may be
constrained to a set of scalar types (a class of `types.CLASSES`): unifying two variables
intersects their sets, and binding a constrained variable to anything but a scalar of its set
fails. Failures raise `Mismatch`; the checker turns them into messages with spans.

Also here: how types and classes are written in messages (`TypeNamer`, `class_phrase`).
"""
from __future__ import annotations

from .types import (CLASSES, Array, Func, Scalar, Seq, Tuple, Type, TypeVar, free_vars,
                    ordered_vars, show, substitute)


class Mismatch(Exception):
    """Two types that do not unify. `left`/`right` are the parts that clashed; `cls` is set
    when a constrained variable met a type outside its class."""

    def __init__(self, left: Type, right: Type, cls: frozenset[str] | None = None,
                 infinite: bool = False):
        super().__init__(f"{left} vs {right}")
        self.left, self.right, self.cls, self.infinite = left, right, cls, infinite


class Unifier:
    def __init__(self) -> None:
        self.subst: dict[str, Type] = {}
        self.classes: dict[str, frozenset[str]] = {}
        self._counter = 0
        # Undo log: (table, variable, previous entry or None), so a failed attempt can be
        # rolled back cheaply (`snapshot`/`restore`).
        self._trail: list[tuple[dict, str, object]] = []

    # ------------------------------------------------------------------ variables

    def fresh(self, cls: frozenset[str] | None = None) -> TypeVar:
        self._counter += 1
        var = TypeVar(f"'{self._counter}")
        if cls is not None:
            self.classes[var.name] = cls
        return var

    def fresh_of_class(self, name: str | None) -> TypeVar:
        return self.fresh(CLASSES[name] if name is not None else None)

    def class_of(self, var: TypeVar) -> frozenset[str] | None:
        return self.classes.get(var.name)

    # ------------------------------------------------------------------ substitution

    def prune(self, t: Type) -> Type:
        """`t` with its outermost bound variables replaced (one level only)."""
        while isinstance(t, TypeVar) and t.name in self.subst:
            t = self.subst[t.name]
        return t

    def resolve(self, t: Type) -> Type:
        """`t` with every bound variable replaced, all the way down."""
        t = self.prune(t)
        if isinstance(t, Array):
            return Array(self.resolve(t.elem))
        if isinstance(t, Seq):
            return Seq(self.resolve(t.elem))
        if isinstance(t, Tuple):
            return Tuple(tuple(self.resolve(e) for e in t.elems))
        if isinstance(t, Func):
            return Func(self.resolve(t.param), self.resolve(t.result))
        return t

    def snapshot(self) -> int:
        return len(self._trail)

    def restore(self, mark: int) -> None:
        while len(self._trail) > mark:
            table, name, old = self._trail.pop()
            if old is None:
                table.pop(name, None)
            else:
                table[name] = old

    def _set(self, table: dict, name: str, value: object) -> None:
        self._trail.append((table, name, table.get(name)))
        table[name] = value

    def try_unify(self, a: Type, b: Type) -> bool:
        """Unify if possible; on failure leave the substitution as it was."""
        snap = self.snapshot()
        try:
            self.unify(a, b)
            return True
        except Mismatch:
            self.restore(snap)
            return False

    # ------------------------------------------------------------------ unification

    def unify(self, a: Type, b: Type) -> None:
        a, b = self.prune(a), self.prune(b)
        if a == b:
            return
        if isinstance(a, TypeVar):
            self._bind(a, b)
        elif isinstance(b, TypeVar):
            self._bind(b, a, flipped=True)
        elif isinstance(a, Array) and isinstance(b, Array):
            self.unify(a.elem, b.elem)
        elif isinstance(a, Seq) and isinstance(b, Seq):
            self.unify(a.elem, b.elem)
        elif (isinstance(a, Tuple) and isinstance(b, Tuple)
              and len(a.elems) == len(b.elems)):
            for x, y in zip(a.elems, b.elems):
                self.unify(x, y)
        elif isinstance(a, Func) and isinstance(b, Func):
            self.unify(a.param, b.param)
            self.unify(a.result, b.result)
        else:
            raise Mismatch(a, b)

    def _bind(self, var: TypeVar, t: Type, flipped: bool = False) -> None:
        cls = self.classes.get(var.name)
        if isinstance(t, TypeVar):
            other = self.classes.get(t.name)
            if cls is not None or other is not None:
                merged = cls if other is None else other if cls is None else cls & other
                if not merged:
                    raise Mismatch(t, var, cls) if flipped else Mismatch(var, t, other)
                self._set(self.classes, t.name, merged)
            self._set(self.subst, var.name, t)
            return
        if var.name in free_vars(self.resolve(t)):
            raise (Mismatch(t, var, infinite=True) if flipped
                   else Mismatch(var, t, infinite=True))
        if cls is not None and not (isinstance(t, Scalar) and t.name in cls):
            raise Mismatch(t, var, cls) if flipped else Mismatch(var, t, cls)
        self._set(self.subst, var.name, t)


# ---------------------------------------------------------------- messages

_CLASS_PHRASES = {
    "num": "a numeric type (an integer type or f32 or f64)",
    "int": "an integer type (i8, i16, i32, i64, u8, u16, u32 or u64)",
    "float": "a float type (f32 or f64)",
    "scalar": "a scalar type (bool, an integer type, f32 or f64)",
    "bits": "bool or an integer type",
}


def class_name(cls: frozenset[str]) -> str | None:
    """The name of the class whose set is `cls`, if there is one."""
    for name, members in CLASSES.items():
        if members == cls:
            return name
    return None


def class_phrase(cls: frozenset[str]) -> str:
    name = class_name(cls)
    if name is not None:
        return _CLASS_PHRASES[name]
    return "one of " + ", ".join(sorted(cls))


class TypeNamer:
    """Writes types for messages: internal variables become `a`, `b`, ... in order of first
    appearance, consistently across the types of one message, and the classes of constrained
    variables are listed after them (`[]a (num a)`)."""

    def __init__(self, unifier: Unifier):
        self.unifier = unifier
        self.names: dict[str, TypeVar] = {}

    def show(self, t: Type) -> str:
        t = self.unifier.resolve(t)
        for v in ordered_vars(t):
            if v not in self.names:
                self.names[v] = TypeVar(_letters(len(self.names)))
        text = show(substitute(t, dict(self.names)))
        cons = []
        for v in ordered_vars(t):
            cls = self.unifier.classes.get(v)
            if cls is not None:
                name = class_name(cls) or "{" + ", ".join(sorted(cls)) + "}"
                cons.append(f"{name} {self.names[v].name}")
        return f"{text} ({', '.join(cons)})" if cons else text


def _letters(k: int) -> str:
    return "abcdefghijklmnopqrstuvwxyz"[k % 26] + (str(k // 26) if k >= 26 else "")


def letter_names(count: int) -> list[str]:
    """`a`, `b`, ..., `z`, `a1`, ...: the names of a generalised def's variables."""
    return [_letters(k) for k in range(count)]
