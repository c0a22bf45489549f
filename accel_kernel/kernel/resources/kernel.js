// CodeMirror 5 mode for accel, loaded by the classic Jupyter Notebook (6.x / nbclassic)
// from the kernelspec. JupyterLab 4 and Notebook 7 do not load kernel.js: there the
// accel-kernel-codemirror extension (labextension/, docs/kernel.md) gives the language.
define([
  "codemirror/lib/codemirror",
  "base/js/namespace",
  "base/js/events",
  "codemirror/addon/mode/simple",
], function (CodeMirror, Jupyter, events) {
  "use strict";

  // The word lists of accel_kernel/kernel/highlight.py: install.py (write_kernelspec) writes
  // them over the empty lists of the next line when it installs the kernelspec.
  var words = /* ACCEL_WORDS */ {"keywords": [], "constants": [], "types": [], "builtins": []};

  function wordsRegex(words) {
    return new RegExp("(?:" + words.join("|") + ")(?![A-Za-z0-9_'])");
  }

  function defineAccelMode() {
    CodeMirror.defineSimpleMode("accel", {
      start: [
        { regex: /^%%?[A-Za-z_]\w*/, token: "meta", sol: true },
        { regex: /--.*/, token: "comment" },
        { regex: /(def)(\s+)([A-Za-z_][A-Za-z0-9_']*)/, token: ["keyword", null, "def"] },
        { regex: wordsRegex(words.constants), token: "atom" },
        { regex: wordsRegex(words.keywords), token: "keyword" },
        { regex: new RegExp("(?:" + words.types.join("|") + ")\\.[A-Za-z_][A-Za-z0-9_]*"),
          token: "builtin" },
        { regex: wordsRegex(words.types), token: "type" },
        { regex: wordsRegex(words.builtins), token: "builtin" },
        { regex: /0[xX][0-9a-fA-F_]+(?:[iu](?:8|16|32|64))?/, token: "number" },
        { regex: /-?(?:\d[\d_]*\.\d[\d_]*(?:[eE][+-]?\d+)?|\d[\d_]*[eE][+-]?\d+)(?:f32|f64)?/,
          token: "number" },
        { regex: /-?\d[\d_]*(?:[iuf](?:8|16|32|64))?/, token: "number" },
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
