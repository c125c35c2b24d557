// CommonJS, beside word-documents.mjs (the parser worker's .doc reading, which requires it) and required by
// block-collector.ts (the .docx and .odt reading), so both write a raised or lowered run alike and the worker needs no
// TypeScript loader.
'use strict';

/** Unicode's superscript and subscript forms (digits, signs, parentheses, the letters that have one). */
const FORMS = {
  sup: new Map(Array.from('0123456789+-\u2212=()ni').map((c, i) => [c, Array.from('\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b\u207b\u207c\u207d\u207e\u207f\u2071')[i]])),
  sub: new Map(Array.from('0123456789+-\u2212=()aeoxhklmnpst').map((c, i) => [c, Array.from('\u2080\u2081\u2082\u2083\u2084\u2085\u2086\u2087\u2088\u2089\u208a\u208b\u208b\u208c\u208d\u208e\u2090\u2091\u2092\u2093\u2095\u2096\u2097\u2098\u2099\u209a\u209b\u209c')[i]])),
};

/**
 * `text` in Unicode's superscript (`sup`) or subscript (`sub`) characters ("10⁻³", "H₂O"), or null when one of its
 * characters has no such form (the card allow-list has no sup or sub: DESIGN.md).
 */
function inScriptForms(text, kind) {
  const forms = FORMS[kind];
  const characters = Array.from(text);
  return characters.every((c) => forms.has(c)) ? characters.map((c) => forms.get(c)).join('') : null;
}

module.exports = { inScriptForms };
