"""What a counted loop's body knows about its index: the argmin fact, for the scalar translators.

    known_comparisons(loop) -> the loop with its body's decided comparisons made constants

In `loop s = init for j < n do body`, a part of the state whose initial value is a negative
integer constant and whose next value is, in every branch of the body, either that part
itself or the index `j`, is below `j` in every iteration: by induction, `init < 0 <= j`, and
a next value of `s` or `j` is at most `j`, below the next index `j + 1`. That is the loop of
an argmin, an argmax, a nearest neighbour: a `reduce` of (distance, index) pairs with the
lower index winning a tie, as SEQ-INNER writes it for k-means' `nearest`,

    loop acc = (inf, -1) for j < k do
      let ((d1, i1), (d2, i2)) = (acc, (dist j, j))
      in if d2 < d1 || d2 == d1 && i2 < i1 then (d2, i2) else (d1, i1)

Here `i2 < i1` compares the index with such a part, so it is false: the condition becomes
`d2 < d1` (`x && false` is false when `x` has no effect and cannot fail; `x || false` is
`x`). The comparison that can never hold cost k-means' kernel half its time: it puts the
state's index on the path from one iteration to the next.

The facts come from an abstract evaluation of the body: each value is `INDEX` (equal to
`j`), `BELOW` (less than `j`), `AT_MOST` (at most `j`) or unknown (None); tuples of them for
tuples. Everything else (arithmetic, calls, inner loops) is unknown, so the facts are sound
whatever the body does.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import scalar as S

INDEX, BELOW, AT_MOST = "index", "below", "at most"

# (left, right) -> the value of each comparison, when it is decided
_DECIDED = {
    (INDEX, BELOW): {"<": False, "<=": False, ">": True, ">=": True, "==": False, "!=": True},
    (BELOW, INDEX): {"<": True, "<=": True, ">": False, ">=": False, "==": False, "!=": True},
}


def known_comparisons(loop: S.Loop) -> S.Loop:
    """`loop` with the comparisons its body decides between the index and a part of the
    state below it replaced by constants (the same loop when there are none)."""
    if not isinstance(loop.form, S.ForRange):
        return loop
    below = _negative_parts(loop.init)
    while _any(below):
        env = _bind(loop.state, below, {loop.form.var: INDEX})
        kept = _keep(below, _eval(loop.body, env))
        if kept == below:
            body = _decide(loop.body, env)
            return loop if body is loop.body else replace(loop, body=body)
        below = kept
    return loop


def _negative_parts(init: S.Expr) -> Any:
    """`BELOW` for each part of the initial state that is a negative integer constant."""
    if isinstance(init, S.Tuple):
        return tuple(_negative_parts(e) for e in init.elems)
    if isinstance(init, S.Unary) and init.op == "-" and isinstance(init.operand, S.Const):
        init = S.Const(-init.operand.value, init.type)
    if isinstance(init, S.Const) and init.type in ("i32", "i64") and init.value < 0:
        return BELOW
    return None


def _any(facts: Any) -> bool:
    return any(_any(f) for f in facts) if isinstance(facts, tuple) else facts is not None


def _keep(hypothesis: Any, next_state: Any) -> Any:
    """The parts of the hypothesis the next state keeps: at most the index (the next one is
    higher)."""
    if isinstance(hypothesis, tuple):
        nexts = next_state if isinstance(next_state, tuple) else (None,) * len(hypothesis)
        return tuple(_keep(h, n) for h, n in zip(hypothesis, nexts))
    return BELOW if hypothesis is not None and next_state in (INDEX, BELOW, AT_MOST) else None


def _bind(target: S.Target, value: Any, env: dict) -> dict:
    env = dict(env)
    if isinstance(target, tuple):
        parts = value if isinstance(value, tuple) else (None,) * len(target)
        for t, v in zip(target, parts):
            env = _bind(t, v, env)
    else:
        env[target] = value
    return env


def _join(a: Any, b: Any) -> Any:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return tuple(_join(x, y) for x, y in zip(a, b))
    if a == b:
        return a
    if a in (INDEX, BELOW, AT_MOST) and b in (INDEX, BELOW, AT_MOST):
        return AT_MOST
    return None


def _eval(node: S.Expr, env: dict) -> Any:
    """The abstract value of `node` (None: nothing known)."""
    if isinstance(node, S.Var):
        return env.get(node.name)
    if isinstance(node, S.Tuple):
        return tuple(_eval(e, env) for e in node.elems)
    if isinstance(node, S.Project):
        whole = _eval(node.expr, env)
        return whole[node.index] if isinstance(whole, tuple) else None
    if isinstance(node, S.Let):
        return _eval(node.body, _bind(node.target, _eval(node.value, env), env))
    if isinstance(node, S.If):
        return _join(_eval(node.then, env), _eval(node.else_, env))
    return None


def _decide(node: S.Expr, env: dict) -> S.Expr:
    """`node` with its decided comparisons constant (the same object when none is)."""
    if isinstance(node, S.Let):
        value = _decide(node.value, env)
        body = _decide(node.body, _bind(node.target, _eval(node.value, env), env))
        if value is node.value and body is node.body:
            return node
        return replace(node, value=value, body=body)
    if isinstance(node, S.Binary):
        left, right = _decide(node.left, env), _decide(node.right, env)
        known = _DECIDED.get((_eval(left, env), _eval(right, env)), {}).get(node.op)
        if known is not None:
            return S.Const(known, "bool", span=node.span)
        if node.op in S.SHORT_CIRCUIT:
            folded = _fold(node.op, left, right)
            if folded is not None:
                return folded
        if left is node.left and right is node.right:
            return node
        return replace(node, left=left, right=right)
    if isinstance(node, (S.If, S.Tuple, S.Project, S.Unary, S.Call)):
        changes = {f: _decide_field(getattr(node, f), env)
                   for f in ("cond", "then", "else_", "elems", "expr", "operand", "args")
                   if hasattr(node, f)}
        if all(new is getattr(node, f) for f, new in changes.items()):
            return node
        return replace(node, **changes)
    return node          # a nested loop (its own index), a read of a free variable, ...


def _decide_field(value: Any, env: dict) -> Any:
    if isinstance(value, tuple):
        new = tuple(_decide(e, env) for e in value)
        return value if all(a is b for a, b in zip(new, value)) else new
    return _decide(value, env)


def _fold(op: str, left: S.Expr, right: S.Expr) -> S.Expr | None:
    """`x && false` -> false (when `x` has no effect), `x || false` -> `x`, and the same
    with `true` on the other side; None when nothing folds."""
    if not isinstance(right, S.Const):
        return None
    if (op, right.value) in (("||", False), ("&&", True)):
        return left
    if (op, right.value) in (("&&", False), ("||", True)) and _pure(left):
        return S.Const(op == "||", "bool", span=left.span)
    return None


def _pure(node: S.Expr) -> bool:
    """No effect and no failure: variables, constants, comparisons and logic of them."""
    if isinstance(node, (S.Var, S.Const, S.Free)):
        return True
    if isinstance(node, S.Binary):
        return (node.op in S.COMPARISONS or node.op in S.SHORT_CIRCUIT) \
            and _pure(node.left) and _pure(node.right)
    if isinstance(node, S.Unary):
        return node.op == "!" and _pure(node.operand)
    if isinstance(node, S.Project):
        return _pure(node.expr)
    return False
