// CodeMirror 5 mode for accel, loaded by the classic Jupyter Notebook (6.x / nbclassic)
// from the kernelspec. JupyterLab 4 and Notebook 7 do not load kernel.js: there the kernel's
// language_info.codemirror_mode ("haskell") gives close-enough highlighting.
define([
  "codemirror/lib/codemirror",
  "base/js/namespace",
  "base/js/events",
  "codemirror/addon/mode/simple",
], function (CodeMirror, Jupyter, events) {
  "use strict";

  var keywords = ["def", "let", "in", "if", "then", "else", "loop", "for", "while", "do",
    "with", "by"];
  var builtins = ["map", "map2", "map3", "zip", "zip3", "unzip", "unzip3", "reduce", "scan",
    "filter", "partition", "iota", "replicate", "generate", "expand", "scatter",
    "reduce_by_index", "sort", "sort_by", "cond", "length", "flatten", "concat", "reverse",
    "transpose", "take", "drop", "head", "last", "interleave", "rotate", "min", "max", "abs",
    "sqrt", "exp", "log", "sin", "cos", "tan", "atan2", "floor", "ceil", "round", "pi",
    "select", "zero", "one", "lowest", "highest", "produce", "stream", "mapSeq", "zipWithSeq",
    "foldSeq", "elements", "tabulate", "sum", "product", "maximum", "minimum", "all", "any",
    "count", "null", "tail", "init", "copy", "foldl", "foldr", "hist", "flatten_3d", "map4",
    "map5", "zip4", "unzip4"];
  var types = ["bool", "i32", "i64", "f32", "f64", "seq"];

  function wordsRegex(words) {
    return new RegExp("(?:" + words.join("|") + ")(?![A-Za-z0-9_'])");
  }

  function defineAccelMode() {
    CodeMirror.defineSimpleMode("accel", {
      start: [
        { regex: /^%%?[A-Za-z_]\w*/, token: "meta", sol: true },
        { regex: /--.*/, token: "comment" },
        { regex: /(def)(\s+)([A-Za-z_][A-Za-z0-9_']*)/, token: ["keyword", null, "def"] },
        { regex: /\b(?:true|false)\b/, token: "atom" },
        { regex: wordsRegex(keywords), token: "keyword" },
        { regex: /(?:i32|i64|f32|f64)\.[A-Za-z_][A-Za-z0-9_]*/, token: "builtin" },
        { regex: wordsRegex(types), token: "type" },
        { regex: wordsRegex(builtins), token: "builtin" },
        { regex: /-?(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?:f32|f64)?/, token: "number" },
        { regex: /-?\d+(?:i32|i64|f32|f64)?/, token: "number" },
        { regex: />->|<-<|\|>|<\||`|\\|->|<-|\.\.<|\.\.|\*\*|==|!=|<=|>=|&&|\|\||<<|>>|\+\+|[-+*\/%<>=!&|^]/,
          token: "operator" },
        { regex: /[A-Za-z_][A-Za-z0-9_']*/, token: "variable" },
        { regex: /[\[\](){},.:]/, token: "bracket" },
      ],
      meta: { lineComment: "--", electricChars: "])" },
    });
    CodeMirror.defineMIME("text/x-accel", "accel");
  }

  function useAccelMode() {
    if (Jupyter.notebook && Jupyter.notebook.set_codemirror_mode) {
      Jupyter.notebook.set_codemirror_mode("accel");
    }
  }

  return {
    onload: function () {
      defineAccelMode();
      useAccelMode();
      // The notebook resets the mode from language_info when the kernel (re)starts.
      events.on("kernel_ready.Kernel", useAccelMode);
    },
  };
});
