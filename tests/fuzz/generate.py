"""Random well-typed accel programs, deterministic per seed, small and terminating.

`generate(seed, index)` gives the `Program` number `index` of the stream `seed`. Each is a few
lines: the helper defs it calls, two inputs (`xs : []i64`, `xss : [][]i64`, empty, ragged or
regular), up to two global `let`s, and a final expression of one of the types of
`program.py`. What the programs exercise (the gaps issue 18 found):

- sizes computed per point of a map (tuple-state `loop`/`while`, scalar loops, filters,
  counts) flowing into `iota`, `replicate`, ranges (with computed steps) and `generate`;
- ragged results from regular inputs: `++`, `interleave`, `scatter`, `with` on rows;
  `partition` with one half discarded; maps nested three deep; comprehensions with dependent
  generators, guards, `let`s, tuple patterns and zipping; every SOAC, `sort`, `transpose`;
- empty arrays everywhere (`([] : []i64)`, `iota 0`, filters that keep nothing);
- every run-time error of LANGUAGE.md §8, reachable (in about half of the programs, the
  "hazardous" ones) and unreachable (inside a map over an empty array, in an `if` branch not
  taken, behind `&&`) in all of them.

Sizes stay below ~50 elements (sizes are reduced modulo small numbers, loops run at most a few
times, `while` loops grow or shrink their state each step), so `interp` runs every program in
milliseconds. Integer results may wrap around; floats are sums and products of small integers
and halves, so every target gives the same printed digits.
"""
from __future__ import annotations

import random
from typing import Callable

from .program import (ARR1, ARR2, ARR3, BOOL, F64, I64, PAIR, Form, Node, Program,
                      array_lit, int_lit, node)

Scope = tuple[tuple[str, str], ...]          # (name, type) of the variables in scope

# Helper defs a program may call; a program lists only those it uses.
HELPER_DEFS = {
    "dotn": "def dotn (xs: [n]i64) (ys: [n]i64) : i64 = reduce (+) 0 (map2 (*) xs ys)",
    "addn": "def addn (xs: [n]i64) (ys: [n]i64) : [n]i64 = map2 (+) xs ys",
    "bump": "def bump (xs: []i64) (k: i64) : []i64 = map (\\x -> x + k) xs",
    "shape": "def shape (xss: [r][c]i64) : i64 = r * 100 + length (flatten xss)",
    "cube": "def cube (x: [a][b][c]i64) : i64 = a * 100 + length (flatten x)",
}

LOWEST, HIGHEST = "(-9223372036854775808)", "9223372036854775807"
FINAL_TYPES = [(3, ARR1), (3, ARR2), (2, I64), (1.5, ARR3), (0.5, BOOL), (0.5, F64), (0.5, PAIR)]


def generate(seed: int, index: int) -> Program:
    """Program number `index` of the stream `seed` (the same pair always gives the same)."""
    return Generator(random.Random(seed * 1_000_003 + index)).program()


