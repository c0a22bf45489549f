"""A Pygments lexer for accel (`pygments_lexer: accel` in the kernel's language_info).

Registered as the `pygments.lexers` entry point `accel`, so nbconvert, Sphinx and
`pygmentize -l accel` find it. Highlights keywords, built-in and prelude functions, scalar
types, numbers with their suffixes (`3i32`, `1.5f32`), `--` comments, operators and `%`
meta-command lines.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String,
                            Text, Whitespace)

KEYWORDS = ("def", "let", "in", "if", "then", "else", "loop", "for", "while", "do", "with",
            "by")
CONSTANTS = ("true", "false")
TYPES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "seq")
# LANGUAGE.md §4 and §7 (lang/builtins.py) and the prelude; `while` and the conversions
# the conversions (`i32`, `u8`, ...) are highlighted as types.
BUILTINS = (
    "map", "map2", "map3", "zip", "zip3", "unzip", "unzip3", "reduce", "scan", "filter",
    "partition", "iota", "replicate", "generate", "expand", "scatter", "reduce_by_index",
    "sort", "sort_by", "cond", "length", "flatten", "concat", "reverse", "transpose", "take",
    "drop", "head", "last", "interleave", "rotate", "min", "max", "abs", "sqrt", "exp", "log",
    "sin", "cos", "tan", "atan2", "floor", "ceil", "round", "pi", "select", "zero", "one",
    "lowest", "highest", "produce", "stream", "mapSeq", "zipWithSeq", "foldSeq", "elements",
    "tabulate",
    # prelude.accel
    "sum", "product", "maximum", "minimum", "all", "any", "count", "null", "tail", "init",
    "copy", "foldl", "foldr", "hist", "flatten_3d", "map4", "map5", "zip4", "unzip4",
    "indices", "unflatten", "unflatten_3d", "flatten_4d", "scatter_2d", "scatter_3d",
    "reduce_by_index_2d", "hist_2d", "reduce_comm", "map1",
)

_NAME_END = r"(?![A-Za-z0-9_'])"
_QUALIFIER = r"(?:[iu](?:8|16|32|64)|f32|f64)"            # `u32.i64`, `f64.sqrt`
_INT_SUFFIX = r"(?:[iu](?:8|16|32|64))"                   # `255u8`, `3i32`


class AccelLexer(RegexLexer):
    """accel: a nested data-parallel array language (accel_kernel)."""

    name = "accel"
    aliases = ["accel"]
    filenames = ["*.accel"]
    mimetypes = ["text/x-accel"]

    tokens = {
        "root": [
            (r"^%%?[A-Za-z_]\w*.*?$", Comment.Preproc),     # meta-command line
            (r"--.*?$", Comment.Single),
            (r"\s+", Whitespace),
            (r"(def)(\s+)([A-Za-z_][A-Za-z0-9_']*)", bygroups(Keyword, Whitespace, Name.Function)),
            (words(KEYWORDS, suffix=_NAME_END), Keyword),
            (words(CONSTANTS, suffix=_NAME_END), Keyword.Constant),
            (_QUALIFIER + r"\.[A-Za-z_][A-Za-z0-9_]*", Name.Builtin),          # f64.sqrt
            (words(TYPES, suffix=_NAME_END), Keyword.Type),
            (words(BUILTINS, suffix=_NAME_END), Name.Builtin),
            (r"\d+\.\d+(?:[eE][+-]?\d+)?(?:f32|f64)?" + _NAME_END, Number.Float),
            (r"\d+[eE][+-]?\d+(?:f32|f64)?" + _NAME_END, Number.Float),
            (r"\d+(?:f32|f64)" + _NAME_END, Number.Float),
            (r"0[xX][0-9a-fA-F_]+" + _INT_SUFFIX + "?" + _NAME_END, Number.Hex),
            (r"\d[\d_]*" + _INT_SUFFIX + "?" + _NAME_END, Number.Integer),
            (r"(\.)(\d+)", bygroups(Punctuation, Number.Integer)),      # t.0 projection
            (r"[A-Za-z_][A-Za-z0-9_']*", Name),
            (r">->|<-<|\|>|<\||`|\\|->|<-|\.\.<|\.\.|\*\*|==|!=|<=|>=|&&|\|\||<<|>>|\+\+|[-+*/%<>=!&|^]",
             Operator),
            (r"[\[\](){},.:]", Punctuation),
            (r"\"[^\"\n]*\"", String),     # not accel; only so a stray quote is not an error
            (r".", Text),
        ],
    }
