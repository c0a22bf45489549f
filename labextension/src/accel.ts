/**
 * accel as a CodeMirror 6 language: a StreamLanguage (a line-by-line tokenizer with a small
 * state), its highlighting and its indentation rules.
 *
 * Why a StreamLanguage and not a Lezer grammar: accel's layout (the offside rule,
 * docs/language.md) would need an external tokenizer in Lezer, and the editor needs no syntax
 * tree: colours come from the tokens, indentation from the last token and the open brackets,
 * and the kernel's parser reports the real syntax errors when a cell runs.
 *
 * The word lists come from accel_kernel/kernel/highlight.py (KEYWORDS, CONSTANTS, TYPES,
 * BUILTINS) through the generated ./words.ts (scripts/build_labextension writes it).
 */
import {
  HighlightStyle,
  IndentContext,
  LanguageSupport,
  StreamLanguage,
  StringStream,
  syntaxHighlighting
} from '@codemirror/language';
import { tagHighlighter, tags } from '@lezer/highlight';

import { WORDS } from './words';

const keywords = new Set(WORDS.keywords);
const constants = new Set(WORDS.constants);
const types = new Set(WORDS.types);
const builtins = new Set(WORDS.builtins);

// A line ending with one of these continues in a deeper block (lang/completeness.py's
// _OPENERS, which the kernel's is_complete uses; brackets are handled on their own).
const BLOCK_OPENERS = new Set([
  '=', '->', '\\', 'def', 'let', 'in', 'if', 'then', 'else', 'loop', 'for', 'while', 'do',
  'with', 'by'
]);

