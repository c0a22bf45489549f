"""accel in JupyterLab's editor (the accel-kernel-codemirror extension, labextension/): every word
of highlight.py's lists, numbers, comments and meta-commands get their classes and JupyterLab's
colours (a `%%python` cell's Python does not); Enter indents continuation lines, so a `def`
typed line by line runs; a closing bracket typed on its own line goes back; brackets match;
Ctrl-/ toggles `--`.

The expected colours are JupyterLab's theme variables (`--jp-mirror-editor-keyword-color`,
...), resolved in the page; the indentation unit is JupyterLab's default (4 spaces)."""
from __future__ import annotations

from accel_kernel.kernel.highlight import BUILTINS, CONSTANTS, KEYWORDS, TYPES

from .lab import wait_for

UNIT = " " * 4      # JupyterLab's default indentation unit (Settings: "Indentation unit")

# token class -> (theme variable of its colour, bold)
STYLE = {
    "accel-keyword": ("keyword", True),
    "accel-constant": ("keyword", True),      # JupyterLab colours booleans as keywords
    "accel-type": ("variable-3", False),
    "accel-builtin": ("builtin", False),
    "accel-definition": ("def", False),
    "accel-number": ("number", False),
    "accel-comment": ("comment", False),
    "accel-meta": ("meta", False),
    "accel-operator": ("operator", True),
}

# Every text node of a cell's editor: its text, the classes of the spans around it (up to the
# line) and its computed colour and weight; and the theme's colours, resolved in the editor.
TOKENS_JS = """
const cell = document.querySelectorAll(arguments[0])[arguments[1]];
const content = cell.querySelector('.cm-content');
const tokens = [];
for (const line of content.querySelectorAll('.cm-line')) {
  const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const classes = [];
    for (let el = node.parentElement; el !== line; el = el.parentElement) {
      classes.push(...el.classList);
    }
    const style = getComputedStyle(node.parentElement);
    tokens.push({text: node.textContent, classes: classes, color: style.color,
                 bold: Number(style.fontWeight) >= 600});
  }
}
const colours = {};
for (const name of arguments[2]) {
  const probe = document.createElement('span');
  probe.style.color = `var(--jp-mirror-editor-${name}-color)`;
  cell.appendChild(probe);
  colours[name] = getComputedStyle(probe).color;
  probe.remove();
}
return {tokens: tokens, colours: colours};
"""

CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell"


def tokens_of(lab, index: int) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """{token text: [its occurrences]} of cell `index` and the theme's colours by name."""
    names = sorted({name for name, _ in STYLE.values()})
    found = lab.driver.execute_script(TOKENS_JS, CELLS, index, names)
    by_text: dict[str, list[dict]] = {}
    for token in found["tokens"]:
        by_text.setdefault(token["text"], []).append(token)
    return by_text, found["colours"]


def assert_styled(tokens: dict[str, list[dict]], colours: dict[str, str], text: str,
                  expected: str) -> None:
    occurrences = tokens.get(text)
    assert occurrences, f"{text!r} is not a token of its own: {sorted(tokens)}"
    colour, bold = STYLE[expected]
    for token in occurrences:
        assert expected in token["classes"], f"{text!r}: {token['classes']}, not {expected}"
        assert token["color"] == colours[colour], \
            f"{text!r} is {token['color']}, not --jp-mirror-editor-{colour}-color"
        assert token["bold"] == bold, f"{text!r}: bold {token['bold']}"


