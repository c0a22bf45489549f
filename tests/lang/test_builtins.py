"""The builtins table: every name of LANGUAGE.md §4/§7 with a well-formed scheme and a doc,
the operator schemes, and the little signature parser they are written with."""
import pytest

from accel_kernel.lang.builtins import (BUILTINS, OPERATORS, UNARY_OPERATORS, Builtin,
                                        SignatureError, _TABLE, parse_scheme)
from accel_kernel.lang.types import (CLASSES, Array, Func, Scalar, Scheme, Seq, Tuple, TypeVar,
                                     free_vars, show_scheme)

SOACS = ("map map2 map3 zip zip3 unzip unzip3 reduce scan filter partition iota replicate "
         "generate expand scatter reduce_by_index sort sort_by length flatten concat reverse "
         "transpose take drop head last interleave rotate while").split()
SCALAR_FUNCTIONS = ("min max abs sqrt exp log sin cos tan atan2 floor ceil round pi i32 i64 f32 "
                    "f64 select zero one lowest highest").split()
SEQUENCES = "produce stream mapSeq zipWithSeq foldSeq elements tabulate".split()
PRELUDE = "sum product maximum minimum all any count".split()


def test_every_language_name_is_built_in():
    for name in SOACS + SCALAR_FUNCTIONS + SEQUENCES + ["cond"]:
        assert name in BUILTINS, name


def test_prelude_names_are_not_built_in():
    assert not set(PRELUDE) & set(BUILTINS)


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_entry_is_well_formed(name):
    b = BUILTINS[name]
    assert isinstance(b, Builtin) and b.name == name
    assert isinstance(b.scheme, Scheme)
    assert set(b.scheme.vars) == free_vars(b.scheme.type)
    for var, cls in b.scheme.constraints.items():
        assert var in b.scheme.vars and cls in CLASSES
    assert b.doc.strip() and "\n" not in b.doc


@pytest.mark.parametrize("name,signature,doc", _TABLE)
def test_signatures_print_back_as_written(name, signature, doc):
    assert show_scheme(BUILTINS[name].scheme) == signature


def test_the_interpreter_implements_exactly_the_builtins():
    from accel_kernel.backends.interp.library import ALL_NAMES
    assert set(ALL_NAMES) == set(BUILTINS)


def test_selected_schemes():
    assert BUILTINS["map"].scheme == Scheme(
        ("a", "b"), Func(Func(TypeVar("a"), TypeVar("b")),
                         Func(Array(TypeVar("a")), Array(TypeVar("b")))))
    assert BUILTINS["pi"].scheme == Scheme((), Scalar("f64"))
    assert BUILTINS["zero"].scheme.constraints == {"a": "num"}
    assert BUILTINS["sqrt"].scheme.constraints == {"a": "float"}
    assert BUILTINS["i64"].scheme.constraints == {"a": "scalar"}
    assert BUILTINS["sort_by"].scheme.constraints == {"k": "scalar"}
    assert show_scheme(BUILTINS["expand"].scheme) == "(a -> i64) -> (a -> i64 -> b) -> []a -> []b"
    assert BUILTINS["produce"].scheme.type.result.result == Seq(TypeVar("a"))
    assert BUILTINS["unzip"].scheme.type.result == Tuple((Array(TypeVar("a")),
                                                          Array(TypeVar("b"))))


def test_operator_schemes():
    assert set(OPERATORS) == set("+ - * / % ** == != < <= > >= && || & | ^ << >> ++".split())
    assert str(OPERATORS["+"]) == "num a => a -> a -> a"
    assert str(OPERATORS["**"]) == "num a => a -> a -> a"
    assert str(OPERATORS["=="]) == "scalar a => a -> a -> bool"
    assert str(OPERATORS["<="]) == "scalar a => a -> a -> bool"
    assert str(OPERATORS["&&"]) == "bool -> bool -> bool"
    assert str(OPERATORS["^"]) == "bits a => a -> a -> a"
    assert str(OPERATORS[">>"]) == "int a => a -> a -> a"
    assert str(OPERATORS["++"]) == "[]a -> []a -> []a"
    assert str(UNARY_OPERATORS["-"]) == "num a => a -> a"
    assert str(UNARY_OPERATORS["!"]) == "bits a => a -> a"


@pytest.mark.parametrize("text", [
    "num a => a -> a -> a",
    "(a -> b) -> []a -> []b",
    "[](a, b, c) -> ([]a, []b, []c)",
    "i64 -> (i64 -> a) -> seq a",
    "seq []a -> []a",
    "[][]f32 -> (i64, bool)",
    "num a, scalar k => (a -> k) -> a",
    "(seq a -> b) -> b",
])
def test_parse_scheme_round_trips(text):
    assert show_scheme(parse_scheme(text)) == text


def test_parse_scheme_orders_variables_by_first_appearance():
    assert parse_scheme("(b -> a) -> []b -> a").vars == ("b", "a")


@pytest.mark.parametrize("bad", ["a ->", "foo a => a", "num b => a", "[a", "(a, b", "a b",
                                 "i64 $ i64", "Foo"])
def test_parse_scheme_rejects_malformed_signatures(bad):
    with pytest.raises(SignatureError):
        parse_scheme(bad)
