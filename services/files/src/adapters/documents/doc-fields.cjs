// CommonJS, beside word-documents.mjs (the parser worker's .doc reading, which requires it), so the worker needs no
// TypeScript loader and the tests can require it too.
'use strict';

const FIELD_MARKS = /[\x13\x14\x15]/g;

/**
 * A .doc's text with each field showing its result (MS-DOC 2.8.25: 0x13 starts a field, 0x14 ends its instruction, 0x15
 * ends its result): "\x13 HYPERLINK "..." \x14shown\x15" is "shown", a field without a result nothing. Fields nest; an
 * inner field stands for its result inside the outer one's instruction or result. Marks without their partners stay (the
 * caller drops every control character after): a 0x15 with no field open, a 0x14 with none open or a second one in a
 * field (such a field keeps all its marks, and so does every field around it), a 0x13 never ended.
 *
 * One pass with a stack of the open fields, in time linear in the text: the text is cut into runs at the marks, a field
 * that ends well marks its runs from its start to its 0x14 (or to its end, without one) as left out, and the runs left
 * are joined once. (The first version took out the innermost fields on each pass until none was left, time quadratic in
 * the nesting: a 170 KB .doc of 40,000 nested fields held a parser worker 17 s, 816 KB more than its 120 s limit.)
 */
function withFieldResults(raw) {
  FIELD_MARKS.lastIndex = 0;
  if (!FIELD_MARKS.test(raw)) return raw;
  const runs = [];
  /** Pairs of run indexes [from, to] left out, each a field's start to its separator (or end). */
  const leftOut = [];
  const open = [];
  let from = 0;
  FIELD_MARKS.lastIndex = 0;
  for (let found; (found = FIELD_MARKS.exec(raw)); ) {
    if (found.index > from) runs.push(raw.slice(from, found.index));
    from = found.index + 1;
    const mark = found[0];
    const field = open[open.length - 1];
    if (mark === '\x13') {
      open.push({ start: runs.length, separator: -1, broken: false });
      runs.push(mark);
    } else if (mark === '\x14') {
      if (field) {
        if (field.separator < 0 && !field.broken) field.separator = runs.length;
        else field.broken = true;
      }
      runs.push(mark);
    } else if (!field) {
      runs.push(mark);
    } else {
      open.pop();
      if (field.broken) {
        // Its marks stay, inside the field around it too.
        runs.push(mark);
        if (open.length > 0) open[open.length - 1].broken = true;
      } else leftOut.push(field.start, field.separator < 0 ? runs.length - 1 : field.separator);
    }
  }
  if (from < raw.length) runs.push(raw.slice(from));
  if (leftOut.length === 0) return runs.join('');
  // The runs inside any left-out range, by a running count of the ranges open at each run.
  const changes = new Int32Array(runs.length + 1);
  for (let i = 0; i < leftOut.length; i += 2) {
    changes[leftOut[i]]++;
    changes[leftOut[i + 1] + 1]--;
  }
  const kept = [];
  for (let i = 0, depth = 0; i < runs.length; i++) {
    depth += changes[i];
    if (depth === 0) kept.push(runs[i]);
  }
  return kept.join('');
}

module.exports = { withFieldResults };