def test_every_word_number_and_comment_gets_its_colour(lab):
    source = "\n".join([
        "%time sums [[1, 2], [3]]",
        "-- every word of highlight.py's lists",
        " ".join(KEYWORDS),
        " ".join(CONSTANTS),
        " ".join(TYPES),
        " ".join(BUILTINS),
        "def sums (xs: [][]i64) = map (\\row -> reduce (+) 0 row) xs  -- rows' sums",
        "let ys = [1, 2.5f32, 0xff, 3i32, 255u8, 1e-3] ++ [f64.sqrt 2.0]",
    ])
    python = "%%python\ndef twice(x):\n    return map(x)"
    lab.write_notebook("highlight.ipynb", [source, python])
    lab.open("highlight.ipynb")
    lab.edit(0)

    def coloured():
        tokens, colours = tokens_of(lab, 0)
        return (tokens, colours) if "def" in tokens else None

    tokens, colours = wait_for(coloured, "the cell's tokens")
    lab.screenshot("highlight")

    for words, expected in ((KEYWORDS, "accel-keyword"), (CONSTANTS, "accel-constant"),
                            (TYPES, "accel-type"), (BUILTINS, "accel-builtin")):
        for word in words:
            assert_styled(tokens, colours, word, expected)
    for number in ("1", "2.5f32", "0xff", "3i32", "255u8", "1e-3", "0", "2.0"):
        assert_styled(tokens, colours, number, "accel-number")
    assert_styled(tokens, colours, "-- every word of highlight.py's lists", "accel-comment")
    assert_styled(tokens, colours, "-- rows' sums", "accel-comment")
    assert_styled(tokens, colours, "%time sums [[1, 2], [3]]", "accel-meta")
    assert_styled(tokens, colours, "sums", "accel-definition")
    assert_styled(tokens, colours, "f64.sqrt", "accel-builtin")
    for operator in ("->", "++", "+", "="):
        assert_styled(tokens, colours, operator, "accel-operator")
    # names stay plain (in the unstyled text between tokens)
    plain = [t for text, found in tokens.items() for t in found if "row" in text.split()]
    assert plain and not any(c.startswith("accel-") for t in plain for c in t["classes"])

    # a %%python cell is Python: only its first line is coloured (as a meta-command)
    python_tokens, _ = tokens_of(lab, 1)
    assert_styled(python_tokens, colours, "%%python", "accel-meta")
    assert not any(c.startswith("accel-") for text, found in python_tokens.items()
                   if text != "%%python" for t in found for c in t["classes"])


def press_enter_between(lab, lines: list[str]) -> None:
    """Type `lines` into the focused editor with Enter between them, as a user does."""
    from selenium.webdriver import ActionChains
    from selenium.webdriver.common.keys import Keys
    actions = ActionChains(lab.driver)
    for number, line in enumerate(lines):
        if number:
            actions.send_keys(Keys.ENTER)
        actions.send_keys(line)
    actions.perform()


def test_enter_indents_so_a_def_typed_line_by_line_runs(lab):
    lab.write_notebook("indent.ipynb", ["", "twice_plus_one 20", "", "", "sign (-3)"])
    lab.open("indent.ipynb")
    lab.edit(0)
    press_enter_between(lab, ["def twice_plus_one x =", "let y = x * 2", "in y + 1"])
    expected = f"def twice_plus_one x =\n{UNIT}let y = x * 2\n{UNIT}in y + 1"
    wait_for(lambda: lab.source(0) == expected, f"cell 0 to read {expected!r}, "
             f"not {lab.source(0)!r}", timeout=10)
    assert lab.run_cell(0) == ""
    assert lab.run_cell(1).split()[-1] == "41"

    # a bracket's lines, and a closing bracket typed on its own line goes back
    lab.edit(2)
    press_enter_between(lab, ["let xs = [", "1, 2,", "3", "]"])
    expected = f"let xs = [\n{UNIT}1, 2,\n{UNIT}3\n]"
    wait_for(lambda: lab.source(2) == expected, f"cell 2 to read {expected!r}, "
             f"not {lab.source(2)!r}", timeout=10)
    assert lab.run_cell(2) == ""

    # an `if` waiting for its `then`: the next line goes deeper
    lab.edit(3)
    press_enter_between(lab, ["def sign x =", "if x < 0", "then -1", "else 1"])
    expected = f"def sign x =\n{UNIT}if x < 0\n{UNIT * 2}then -1\n{UNIT * 2}else 1"
    wait_for(lambda: lab.source(3) == expected, f"cell 3 to read {expected!r}, "
             f"not {lab.source(3)!r}", timeout=10)
    lab.screenshot("indent")
    assert lab.run_cell(3) == ""
    assert lab.run_cell(4).split()[-1] == "-1"


def test_brackets_match_and_ctrl_slash_comments(lab):
    from selenium.webdriver import ActionChains
    from selenium.webdriver.common.keys import Keys
    lab.write_notebook("brackets.ipynb", [""])
    lab.open("brackets.ipynb")
    lab.type_into(0, "map (\\x -> x + 1) [1, 2]")
    # the cursor after `]`: it and its `[` are marked
    matched = wait_for(lambda: lab.cell(0).find_elements("css selector", ".cm-matchingBracket"),
                       "the brackets to match", timeout=10)
    assert sorted(element.text for element in matched) == ["[", "]"]
    lab.screenshot("brackets")

    (ActionChains(lab.driver).key_down(Keys.CONTROL).send_keys("/").key_up(Keys.CONTROL)
     .perform())
    wait_for(lambda: lab.source(0) == "-- map (\\x -> x + 1) [1, 2]", "the line commented",
             timeout=10)
    (ActionChains(lab.driver).key_down(Keys.CONTROL).send_keys("/").key_up(Keys.CONTROL)
     .perform())
    wait_for(lambda: lab.source(0) == "map (\\x -> x + 1) [1, 2]", "the line uncommented",
             timeout=10)
