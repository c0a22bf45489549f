"""The argmin fact (`ir/scalar_index_facts.py`): in a counted loop, a part of the state that
starts negative and is only ever itself or the index is below the index, so comparing the
two is decided; anything else is left alone. The programs' values with and without the fact
are compared with the interpreter by tests/test_programs.py (argmin_ties_in_map.accel)."""
from __future__ import annotations

from accel_kernel.ir import scalar as S
from accel_kernel.ir.scalar_index_facts import known_comparisons

I, F, B = "i64", "f64", "bool"
STATE = (F, I)


def var(name: str, t: str = I) -> S.Var:
    return S.Var(name, t)


def nearer_loop(init_index: S.Expr = S.Const(-1, I), next_index: S.Expr = var("i2"),
                tie: str = "<") -> S.Loop:
    """loop acc = (1.5, init_index) for j < n do
         let ((d1, i1), (d2, i2)) = (acc, (x, j))
         in if d2 < d1 || d2 == d1 && i2 <tie> i1 then (d2, next_index) else (d1, i1)"""
    cond = S.Binary("||", S.Binary("<", var("d2", F), var("d1", F), B),
                    S.Binary("&&", S.Binary("==", var("d2", F), var("d1", F), B),
                             S.Binary(tie, var("i2"), var("i1"), B), B), B)
    body = S.Let((("d1", "i1"), ("d2", "i2")),
                 S.Tuple((var("acc", STATE), S.Tuple((var("x", F), var("j")), STATE)),
                         (STATE, STATE)),
                 S.If(cond, S.Tuple((var("d2", F), next_index), STATE),
                      S.Tuple((var("d1", F), var("i1")), STATE), STATE), STATE)
    return S.Loop("acc", S.Tuple((S.Const(1.5, F), init_index), STATE),
                  S.ForRange("j", var("n")), body, STATE)


def condition(loop: S.Loop) -> S.Expr:
    return loop.body.body.cond


def test_the_argmin_tie_is_decided_and_the_condition_folds():
    cond = condition(known_comparisons(nearer_loop()))
    assert cond == S.Binary("<", var("d2", F), var("d1", F), B)


def test_a_tie_to_the_higher_index_is_decided_the_other_way():
    cond = condition(known_comparisons(nearer_loop(tie=">")))
    assert cond == S.Binary("||", S.Binary("<", var("d2", F), var("d1", F), B),
                            S.Binary("==", var("d2", F), var("d1", F), B), B)


def test_nothing_is_decided_without_the_fact():
    for loop in (nearer_loop(init_index=S.Const(0, I)),            # may equal the index
                 nearer_loop(init_index=var("m")),                  # unknown start
                 nearer_loop(next_index=S.Binary("+", var("j"), S.Const(1, I), I))):
        assert known_comparisons(loop) is loop


def test_a_part_that_keeps_its_value_in_every_branch_stays_below():
    cond = condition(known_comparisons(nearer_loop(next_index=var("i1"))))
    assert cond == S.Binary("<", var("d2", F), var("d1", F), B)


def test_a_while_loop_is_left_alone():
    loop = nearer_loop()
    loop = S.Loop(loop.state, loop.init, S.While(S.Const(True, B)), loop.body, loop.type)
    assert known_comparisons(loop) is loop


def test_an_effect_on_the_left_keeps_the_conjunction():
    loop = nearer_loop()
    risky = S.Binary("==", S.Binary("/", var("a"), var("b"), I), S.Const(1, I), B)
    cond = S.Binary("&&", risky, S.Binary("<", var("i2"), var("i1"), B), B)
    body = loop.body
    loop = S.Loop(loop.state, loop.init, loop.form,
                  S.Let(body.target, body.value, S.If(cond, body.body.then, body.body.else_,
                                                      STATE), STATE), STATE)
    assert condition(known_comparisons(loop)) == S.Binary("&&", risky, S.Const(False, B), B)
