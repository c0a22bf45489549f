"""Shape descriptors and size terms of the `shape` stage (van den Haak et al., Listing 2).

A *shape descriptor* says how many elements a value has along each array dimension, in terms
of the program's variables; it never says what the scalars are. One frozen dataclass per form,
each printed like accel:

- `Var(x)` (VAR): the shape of a parameter or global `x`; it remembers `x`'s type and the
  sizes its annotation declares (`[n][m]t`), which only the comparison of sizes looks at;
- `Index(s, e)` (INDEX): the shape of an element of an array of shape `s`, at index `e`;
- `Scalar` (SCALAR): no array dimension (scalars and tuples of scalars);
- `TupleShape(s1, ..., sn)` (TUPLE); an array of tuples is a tuple of arrays;
- `Const([d1, ..., dk])` (CONST-SHAPE): a regular array of literal extents;
- `Project(s, k)` (PROJECT): component `k` of a tuple of shape `s`;
- `Generate(n, i, s)` (GENERATE): `generate n (\\i -> s)`, `n` elements, element `i` of shape `s`;
- `Cond(c, s1, s2)` (COND-SHAPE): `s1` when `c` holds, else `s2`;
- `Label(k, args)` (FALLBACK): an unknown shape `ℓk`, a fresh symbol applied to the index
  variables it may depend on;
- `Function`: the "shape" of a function value (functions are not arrays).

A *size term* is an integer (or boolean) valued expression kept symbolic: literals, parameter
and global names (`SizeVar`), the index variables of enclosing generates (`IndexVar`, with the
level of their generate), `length s` (`Length`), operators and pure scalar functions
(`SizeOp`), value reads `xs[i]` (`Read`, the data of an array, not its shape) and unknown
values `ℓk i j` (`Unknown`: a fresh symbol applied to the index variables it may depend on, so
that two equal terms always denote equal values).

`index_vars` gives the index variables a descriptor mentions (its dependence), `substitute`
replaces one without capture, `shape_type` the type a descriptor describes (or None).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from ..lang.types import Array, Func, Seq, Tuple, Type
from ..lang.types import Scalar as ScalarType

SCALAR_TYPE = ScalarType("scalar")      # the type of a `Scalar` shape: some scalar


# ---------------------------------------------------------------- size terms

@dataclass(frozen=True)
class SizeLit:
    value: int | float | bool

    def __str__(self) -> str:
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return str(self.value)


@dataclass(frozen=True)
class SizeVar:
    """A parameter, global or size name: fixed for the whole definition."""
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class IndexVar:
    """The index variable of a generate (or map) whose lambda is `level` generates deep."""
    name: str
    level: int

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Length:
    shape: "Shape"

    def __str__(self) -> str:
        return f"length {_atom(self.shape)}"


@dataclass(frozen=True)
class SizeOp:
    """`a + b`, `-a`, or a pure scalar function applied to its arguments (`min a b`)."""
    op: str
    args: tuple["Size", ...]

    def __str__(self) -> str:
        if not self.op[:1].isalpha() and len(self.args) == 2:
            return f"{_operand(self.args[0])} {self.op} {_operand(self.args[1])}"
        if not self.op[:1].isalpha() and len(self.args) == 1:
            return f"{self.op}{_atom(self.args[0])}"
        return " ".join([self.op] + [_atom(a) for a in self.args])


@dataclass(frozen=True)
class Read:
    """The value of element `index` of an array (a data read, as in `iota xs[i]`)."""
    array: "Size"
    index: "Size"

    def __str__(self) -> str:
        return f"{_atom(self.array)}[{self.index}]"


@dataclass(frozen=True)
class Unknown:
    """An unknown value `ℓk`, a function of the index variables in `args`."""
    label: int
    args: tuple["Size", ...] = ()

    def __str__(self) -> str:
        return " ".join([f"ℓ{self.label}"] + [_atom(a) for a in self.args])


Size = Union[SizeLit, SizeVar, IndexVar, Length, SizeOp, Read, Unknown]


# ---------------------------------------------------------------- shape descriptors

@dataclass(frozen=True)
class Scalar:
    def __str__(self) -> str:
        return "scalar"


SCALAR = Scalar()


@dataclass(frozen=True)
class Function:
    def __str__(self) -> str:
        return "fn"


FUNCTION = Function()


@dataclass(frozen=True)
class Var:
    name: str
    type: Type | None = field(default=None, compare=False, repr=False)
    sizes: tuple[Size | None, ...] = field(default=(), compare=False, repr=False)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Index:
    shape: "Shape"
    index: Size

    def __str__(self) -> str:
        return f"{_atom(self.shape)}[{self.index}]"


@dataclass(frozen=True)
class TupleShape:
    parts: tuple["Shape", ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(p) for p in self.parts) + ")"


@dataclass(frozen=True)
class Const:
    dims: tuple[int, ...]

    def __str__(self) -> str:
        return "const [" + ", ".join(str(d) for d in self.dims) + "]"


@dataclass(frozen=True)
class Project:
    shape: "Shape"
    index: int

    def __str__(self) -> str:
        return f"{_atom(self.shape)}.{self.index}"


@dataclass(frozen=True)
class Generate:
    size: Size
    var: IndexVar
    body: "Shape"

    def __str__(self) -> str:
        return f"generate {_atom(self.size)} (\\{self.var} -> {self.body})"


@dataclass(frozen=True)
class Cond:
    cond: Size
    then: "Shape"
    else_: "Shape"

    def __str__(self) -> str:
        return f"cond {_atom(self.cond)} {_atom(self.then)} {_atom(self.else_)}"


@dataclass(frozen=True)
class Label:
    """A fresh unknown shape (FALLBACK); `origin` is the id of the node that made it;
    `narrowed`: a loop's label applied to fewer index variables than the loop depends on
    (the loop iterates alike at every point of those maps: WHILE-INDEP)."""
    label: int
    args: tuple[Size, ...] = ()
    type: Type | None = field(default=None, compare=False, repr=False)
    origin: int = field(default=0, compare=False, repr=False)
    narrowed: bool = field(default=False, compare=False, repr=False)

    def __str__(self) -> str:
        return " ".join([f"ℓ{self.label}"] + [_atom(a) for a in self.args])


Shape = Union[Scalar, Function, Var, Index, TupleShape, Const, Project, Generate, Cond, Label]

_ATOMS = (SizeLit, SizeVar, IndexVar, Read, Scalar, Function, Var, Index, TupleShape, Project)


def _operand(x: Size) -> str:
    """An operand of an infix operator: applications bind tighter and need no parentheses."""
    if isinstance(x, (Length, Unknown)) or (isinstance(x, SizeOp) and x.op[:1].isalpha()):
        return str(x)
    return _atom(x)


def _atom(x: Shape | Size) -> str:
    text = str(x)
    if isinstance(x, _ATOMS) and not (isinstance(x, SizeLit) and text.startswith("-")):
        return text
    if isinstance(x, (Unknown, Label)) and not x.args:
        return text
    return f"({text})"


# ---------------------------------------------------------------- free index variables

def index_vars(x: Shape | Size) -> frozenset[IndexVar]:
    """The index variables `x` mentions free (cached on the descriptor)."""
    cached = x.__dict__.get("_index_vars")
    if cached is not None:
        return cached
    if isinstance(x, IndexVar):
        out = frozenset((x,))
    elif isinstance(x, Generate):
        out = index_vars(x.size) | (index_vars(x.body) - {x.var})
    else:
        out = frozenset().union(*(index_vars(c) for c in _children(x)))
    object.__setattr__(x, "_index_vars", out)
    return out


def _children(x: Shape | Size) -> tuple:
    if isinstance(x, Length):
        return (x.shape,)
    if isinstance(x, SizeOp):
        return x.args
    if isinstance(x, Read):
        return (x.array, x.index)
    if isinstance(x, (Unknown, Label)):
        return x.args
    if isinstance(x, Index):
        return (x.shape, x.index)
    if isinstance(x, TupleShape):
        return x.parts
    if isinstance(x, Project):
        return (x.shape,)
    if isinstance(x, Generate):
        return (x.size, x.body)
    if isinstance(x, Cond):
        return (x.cond, x.then, x.else_)
    return ()


def level_of(x: Shape | Size) -> int | None:
    """The lowest level of an index variable `x` mentions; None when it mentions none."""
    levels = [v.level for v in index_vars(x)]
    return min(levels) if levels else None


# ---------------------------------------------------------------- substitution

def substitute(x, var: IndexVar, term: Size):
    """`x[var := term]`, renaming binders of `x` that would capture a variable of `term`."""
    if var not in index_vars(x):
        return x
    if isinstance(x, IndexVar):
        return term
    if isinstance(x, Generate):
        size = substitute(x.size, var, term)
        binder, body = x.var, x.body
        if binder == var:
            return Generate(size, binder, body)
        if binder in index_vars(term):
            avoid = index_vars(term) | index_vars(body)
            fresh = binder
            while fresh in avoid:
                fresh = IndexVar(fresh.name + "'", fresh.level)
            body = substitute(body, binder, fresh)
            binder = fresh
        return Generate(size, binder, substitute(body, var, term))
    return rebuild(x, [substitute(c, var, term) for c in _children(x)])


def rebuild(x, children: list):
    """`x` with its children replaced (in the order `_children` gives them)."""
    if all(a is b for a, b in zip(children, _children(x))):
        return x
    if isinstance(x, Length):
        return Length(children[0])
    if isinstance(x, SizeOp):
        return SizeOp(x.op, tuple(children))
    if isinstance(x, Read):
        return Read(children[0], children[1])
    if isinstance(x, Unknown):
        return Unknown(x.label, tuple(children))
    if isinstance(x, Label):
        return Label(x.label, tuple(children), x.type, x.origin, x.narrowed)
    if isinstance(x, Index):
        return Index(children[0], children[1])
    if isinstance(x, TupleShape):
        return TupleShape(tuple(children))
    if isinstance(x, Project):
        return Project(children[0], x.index)
    if isinstance(x, Generate):
        return Generate(children[0], x.var, children[1])
    if isinstance(x, Cond):
        return Cond(children[0], children[1], children[2])
    return x


# ---------------------------------------------------------------- types of shapes

def has_arrays(t: Type | None) -> bool:
    """Whether a value of type `t` contains an array (unknown types count as containing one)."""
    if t is None or isinstance(t, (Array, Seq)):
        return True
    if isinstance(t, Tuple):
        return any(has_arrays(e) for e in t.elems)
    return False


def elem_type(t: Type | None) -> Type | None:
    """The type of an element (a tuple of arrays has tuples of their elements)."""
    if isinstance(t, (Array, Seq)):
        return t.elem
    if isinstance(t, Tuple):
        elems = [elem_type(e) for e in t.elems]
        return None if any(e is None for e in elems) else Tuple(tuple(elems))
    return None


def shape_type(s: Shape) -> Type | None:
    """The type `s` describes, as far as the descriptor knows it (None: unknown)."""
    if isinstance(s, Scalar):
        return SCALAR_TYPE
    if isinstance(s, (Var, Label)):
        return s.type
    if isinstance(s, Const):
        t: Type = SCALAR_TYPE
        for _ in s.dims:
            t = Array(t)
        return t
    if isinstance(s, Index):
        return elem_type(shape_type(s.shape))
    if isinstance(s, TupleShape):
        parts = [shape_type(p) for p in s.parts]
        return None if any(p is None for p in parts) else Tuple(tuple(parts))
    if isinstance(s, Project):
        t = shape_type(s.shape)
        while isinstance(t, Array):          # an array of tuples: the array of a component
            inner = t.elem
            depth = 1
            while isinstance(inner, Array):
                inner, depth = inner.elem, depth + 1
            if isinstance(inner, Tuple) and s.index < len(inner.elems):
                out: Type = inner.elems[s.index]
                for _ in range(depth):
                    out = Array(out)
                return out
            return None
        if isinstance(t, Tuple) and s.index < len(t.elems):
            return t.elems[s.index]
        return None
    if isinstance(s, Generate):
        body = shape_type(s.body)
        return None if body is None else Array(body)
    if isinstance(s, Cond):
        return shape_type(s.then)
    if isinstance(s, Function):
        return Func(SCALAR_TYPE, SCALAR_TYPE)
    return None


def rank(s: Shape) -> int:
    """How many array dimensions `s` has before its elements (0 for a tuple)."""
    t, n = shape_type(s), 0
    while isinstance(t, (Array, Seq)):
        t, n = t.elem, n + 1
    return n