const NAME = /^[A-Za-z_][A-Za-z0-9_']*/;
const NUMBER_SUFFIX = "(?:[iuf](?:8|16|32|64))?(?![A-Za-z0-9_'])";
const HEX = new RegExp('^0[xX][0-9a-fA-F_]+' + NUMBER_SUFFIX);
const DECIMAL = new RegExp(
  '^[0-9][0-9_]*(?:\\.[0-9][0-9_]*)?(?:[eE][+-]?[0-9]+)?' + NUMBER_SUFFIX
);
const OPERATOR =
  /^(?:>->|<-<|\|>|<\||->|<-|\.\.<|\.\.|\*\*|==|!=|<=|>=|&&|\|\||<<|>>|\+\+|[-+*/%<>=!&|^\\`])/;

interface Bracket {
  char: string;
  /** indentation of the line it was opened on */
  lineIndent: number;
  /** column just after it, when more follows it on its line (else -1) */
  alignTo: number;
}

export interface AccelState {
  /** a `%%python` cell: the rest is Python, not accel */
  python: boolean;
  /** the tokenizer is on the cell's first line */
  firstLine: boolean;
  /** the previous token was `def`: this name is the definition's */
  afterDef: boolean;
  brackets: Bracket[];
  /** the last token that is not a comment or a `%` line, and its line's indentation */
  lastToken: string | null;
  lastIndent: number;
  /** indentation of the line being read */
  lineIndent: number;
  /** the line being read has had a token that is not a comment */
  lineHasToken: boolean;
  /** on the last line with tokens: `if`s without their `else`, `loop`s without their `do` */
  unfinished: number;
}

function startState(): AccelState {
  return {
    python: false,
    firstLine: true,
    afterDef: false,
    brackets: [],
    lastToken: null,
    lastIndent: 0,
    lineIndent: 0,
    lineHasToken: false,
    unfinished: 0
  };
}

function copyState(state: AccelState): AccelState {
  return { ...state, brackets: state.brackets.map(b => ({ ...b })) };
}

/** The tag names of the tokens (CodeMirror's @lezer/highlight tags, dotted for modifiers). */
const TOKEN = {
  meta: 'meta',
  comment: 'lineComment',
  keyword: 'keyword',
  constant: 'bool',
  type: 'typeName',
  builtin: 'variableName.standard',
  definition: 'variableName.definition',
  name: 'variableName',
  number: 'number',
  operator: 'operator',
  paren: 'paren',
  squareBracket: 'squareBracket',
  brace: 'brace',
  punctuation: 'punctuation',
  string: 'string'
};

function significant(state: AccelState, text: string): void {
  if (!state.lineHasToken) {
    state.lineHasToken = true;
    state.unfinished = 0;
  }
  if (text === 'if' || text === 'loop') {
    state.unfinished += 1;
  } else if ((text === 'else' || text === 'do') && state.unfinished > 0) {
    state.unfinished -= 1;
  }
  state.lastToken = text;
  state.lastIndent = state.lineIndent;
}

function token(stream: StringStream, state: AccelState): string | null {
  const firstLine = state.firstLine;
  if (stream.sol()) {
    state.lineIndent = stream.indentation();
    state.lineHasToken = false;
    if (stream.pos === 0 && stream.match(/^%%?[A-Za-z_]\w*/, false)) {
      if (firstLine && stream.match(/^%%python\b/, false)) {
        state.python = true;
      }
      stream.skipToEnd();
      state.firstLine = false;
      return TOKEN.meta;
    }
  }
  state.firstLine = false;
  if (state.python) {
    stream.skipToEnd();
    return null;
  }
  if (stream.eatSpace()) {
    return null;
  }
  if (stream.match('--')) {
    stream.skipToEnd();
    return TOKEN.comment;
  }
  const afterDef = state.afterDef;
  state.afterDef = false;

  const name = stream.match(NAME) as RegExpMatchArray | null;
  if (name) {
    const word = name[0];
    // f64.sqrt, i32.max: a type's function
    if (types.has(word) && stream.match(/^\.[A-Za-z_][A-Za-z0-9_]*/)) {
      significant(state, word);
      return TOKEN.builtin;
    }
    significant(state, word);
    if (keywords.has(word)) {
      state.afterDef = word === 'def';
      return TOKEN.keyword;
    }
    if (constants.has(word)) {
      return TOKEN.constant;
    }
    if (types.has(word)) {
      return TOKEN.type;
    }
    if (afterDef) {
      return TOKEN.definition;
    }
    if (builtins.has(word)) {
      return TOKEN.builtin;
    }
    return TOKEN.name;
  }
  const number = (stream.match(HEX) || stream.match(DECIMAL)) as RegExpMatchArray | null;
  if (number) {
    significant(state, number[0]);
    return TOKEN.number;
  }
  const ch = stream.peek() as string;
  if (ch === '(' || ch === '[' || ch === '{') {
    stream.next();
    stream.eatSpace();
    const alignTo = stream.eol() || stream.match('--', false) ? -1 : stream.pos;
    stream.backUp(stream.current().length - 1);
    state.brackets.push({ char: ch, lineIndent: state.lineIndent, alignTo });
    significant(state, ch);
    return ch === '(' ? TOKEN.paren : ch === '[' ? TOKEN.squareBracket : TOKEN.brace;
  }
  if (ch === ')' || ch === ']' || ch === '}') {
    stream.next();
    state.brackets.pop();
    significant(state, ch);
    return ch === ')' ? TOKEN.paren : ch === ']' ? TOKEN.squareBracket : TOKEN.brace;
  }
  const operator = stream.match(OPERATOR) as RegExpMatchArray | null;
  if (operator) {
    significant(state, operator[0]);
    return TOKEN.operator;
  }
  if (ch === ',' || ch === ':' || ch === '.' || ch === ';') {
    stream.next();
    significant(state, ch);
    return TOKEN.punctuation;
  }
  if (ch === '"') {
    // not accel; only so that a stray quote does not colour the rest of the line oddly
    stream.next();
    stream.match(/^[^"]*"?/);
    significant(state, '"');
    return TOKEN.string;
  }
  stream.next();
  significant(state, ch);
  return null;
}

function blankLine(state: AccelState): void {
  state.firstLine = false;
}

/**
 * The indentation of a new line: the last line's, one unit deeper after a token that asks
 * for more (`=`, `->`, `in`, `then`, `else`, `do`, an operator, an open bracket, ...) or
 * after a line with an `if` still waiting for its `else` or a `loop` for its `do`; inside a
 * bracket that has more on its line, aligned after the bracket; a closing bracket goes back to
 * its opener's line.
 */
function indent(state: AccelState, textAfter: string, cx: IndentContext): number | null {
  if (state.python) {
    return null;
  }
  if (state.lastToken === null) {
    return 0;
  }
  const unit = cx.unit;
  const open = state.brackets[state.brackets.length - 1];
  if (open && /^[)\]}]/.test(textAfter)) {
    return open.lineIndent;
  }
  const last = state.lastToken;
  if (BLOCK_OPENERS.has(last)) {
    return state.lastIndent + unit;
  }
  if (open) {
    const justOpened = last === '(' || last === '[' || last === '{';
    return open.alignTo >= 0 && !justOpened ? open.alignTo : open.lineIndent + unit;
  }
  // `if c` and `loop acc = 0 for i < n` ask for their `then` and `do` on a deeper line
  if (OPERATOR.test(last) || last === ',' || last === ':' || state.unfinished > 0) {
    return state.lastIndent + unit;
  }
  return state.lastIndent;
}

export const accelLanguage = StreamLanguage.define<AccelState>({
  name: 'accel',
  startState,
  copyState,
  token,
  blankLine,
  indent,
  languageData: {
    commentTokens: { line: '--' },
    // a closing bracket typed at the start of a line goes back to its opener's indentation
    indentOnInput: /^\s*[)\]}]$/,
    closeBrackets: { brackets: ['(', '['] },
    wordChars: "_'"
  }
});

/** Stable class names on the tokens (`accel-keyword`, ...), for users' CSS and the tests. */
const accelClasses = tagHighlighter([
  { tag: tags.keyword, class: 'accel-keyword' },
  { tag: tags.bool, class: 'accel-constant' },
  { tag: tags.typeName, class: 'accel-type' },
  { tag: tags.standard(tags.variableName), class: 'accel-builtin' },
  { tag: tags.definition(tags.variableName), class: 'accel-definition' },
  { tag: tags.number, class: 'accel-number' },
  { tag: tags.comment, class: 'accel-comment' },
  { tag: tags.meta, class: 'accel-meta' },
  { tag: tags.operator, class: 'accel-operator' },
  { tag: tags.bracket, class: 'accel-bracket' }
]);

// JupyterLab's own style (jupyterHighlightStyle) colours keywords, booleans, numbers,
// builtins, definitions, operators and comments, but not types: give them the colour its
// themes define for CodeMirror 5's types (`variable-3`), only in accel editors.
const accelTypeStyle = HighlightStyle.define(
  [{ tag: tags.typeName, color: 'var(--jp-mirror-editor-variable-3-color)' }],
  { scope: accelLanguage }
);

export function accel(): LanguageSupport {
  return new LanguageSupport(accelLanguage, [
    syntaxHighlighting(accelClasses),
    syntaxHighlighting(accelTypeStyle)
  ]);
}
