"""The random program generator of `tests/fuzz/` and the compiled targets on its programs.

The generator must be deterministic per seed, make only programs that type check, and reach
what issue 18 asks for (the constructs, empty arrays, every run-time error kind); the shrinker
must cut a failing program down while it keeps failing. Then `numpy` runs 150 generated
programs and `cpu` 20 (a fixed corpus, so its kernels come from the cache after the first
run): each must give `interp`'s value or `interp`'s error (kind and line), and never crash.
`python -m tests.fuzz` runs many more outside the suite.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.fuzz.generate import generate  # noqa: E402
from tests.fuzz.run import (AGREE_ERROR, AGREE_VALUE, CRASH, DISAGREE, TIMEOUT,  # noqa: E402
                            UNBUILT, InProcess, Outcome, normalise, verdict)
from tests.fuzz.shrink import measure, shrink  # noqa: E402

SEED = 18                     # the stream the suite runs (issue 18)
# interp checks every regularity fact on the way: a wrong fact fails the program as a crash
RUNNER = InProcess(timeout=120.0, check_facts=True)


def interp_outcome(text: str) -> Outcome:
    return RUNNER.run(text, ["interp"])["interp"]


# ---------------------------------------------------------------- the generator

def test_the_generator_is_deterministic_per_seed():
    first = [generate(3, i).text for i in range(30)]
    assert first == [generate(3, i).text for i in range(30)]
    assert first != [generate(4, i).text for i in range(30)]
    assert len(set(first)) == 30


@pytest.mark.parametrize("seed", [SEED, 1])
def test_every_generated_program_type_checks(seed: int):
    rejected = []
    for index in range(150):
        text = generate(seed, index).text
        problem = RUNNER.check(text)
        if problem is not None:
            rejected.append(f"program {index}:\n{problem}\n{text}")
    assert not rejected, "\n\n".join(rejected[:3])


def test_the_generator_reaches_the_constructs_and_the_errors():
    texts = [generate(SEED, i).text for i in range(200)]
    corpus = "\n".join(texts)
    for construct in ["loop (", "while", "iota", "replicate", " ++ ", "interleave", "scatter",
                      " with [", "partition", "reduce_by_index", "expand", "sort", "transpose",
                      " by ", "([] : []i64)", "(iota 0)", "filter", "scan", "<- ", " | ",
                      ", let ", "generate", "(map (\\rs"]:
        assert construct in corpus, construct
    # maps nested three deep
    assert any(t.count("map (\\") >= 3 for t in texts)
    kinds = Counter()
    for text in texts:
        got = interp_outcome(text)
        kinds[got.detail if got.kind == "error" else got.kind] += 1
    assert kinds["value"] > 100, kinds
    assert {"IndexError", "DivisionByZero", "SizeError"} <= set(kinds), kinds


def test_programs_stay_small():
    for index in range(100):
        got = interp_outcome(generate(SEED, index).text)
        if got.kind == "value":
            assert got.detail.count(",") < 400, got.detail


# ---------------------------------------------------------------- judging and shrinking

def test_verdicts():
    value, other = Outcome("value", "[1, 2]"), Outcome("value", "[1]")
    error = Outcome("error", "SizeError", 3, 5)
    assert verdict(value, "numpy", value) == (AGREE_VALUE, "")
    assert verdict(value, "numpy", other) == (DISAGREE, "numpy: wrong value")
    assert verdict(value, "cpu", error) == (DISAGREE, "cpu: value vs SizeError")
    assert verdict(error, "cpu", Outcome("error", "SizeError", 3, 9)) == (AGREE_ERROR, "")
    assert verdict(error, "cpu", Outcome("error", "SizeError", 4, 5))[0] == DISAGREE
    assert verdict(error, "cpu", value) == (DISAGREE, "cpu: SizeError vs value")
    crash = Outcome("crash", "ValueError", message="binding concat_12: bad [r2]i64")
    assert verdict(value, "cpu", crash) == (CRASH, "cpu: crash ValueError: binding concat_#: "
                                                   "bad [r#]i64")
    assert verdict(value, "cpu", Outcome("timeout"))[0] == TIMEOUT
    assert verdict(value, "cpu", Outcome("unbuilt", message="transpose in a map"))[0] == UNBUILT
    assert normalise("a\nb") == "a"


def test_a_hang_is_reported_as_a_timeout():
    hang = "loop acc = 0 for i < 1000000000 do acc + i % 7"
    got = InProcess(timeout=0.5).run(hang, ["interp"])["interp"]
    assert got.kind == "timeout", got
    assert verdict(Outcome("value", "1"), "interp", got)[0] == TIMEOUT


def type_checks(text: str) -> bool:
    return RUNNER.check(text) is None


def test_the_shrinker_cuts_a_program_down_while_it_still_fails():
    # a fake comparator: the "target" disagrees whenever the program concatenates
    program = next(p for p in (generate(SEED, i) for i in range(100))
                   if " ++ " in p.text and p.size() > 40)
    small = shrink(program, lambda text: " ++ " in text, type_checks)
    assert " ++ " in small.text and type_checks(small.text)
    assert measure(small) < measure(program)
    assert small.size() <= 8, small.text


def test_the_shrinker_keeps_the_failure_class():
    # a fake target that always prints `0`: it disagrees with interp on a DivisionByZero
    def fails(text: str) -> bool:
        reference = interp_outcome(text)
        return verdict(reference, "fake", Outcome("value", "0")) == \
            (DISAGREE, "fake: DivisionByZero vs value")
    program = next(p for p in (generate(SEED, i) for i in range(400)) if fails(p.text))
    small = shrink(program, fails, type_checks)
    assert fails(small.text)
    assert small.size() < program.size()
    assert interp_outcome(small.text).detail == "DivisionByZero"


# ---------------------------------------------------------------- the compiled targets

def disagreements(target: str, count: int) -> list[str]:
    """Each generated program on which `target` disagrees with interp, crashes or hangs."""
    found = []
    for index in range(count):
        text = generate(SEED, index).text
        got = RUNNER.run(text, ["interp", target])
        if got["interp"].kind not in ("value", "error"):     # the reference itself failed
            found.append(f"program {index} (interp):\n{text}{got['interp'].describe()}")
            continue
        judged, cls = verdict(got["interp"], target, got[target])
        if judged in (DISAGREE, CRASH, TIMEOUT):
            found.append(f"program {index} ({cls}):\n{text}interp: {got['interp'].describe()}"
                         f"\n{target}: {got[target].describe()}")
    return found


def test_numpy_agrees_with_interp_on_generated_programs():
    found = disagreements("numpy", 150)
    assert not found, f"{len(found)} of 150 programs:\n\n" + "\n\n".join(found[:5])


def test_cpu_agrees_with_interp_on_generated_programs():
    found = disagreements("cpu", 20)
    assert not found, f"{len(found)} of 20 programs:\n\n" + "\n\n".join(found[:5])