class Generator:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.hazard = rng.choice([0.0, 0.0, 0.06, 0.12])  # chance of a reachable error form
        self.unreachable = 0.06                           # chance of a guarded error form
        self.counter = 0
        self.defs: dict[str, str] = {}

    # ------------------------------------------------------------ helpers

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, options: list[tuple[float, Callable[[], Node]]]) -> Node:
        weights = [w for w, _ in options]
        return self.rng.choices(options, weights)[0][1]()

    def use_def(self, name: str) -> str:
        self.defs[name] = HELPER_DEFS[name]
        return name

    def var(self, sc: Scope, type: str) -> str | None:
        names = [n for n, t in sc if t == type]
        return self.rng.choice(names) if names else None

    def gen(self, type: str, sc: Scope, d: int) -> Node:
        return {I64: self.i64, BOOL: self.bool, F64: self.f64, ARR1: self.arr1,
                ARR2: self.arr2, ARR3: self.arr3, PAIR: self.pair}[type](sc, d)

    def small(self, sc: Scope, d: int, modulus: int = 10) -> Node:
        """An integer in (-modulus, modulus): range bounds, rotations, offsets."""
        return node(I64, "(", self.i64(sc, d), f" % {modulus})")

    def lam(self, base: str, type: str, sc: Scope) -> tuple[str, Scope]:
        name = self.fresh(base)
        return name, sc + ((name, type),)

    # ------------------------------------------------------------ the program

    def program(self) -> Program:
        rng = self.rng
        xs = [int_lit(rng.randint(-5, 12)) for _ in range(rng.choice([0, 1, 3, 4, 5, 6]))]
        width = rng.randint(0, 3)
        regular = self.chance(0.5)
        xss = [array_lit(ARR1, [int_lit(rng.randint(-5, 12))
                                for _ in range(width if regular else rng.randint(0, 4))])
               for _ in range(rng.choice([0, 1, 2, 3, 4]))]
        forms = [Form("xs", node(ARR1, "(", array_lit(ARR1, xs), " : []i64)")),
                 Form("xss", node(ARR2, "(", array_lit(ARR2, xss), " : [][]i64)"))]
        sc: Scope = (("xs", ARR1), ("xss", ARR2))
        for k in range(rng.choice([0, 1, 1, 2])):
            type = rng.choice([I64, ARR1, ARR2])
            forms.append(Form(f"v{k}", self.gen(type, sc, rng.randint(1, 3))))
            sc = sc + ((f"v{k}", type),)
        final = rng.choices([t for _, t in FINAL_TYPES], [w for w, _ in FINAL_TYPES])[0]
        forms.append(Form(None, self.gen(final, sc, rng.randint(2, 4))))
        defs = tuple(HELPER_DEFS[n] for n in HELPER_DEFS if n in self.defs)
        return Program(defs, tuple(forms))

    def pair(self, sc: Scope, d: int) -> Node:
        return node(PAIR, "(", self.i64(sc, d), ", ", self.arr1(sc, d), ")")

    # ------------------------------------------------------------ scalars

    def i64_leaf(self, sc: Scope) -> Node:
        name = self.var(sc, I64)
        if name is not None and self.chance(0.6):
            return node(I64, name)
        return int_lit(self.rng.randint(-3, 9))

    def i64(self, sc: Scope, d: int) -> Node:
        if d <= 0:
            return self.i64_leaf(sc)
        if self.chance(self.hazard):
            return self.i64_hazard(sc, d)
        if self.chance(self.unreachable):
            return self.i64_unreached(sc, d)
        r, e = self.rng, (lambda: self.i64(sc, d - 1))
        return self.pick([
            (3, lambda: self.i64_leaf(sc)),
            (4, lambda: node(I64, "(", e(), f" {r.choice('+-*')} ", e(), ")")),
            (2, lambda: node(I64, f"({r.choice(['min', 'max'])} ", e(), " ", e(), ")")),
            (2, lambda: node(I64, "(", e(), f" {r.choice('/%')} (abs ", e(), " % 5 + 1))")),
            (2, lambda: node(I64, "(length ", self.arr1(sc, d - 1), ")")),
            (3, lambda: self.reduction(sc, d)),
            (2, lambda: self.safe_index(sc, d)),
            (1, lambda: self.safe_end(sc, d)),
            (2, lambda: node(I64, "(if ", self.bool(sc, d - 1), " then ", e(), " else ", e(),
                             ")")),
            (3, lambda: self.size(sc, d)),
            (1, lambda: self.scalar_loop(sc, d)),
            (1, lambda: node(I64, "(i64 ", self.f64(sc, d - 1), ")")),
            (1, lambda: self.tuple_let(sc, d)),
            (1, lambda: self.small_int(sc, d)),
        ])

    def small_int(self, sc: Scope, d: int) -> Node:
        """Arithmetic in another integer type (wrapping at its width), back as an i64."""
        r, e = self.rng, (lambda: self.i64(sc, d - 1))
        t = r.choice(["i8", "i16", "i32", "u8", "u16", "u32", "u64"])
        op = r.choice(["+", "-", "*", "&", "|", "^", ">>", "<<", "/", "%"])
        if op in ("/", "%"):          # the right operand, of type t (not a node: not an i64)
            right = (f"({t}.i64 (abs ", e(), " % 5 + 1))")
        elif op in (">>", "<<"):
            right = (f"({t}.i64 (abs ", e(), " % 12))")
        else:
            right = (f"({t}.i64 ", e(), ")")
        if r.random() < 0.5:
            return node(I64, f"(i64.{t} ({t}.i64 ", e(), f" {op} ", *right, "))")
        x, combine = self.fresh("x"), op if op in "+*&|^" else "+"
        neutral = {"*": f"1{t}", "&": f"{t}.highest" if t[0] == "u" else f"(-1{t})"}.get(
            combine, f"0{t}")
        return node(I64, f"(i64.{t} (reduce (\\a b -> a {combine} b) {neutral} "
                    f"(map (\\{x} -> {t}.i64 {x} {op} ", *right, ") ", self.arr1(sc, d - 1),
                    ")))")

    def reduction(self, sc: Scope, d: int) -> Node:
        a = self.arr1(sc, d - 1)
        x, y = self.fresh("a"), self.fresh("b")
        return self.pick([
            (3, lambda: node(I64, "(reduce (+) 0 ", a, ")")),
            (1, lambda: node(I64, f"(reduce max {LOWEST} ", a, ")")),
            (1, lambda: node(I64, f"(reduce min {HIGHEST} ", a, ")")),
            (1, lambda: node(I64, f"(reduce (\\{x} {y} -> {x} + {y}) 0 ", a, ")")),
            (1, lambda: node(I64, "(sum ", a, ")")),
            (1, lambda: node(I64, "(maximum ", a, ")")),
            (1, lambda: node(I64, "(let s = scan (+) 0 ", a,
                             " in if length s > 0 then last s else 0)")),
        ])

    def safe_index(self, sc: Scope, d: int) -> Node:
        a = self.fresh("a")
        inner = sc + ((a, ARR1),)
        return node(I64, f"(let {a} = ", self.arr1(sc, d - 1), f" in if length {a} > 0 then "
                    f"{a}[abs ", self.i64(inner, d - 1), f" % length {a}] else ",
                    self.i64(sc, d - 1), ")")

    def safe_end(self, sc: Scope, d: int) -> Node:
        a = self.fresh("a")
        end = self.rng.choice(["head", "last"])
        if self.chance(0.5):
            return node(I64, f"(let {a} = ", self.arr1(sc, d - 1),
                        f" in if length {a} > 0 then {end} {a} else ", self.i64(sc, d - 1), ")")
        return node(I64, f"(let {a} = ", self.arr2(sc, d - 1),
                    f" in if length {a} > 0 then length ({end} {a}) else ",
                    self.i64(sc, d - 1), ")")

    def size(self, sc: Scope, d: int) -> Node:
        """A small count, usually >= 0, often computed per point of the enclosing maps: the
        sizes the flattener must not take as uniform."""
        e = lambda: self.point(sc, d)
        m, c, s, t, i, v = (self.fresh(n) for n in "mcstiv")
        return self.pick([
            (2, lambda: int_lit(self.rng.randint(0, 5))),
            (3, lambda: node(I64, "(abs ", e(), " % 6)")),
            (5, lambda: node(I64, f"(let ({m}, {c}) = loop ({m}, {c}) = (abs ", e(),
                             f" * 37 % 1000, 1) while {m} >= 10 do ({m} / 10, {c} + 1) in {c})")),
            (2, lambda: node(I64, f"(loop ({s}, {t}) = (0, 1) for {i} < abs ", e(),
                             f" % 5 do ({t}, {s} + {t})).0")),
            (1, lambda: node(I64, f"((loop {c} = 1 while {c} * 3 <= abs ", e(),
                             f" % 100 do {c} * 3) % 7)")),
            (2, lambda: node(I64, "(length (filter (\\", f"{v} -> ",
                             self.bool(sc + ((v, I64),), d - 1), ") ", self.arr1(sc, d - 1),
                             ") % 6)")),
            (1, lambda: node(I64, f"(count (\\{v} -> {v} > ", e(), ") ", self.arr1(sc, d - 1),
                             ")")),
            (1, lambda: node(I64, f"(while (\\{v} -> {v} < 4) (\\{v} -> {v} + 1) (abs ", e(),
                             " % 3))")),
        ])

    def point(self, sc: Scope, d: int) -> Node:
        """What a size is computed from: mostly a variable (inside a map, the point's own
        value, so that sizes differ from point to point), else any integer."""
        name = self.var(sc, I64)
        if name is not None and self.chance(0.6):
            return node(I64, name)
        return self.i64(sc, d - 1)

    def scalar_loop(self, sc: Scope, d: int) -> Node:
        acc, i, x, c = (self.fresh(n) for n in ("acc", "i", "x", "c"))
        inner = sc + ((acc, I64), (i, I64))
        return self.pick([
            (2, lambda: node(I64, f"(loop {acc} = ", self.i64(sc, d - 1), f" for {i} < ",
                             self.size(sc, d - 1), " do ", self.i64(inner, d - 1), ")")),
            (2, lambda: node(I64, f"(let ({x}, {c}) = (loop ({x}, {c}) = (", self.i64(sc, d - 1),
                             f", 0) while {x} > 0 && {c} < 6 do ({x} / 2, {c} + 1)) in "
                             f"{self.rng.choice([x, c, f'{x} + {c}'])})")),
            (1, lambda: node(I64, f"(loop {acc} = 0 for {x} in ", self.arr1(sc, d - 1),
                             f" do {acc} * 2 + {x})")),
        ])

    def tuple_let(self, sc: Scope, d: int) -> Node:
        p, q = self.fresh("p"), self.fresh("q")
        return node(I64, f"(let ({p}, {q}) = (", self.i64(sc, d - 1), ", ",
                    self.arr1(sc, d - 1), f") in {p} + length {q})")

    def bool(self, sc: Scope, d: int) -> Node:
        name = self.var(sc, I64)
        if d <= 0:
            if name is None or self.chance(0.3):
                return node(BOOL, self.rng.choice(["true", "false"]))
            return node(BOOL, f"({name} {self.rng.choice(['<', '>', '=='])} ", int_lit(
                self.rng.randint(-2, 6)), ")")
        e, b = (lambda: self.i64(sc, d - 1)), (lambda: self.bool(sc, d - 1))
        z = self.fresh("z")
        a, k = self.fresh("a"), self.fresh("k")
        options = [
            (1, lambda: self.bool(sc, 0)),
            (5, lambda: node(BOOL, "(", e(),
                             f" {self.rng.choice(['<', '<=', '==', '!=', '>', '>='])} ", e(), ")")),
            (2, lambda: node(BOOL, "(", b(), f" {self.rng.choice(['&&', '||'])} ", b(), ")")),
            (1, lambda: node(BOOL, "(!", b(), ")")),
            (1, lambda: node(BOOL, "(", e(), " % 2 == 0)")),
            (1, lambda: node(BOOL, f"({self.rng.choice(['all', 'any'])} (\\{z} -> {z} > ",
                             e(), ") ", self.arr1(sc, d - 1), ")")),
            # a guarded index: `&&` must keep the index from being evaluated
            (1, lambda: node(BOOL, f"(let ({a}, {k}) = (", self.arr1(sc, d - 1), ", ", e(),
                             f") in {k} >= 0 && {k} < length {a} && {a}[{k}] > 0)")),
            (self.unreachable * 10, lambda: node(BOOL, "(", self.false_guard(sc, d), " && (",
                                                 self.i64_hazard(sc, d), " > 0))")),
        ]
        if self.hazard:
            options.append((self.hazard * 10, lambda: node(BOOL, "(", self.i64_hazard(sc, d),
                                                           " > 0)")))
        return self.pick(options)

    def f64(self, sc: Scope, d: int) -> Node:
        if d <= 0:
            return node(F64, self.rng.choice(["1.5", "(-0.5)", "2.0", "0.25"]))
        f, z = (lambda: self.f64(sc, d - 1)), self.fresh("z")
        return self.pick([
            (1, lambda: self.f64(sc, 0)),
            (3, lambda: node(F64, "(f64 (", self.i64(sc, d - 1), " % 100))")),
            (2, lambda: node(F64, "(", f(), f" {self.rng.choice('+-')} ", f(), ")")),
            (1, lambda: node(F64, "(", self.f64(sc, 0), " * ", f(), ")")),
            (2, lambda: node(F64, f"(reduce (+) 0.0 (map (\\{z} -> f64 ({z} % 10) * 0.5) ",
                             self.arr1(sc, d - 1), "))")),
            (1, lambda: node(F64, "(if ", self.bool(sc, d - 1), " then ", f(), " else ", f(),
                             ")")),
        ])

    # ------------------------------------------------------------ errors

    def i64_hazard(self, sc: Scope, d: int) -> Node:
        """An integer expression that may fail with one of the run-time errors of §8."""
        e, a = (lambda: self.i64(sc, d - 1)), (lambda: self.arr1(sc, d - 1))
        t = self.fresh("t")
        return self.pick([
            (2, lambda: node(I64, "(", e(), " / (", e(), " % 3))")),
            (1, lambda: node(I64, "(", e(), " % 0)")),
            (2, lambda: node(I64, f"(let {t} = ", a(), f" in {t}[", e(), "])")),
            (1, lambda: node(I64, f"(let {t} = ", a(), f" in length {t}[", e(), ":", e(), "])")),
            (2, lambda: node(I64, f"({self.rng.choice(['head', 'last'])} ", a(), ")")),
            (1, lambda: node(I64, f"({self.use_def('dotn')} ", a(), " ", a(), ")")),
            (1, lambda: node(I64, f"({self.use_def('shape')} ", self.arr2(sc, d - 1), ")")),
            (0.5, lambda: node(I64, f"({self.use_def('cube')} ", self.arr3(sc, d - 1), ")")),
            (1, lambda: node(I64, "(length (iota (", e(), " % 4 - 1)))")),
            (1, lambda: node(I64, "(length (replicate (", e(), " % 3 - 1) 0))")),
            (1, lambda: node(I64, "(reduce (+) 0 (map2 (+) ", a(), " ", a(), "))")),
            (1, lambda: node(I64, "(length (zip ", a(), " ", a(), "))")),
            (1, lambda: node(I64, "(length (take ", e(), " ", a(), "))")),
        ])

    def false_guard(self, sc: Scope, d: int) -> Node:
        """A condition that is (almost always) false, guarding code that would fail."""
        return self.pick([
            (1, lambda: node(BOOL, "false")),
            (2, lambda: node(BOOL, "(length ", self.arr1(sc, d - 1), " > 60)")),
            (1, lambda: node(BOOL, "(length ", self.arr2(sc, d - 1), " < 0)")),
            (1, lambda: self.bool(sc, d - 1)),          # sometimes taken: reachable then
        ])

    def empty_ish(self, sc: Scope, d: int) -> Node:
        """An array that is (almost always) empty at run time."""
        z = self.fresh("z")
        return self.pick([
            (1, lambda: node(ARR1, "([] : []i64)")),
            (1, lambda: node(ARR1, "(iota 0)")),
            (2, lambda: node(ARR1, f"(filter (\\{z} -> {z} > 100) ", self.arr1(sc, d - 1), ")")),
            (1, lambda: node(ARR1, "[5..<", self.small(sc, d - 1, 5), "]")),
        ])

    def i64_unreached(self, sc: Scope, d: int) -> Node:
        x = self.fresh("x")
        inner = sc + ((x, I64),)
        return self.pick([
            (2, lambda: node(I64, "(if ", self.false_guard(sc, d), " then ",
                             self.i64_hazard(sc, d), " else ", self.i64(sc, d - 1), ")")),
            (2, lambda: node(I64, f"(reduce (+) 0 (map (\\{x} -> ", self.i64_hazard(inner, d),
                             ") ", self.empty_ish(sc, d), "))")),
        ])

    def arr1_hazard(self, sc: Scope, d: int) -> Node:
        e, a = (lambda: self.i64(sc, d - 1)), (lambda: self.arr1(sc, d - 1))
        x, y = self.fresh("x"), self.fresh("y")
        inner = sc + ((x, I64),)
        return self.pick([
            (2, lambda: node(ARR1, "(iota (", e(), " % 4 - 1))")),
            (1, lambda: node(ARR1, "(replicate (", e(), " % 3 - 1) ", e(), ")")),
            (2, lambda: node(ARR1, "(map2 (+) ", a(), " ", a(), ")")),
            (1, lambda: node(ARR1, "(interleave ", a(), " ", a(), ")")),
            (1, lambda: node(ARR1, "(", a(), " with [", e(), "] = ", e(), ")")),
            (1, lambda: node(ARR1, "(take ", e(), " ", a(), ")")),
            (1, lambda: node(ARR1, "(drop ", e(), " ", a(), ")")),
            (1, lambda: node(ARR1, f"[{x} + {y} | {x} <- ", a(), f" | {y} <- ", a(), "]")),
            (1, lambda: node(ARR1, f"({self.use_def('addn')} ", a(), " ", a(), ")")),
            (1, lambda: node(ARR1, "[0..<10 by (", e(), " % 2)]")),
            (1, lambda: node(ARR1, f"(map (\\{x} -> ", self.i64_hazard(inner, d), ") ", a(),
                             ")")),
        ])

    def arr1_unreached(self, sc: Scope, d: int) -> Node:
        x = self.fresh("x")
        inner = sc + ((x, I64),)
        return self.pick([
            (2, lambda: node(ARR1, f"(map (\\{x} -> ", self.i64_hazard(inner, d), ") ",
                             self.empty_ish(sc, d), ")")),
            (1, lambda: node(ARR1, f"(map (\\{x} -> length (iota ({x} % 7 - 200))) ",
                             self.empty_ish(sc, d), ")")),
            (1, lambda: node(ARR1, "(if ", self.false_guard(sc, d), " then ",
                             self.arr1_hazard(sc, d), " else ", self.arr1(sc, d - 1), ")")),
            (1, lambda: node(ARR1, f"(flatten (map (\\{x} -> ", self.arr1_hazard(inner, d),
                             ") ", self.empty_ish(sc, d), "))")),
        ])

    # ------------------------------------------------------------ arrays of integers

    def arr1_leaf(self, sc: Scope) -> Node:
        name = self.var(sc, ARR1)
        if name is not None and self.chance(0.6):
            return node(ARR1, name)
        if self.chance(0.25):
            return node(ARR1, self.rng.choice(["([] : []i64)", "(iota 0)"]))
        return array_lit(ARR1, [int_lit(self.rng.choice([self.rng.randint(-3, 9), 10, 123]))
                                for _ in range(self.rng.randint(1, 4))])

    def arr1(self, sc: Scope, d: int) -> Node:
        if d <= 0:
            return self.arr1_leaf(sc)
        if self.chance(self.hazard):
            return self.arr1_hazard(sc, d)
        if self.chance(self.unreachable):
            return self.arr1_unreached(sc, d)
        r = self.rng
        e, a = (lambda: self.i64(sc, d - 1)), (lambda: self.arr1(sc, d - 1))
        x, y, b, i = self.fresh("x"), self.fresh("y"), self.fresh("a"), self.fresh("i")
        with_x = sc + ((x, I64),)
        with_xy = with_x + ((y, I64),)
        with_b = sc + ((b, ARR1),)
        return self.pick([
            (3, lambda: self.arr1_leaf(sc)),
            (1, lambda: array_lit(ARR1, [e() for _ in range(r.randint(1, 3))])),
            (4, lambda: self.sized(sc, d - 1)),
            (2, lambda: self.range(sc, d)),
            (5, lambda: node(ARR1, f"(map (\\{x} -> ", self.i64(with_x, d - 1), ") ", a(), ")")),
            (2, lambda: node(ARR1, f"(map (\\{b} -> ", self.i64(with_b, d - 1), ") ",
                             self.arr2(sc, d - 1), ")")),
            (1, lambda: node(ARR1, f"(let {b} = ", a(), f" in map2 (\\{x} {y} -> ",
                             self.i64(with_xy, d - 1), f") {b} (reverse {b}))")),
            (3, lambda: node(ARR1, f"(filter (\\{x} -> ", self.bool(with_x, d - 1), ") ", a(),
                             ")")),
            (2, lambda: node(ARR1, r.choice(["(scan (+) 0 ", f"(scan max {LOWEST} "]), a(),
                             ")")),
            (2, lambda: node(ARR1, f"({r.choice(['reverse', 'sort'])} ", a(), ")")),
            (1, lambda: node(ARR1, "(rotate ", self.small(sc, d - 1), " ", a(), ")")),
            (3, lambda: node(ARR1, "(", a(), " ++ ", a(), ")")),
            (1, lambda: node(ARR1, f"(let {b} = ", a(), f" in {r.choice(['take', 'drop'])} "
                             "(abs ", e(), f" % (length {b} + 1)) {b})")),
            (1, lambda: node(ARR1, f"(let {b} = ", a(), f" in {b}[length {b} / 2:])")),
            (2, lambda: self.scatter(sc, d)),
            (2, lambda: self.histogram(sc, d)),
            (2, lambda: node(ARR1, f"(expand (\\{x} -> abs {x} % 4) (\\{x} {y} -> ",
                             self.i64(with_xy, d - 1), ") ", a(), ")")),
            (2, lambda: node(ARR1, f"(let {b} = ", a(), f" in interleave {b} (map (\\{x} -> ",
                             self.i64(with_x, d - 1), f") {b}))")),
            (2, lambda: node(ARR1, f"(let {b} = ", a(), f" in if length {b} > 0 then {b} with "
                             "[abs ", e(), f" % length {b}] = ", e(), f" else {b})")),
            (2, lambda: node(ARR1, f"(let ({b}, _) = partition (\\{x} -> ",
                             self.bool(with_x, d - 1), ") ", a(), f" in {b})")),
            (1, lambda: node(ARR1, f"(let (_, {b}) = partition (\\{x} -> ",
                             self.bool(with_x, d - 1), ") ", a(), f" in {b})")),
            (5, lambda: self.comprehension(sc, d)),
            (1, lambda: node(ARR1, "(generate ", self.size(sc, d), f" (\\{i} -> ",
                             self.i64(sc + ((i, I64),), d - 1), "))")),
            (3, lambda: self.array_loop(sc, d)),
            (2, lambda: node(ARR1, "(flatten ", self.arr2(sc, d - 1), ")")),
            (1, lambda: node(ARR1, f"(let {b} = ", self.arr2(sc, d - 1), f" in if length {b} > "
                             f"0 then {b}[abs ", e(), f" % length {b}] else ", a(), ")")),
            (1, lambda: node(ARR1, f"(let {b} = ", a(), f" in (unzip (zip {b} (reverse {b})))."
                             f"{r.choice('01')})")),
            (2, lambda: node(ARR1, "(if ", self.bool(sc, d - 1), " then ", a(), " else ", a(),
                             ")")),
            (1, lambda: node(ARR1, f"({self.use_def('bump')} ", a(), " ", e(), ")")),
        ])

    def sized(self, sc: Scope, d: int) -> Node:
        """An array whose length is a computed size (inside a map: one per point)."""
        i = self.fresh("i")
        return self.pick([
            (3, lambda: node(ARR1, "(iota ", self.size(sc, d + 1), ")")),
            (1, lambda: node(ARR1, "(replicate ", self.size(sc, d + 1), " ", self.i64(sc, d),
                             ")")),
            (1, lambda: node(ARR1, "(let lo = ", self.small(sc, d), " in [lo..<lo + ",
                             self.size(sc, d + 1), "])")),
            (1, lambda: node(ARR1, "(generate ", self.size(sc, d + 1), f" (\\{i} -> ",
                             self.i64(sc + ((i, I64),), d), "))")),
        ])

    def range(self, sc: Scope, d: int) -> Node:
        lo, hi = self.small(sc, d - 1), self.small(sc, d - 1)
        dots = self.rng.choice(["..<", ".."])
        step = self.pick([
            (3, lambda: node(I64, "")),
            (2, lambda: node(I64, f" by {self.rng.choice(['2', '3', '(-1)', '(-2)'])}")),
            (2, lambda: node(I64, " by (abs ", self.i64(sc, d - 1), " % 3 + 1)")),
        ])
        return node(ARR1, "[", lo, dots, hi, step, "]")

    def unique_indices(self, sc: Scope, d: int) -> Node:
        """Indices without repeats (which value `scatter` keeps for a repeated index is
        unspecified), some out of range (ignored)."""
        x = self.fresh("x")
        return self.pick([
            (2, lambda: node(ARR1, "(iota ", self.size(sc, d), ")")),
            (1, lambda: node(ARR1, "(reverse (iota ", self.size(sc, d), "))")),
            (1, lambda: node(ARR1, f"(map (\\{x} -> {x} * 2 - 1) (iota ", self.size(sc, d),
                             "))")),
            (1, lambda: node(ARR1, f"(filter (\\{x} -> ", self.bool(sc + ((x, I64),), d - 1),
                             ") (iota ", self.size(sc, d), "))")),
        ])

    def scatter(self, sc: Scope, d: int) -> Node:
        js, j = self.fresh("js"), self.fresh("j")
        inner = sc + ((j, I64),)
        return node(ARR1, f"(let {js} = ", self.unique_indices(sc, d - 1), " in scatter ",
                    self.arr1(sc, d - 1), f" {js} (map (\\{j} -> ", self.i64(inner, d - 1),
                    f") {js}))")

    def histogram(self, sc: Scope, d: int) -> Node:
        js, j = self.fresh("js"), self.fresh("j")
        op, ne = self.rng.choice([("(+)", "0"), ("max", LOWEST), ("min", HIGHEST)])
        return node(ARR1, f"(let {js} = ", self.arr1(sc, d - 1), " in reduce_by_index "
                    "(replicate ", self.size(sc, d - 1), f" 0) {op} {ne} {js} (map (\\{j} -> ",
                    self.i64(sc + ((j, I64),), d - 1), f") {js}))")

    def comprehension(self, sc: Scope, d: int) -> Node:
        x, y, b = self.fresh("x"), self.fresh("y"), self.fresh("a")
        with_x = sc + ((x, I64),)
        with_xy = with_x + ((y, I64),)
        a = lambda: self.arr1(sc, d - 1)
        body = lambda: self.i64(with_xy, d - 1)
        guard = lambda: node(BOOL, ", ", self.bool(with_xy, d - 1)) if self.chance(0.4) \
            else node(BOOL, "")
        inner = lambda: self.pick([
            (2, lambda: node(ARR1, "(iota ", self.size(with_x, d - 1), ")")),
            (1, lambda: node(ARR1, f"[{x} % 10..<{x} % 10 + ", self.size(with_x, d - 1), "]")),
            (1, lambda: self.arr1(sc, d - 1)),
        ])
        return self.pick([
            (2, lambda: node(ARR1, "[", body(), f" | {x} <- ", a(), f", {y} <- ", inner(),
                             guard(), "]")),
            (1, lambda: node(ARR1, "[", self.i64(with_x, d - 1), f" | {x} <- ", a(), ", ",
                             self.bool(with_x, d - 1), "]")),
            (1, lambda: node(ARR1, "[", body(), f" | {x} <- ", a(), f", let {y} = ",
                             self.i64(with_x, d - 1), guard(), "]")),
            (1, lambda: node(ARR1, f"(let {b} = ", a(), " in [", body(), f" | {x} <- {b} | "
                             f"{y} <- reverse {b}])")),
            (1, lambda: node(ARR1, f"(let {b} = ", a(), " in [", body(), f" | ({x}, {y}) <- "
                             f"zip {b} (map (\\{y} -> {y} * 2) {b})])")),
        ])

    def array_loop(self, sc: Scope, d: int) -> Node:
        acc, i, c, x = self.fresh("acc"), self.fresh("i"), self.fresh("c"), self.fresh("x")
        inner = sc + ((acc, ARR1), (i, I64))
        with_x = inner + ((x, I64),)
        body = lambda: self.pick([
            (2, lambda: node(ARR1, f"{acc} ++ [", self.i64(inner, d - 1), "]")),
            (2, lambda: node(ARR1, f"map (\\{x} -> ", self.i64(with_x, d - 1), f") {acc}")),
            (1, lambda: node(ARR1, f"let ({x}s, _) = partition (\\{x} -> ",
                             self.bool(with_x, d - 1), f") {acc} in {x}s")),
            (1, lambda: node(ARR1, f"filter (\\{x} -> ", self.bool(with_x, d - 1), f") {acc}")),
            (1, lambda: self.arr1(inner, d - 1)),
        ])
        return self.pick([
            (3, lambda: node(ARR1, f"(loop {acc} = ", self.arr1(sc, d - 1), f" for {i} < ",
                             self.size(sc, d - 1), " do ", body(), ")")),
            (1, lambda: node(ARR1, f"(loop {acc} = ", self.arr1(sc, d - 1),
                             f" while length {acc} < ", self.size(sc, d - 1),
                             f" do {acc} ++ [length {acc}])")),
            (1, lambda: node(ARR1, f"(while (\\{acc} -> length {acc} < 8) (\\{acc} -> {acc} ++ "
                             f"{acc} ++ [", self.i64(sc, d - 1), "]) ", self.arr1(sc, d - 1),
                             ")")),
            (2, lambda: node(ARR1, f"(let ({acc}, {c}) = loop ({acc}, {c}) = (",
                             self.arr1(sc, d - 1), f", 0) while {c} < ", self.size(sc, d - 1),
                             f" do ({acc} ++ [{c}], {c} + 1) in {acc})")),
        ])

    # ------------------------------------------------------------ nested arrays

    def arr2_leaf(self, sc: Scope) -> Node:
        name = self.var(sc, ARR2)
        if name is not None and self.chance(0.6):
            return node(ARR2, name)
        if self.chance(0.2):
            return node(ARR2, self.rng.choice(["([] : [][]i64)", "[([] : []i64)]"]))
        width = self.rng.randint(0, 3)
        rows = [array_lit(ARR1, [int_lit(self.rng.randint(-3, 9)) for _ in
                                 range(width if self.chance(0.6) else self.rng.randint(0, 3))])
                for _ in range(self.rng.randint(1, 3))]
        return array_lit(ARR2, rows)

    def arr2(self, sc: Scope, d: int) -> Node:
        if d <= 0:
            return self.arr2_leaf(sc)
        r = self.rng
        e, a, aa = (lambda: self.i64(sc, d - 1)), (lambda: self.arr1(sc, d - 1)), \
            (lambda: self.arr2(sc, d - 1))
        x, y, b, i, acc = (self.fresh(n) for n in ("x", "y", "r", "i", "acc"))
        with_x = sc + ((x, I64),)
        with_b = sc + ((b, ARR1),)
        options = [
            (3, lambda: self.arr2_leaf(sc)),
            (6, lambda: node(ARR2, f"(map (\\{x} -> ", self.arr1(with_x, d - 1), ") ", a(), ")")),
            (4, lambda: node(ARR2, f"(map (\\{x} -> ", self.sized(with_x, d - 1), ") ", a(), ")")),
            (2, lambda: node(ARR2, f"(map (\\{b} -> ", self.sized(with_b, d - 1), ") ", aa(),
                             ")")),
            (3, lambda: node(ARR2, f"(map (\\{b} -> ", self.arr1(with_b, d - 1), ") ", aa(),
                             ")")),
            (2, lambda: node(ARR2, f"(map (\\{x} -> [", self.i64(with_x, d - 1), ", ",
                             self.i64(with_x, d - 1), "]) ", a(), ")")),
            (1, lambda: node(ARR2, "(replicate ", self.size(sc, d), " ", a(), ")")),
            (1, lambda: array_lit(ARR2, [a() for _ in range(r.randint(1, 3))])),
            (2, lambda: node(ARR2, f"(filter (\\{b} -> ", self.bool(with_b, d - 1), ") ", aa(),
                             ")")),
            (4, lambda: node(ARR2, "(", aa(), " ++ ", aa(), ")")),
            (2, lambda: node(ARR2, f"(let {y} = ", aa(), f" in interleave {y} (map (\\{b} -> ",
                             self.arr1(with_b, d - 1), f") {y}))")),
            (2, lambda: self.scatter_rows(sc, d)),
            (2, lambda: node(ARR2, f"(let {y} = ", aa(), f" in if length {y} > 0 then {y} with "
                             "[abs ", e(), f" % length {y}] = ", a(), f" else {y})")),
            (2, lambda: node(ARR2, f"(let ({y}, _) = partition (\\{b} -> ",
                             self.bool(with_b, d - 1), ") ", aa(), f" in {y})")),
            (1, lambda: node(ARR2, f"({r.choice(['reverse', 'rotate 1'])} ", aa(), ")")),
            (1, lambda: node(ARR2, f"(let {y} = ", aa(), f" in {r.choice(['take', 'drop'])} "
                             "(abs ", e(), f" % (length {y} + 1)) {y})")),
            (3, lambda: node(ARR2, "[", self.arr1(with_x, d - 1), f" | {x} <- ", a(),
                             (", " + self.bool(with_x, d - 1).text) if self.chance(0.3) else "",
                             "]")),
            (1, lambda: node(ARR2, f"[[{x}, {y}] | {x} <- ", a(), f", {y} <- (iota ",
                             self.size(with_x, d - 1), ")]")),
            (2, lambda: node(ARR2, "(generate ", self.size(sc, d), f" (\\{i} -> ",
                             self.arr1(sc + ((i, I64),), d - 1), "))")),
            (2, lambda: node(ARR2, f"(loop {acc} = ", aa(), f" for {i} < ", self.size(sc, d - 1),
                             f" do {acc} ++ [", self.arr1(sc + ((acc, ARR2), (i, I64)), d - 1),
                             "])")),
            (2, lambda: node(ARR2, f"(transpose (map (\\{x} -> [", self.i64(with_x, d - 1),
                             ", ", self.i64(with_x, d - 1), f", {x}]) ", a(), "))")),
            (1, lambda: node(ARR2, "(transpose (replicate ", self.size(sc, d), " ", a(), "))")),
            (2, lambda: node(ARR2, "(if ", self.bool(sc, d - 1), " then ", aa(), " else ", aa(),
                             ")")),
            (1, lambda: node(ARR2, f"(let {y} = ", self.arr3(sc, d - 1), f" in if length {y} > "
                             f"0 then {y}[abs ", e(), f" % length {y}] else ", aa(), ")")),
        ]
        if self.hazard:
            options += [(self.hazard * 10, lambda: node(ARR2, "(transpose ", aa(), ")")),
                        (self.hazard * 10, lambda: node(ARR2, "(interleave ", aa(), " ", aa(),
                                                        ")"))]
        return self.pick(options)

    def scatter_rows(self, sc: Scope, d: int) -> Node:
        js, j = self.fresh("js"), self.fresh("j")
        return node(ARR2, f"(let {js} = ", self.unique_indices(sc, d - 1), " in scatter ",
                    self.arr2(sc, d - 1), f" {js} (map (\\{j} -> ",
                    self.arr1(sc + ((j, I64),), d - 1), f") {js}))")

    def arr3(self, sc: Scope, d: int) -> Node:
        name = self.var(sc, ARR3)
        if d <= 0:
            if name is not None and self.chance(0.5):
                return node(ARR3, name)
            return self.rng.choice([node(ARR3, "([] : [][][]i64)"), node(ARR3, "[[[1, 2], [3]]]"),
                                    node(ARR3, "[[[1], [2]], [[3], [4]]]")])
        x, b, c = self.fresh("x"), self.fresh("r"), self.fresh("rs")
        with_b = sc + ((b, ARR1),)
        aaa = lambda: self.arr3(sc, d - 1)
        return self.pick([
            (1, lambda: self.arr3(sc, 0)),
            (4, lambda: node(ARR3, f"(map (\\{x} -> ", self.arr2(sc + ((x, I64),), d - 1), ") ",
                             self.arr1(sc, d - 1), ")")),
            (2, lambda: node(ARR3, f"(map (\\{b} -> ", self.arr2(with_b, d - 1), ") ",
                             self.arr2(sc, d - 1), ")")),
            (2, lambda: node(ARR3, f"(map (\\{c} -> map (\\{b} -> ", self.arr1(with_b, d - 1),
                             f") {c}) ", aaa(), ")")),
            (1, lambda: array_lit(ARR3, [self.arr2(sc, d - 1) for _ in
                                         range(self.rng.randint(1, 2))])),
            (1, lambda: node(ARR3, "(replicate ", self.size(sc, d), " ", self.arr2(sc, d - 1),
                             ")")),
            (1, lambda: node(ARR3, f"(filter (\\{c} -> length {c} > ", self.i64(sc, d - 1),
                             ") ", aaa(), ")")),
            (1, lambda: node(ARR3, "(", aaa(), " ++ ", aaa(), ")")),
        ])
