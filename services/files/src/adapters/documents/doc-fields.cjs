// CommonJS, beside word-documents.mjs (the parser worker's .doc reading, which requires it), so the worker needs no
// TypeScript loader and the tests can require it too.
'use strict';

const FIELD_MARKS = /[\x13\x14\x15]/g;
/** A HYPERLINK field's instruction (as instructionText reads it), with an http(s) target. */
const HYPERLINK_INSTRUCTION = /^\s*HYPERLINK\s+"(https?:\/\/[^"\s]+)"/i;
/** How much of an instruction instructionText reads: runs and characters (so the pass stays linear). */
const INSTRUCTION_RUNS = 64;
const INSTRUCTION_CHARACTERS = 2048;

/**
 * A field's instruction, runs[from] to runs[to - 1], as Word reads it: a field nested in it stands for its result
 * (HYPERLINK "\x13 REF url \x14https://...\x15" links to the result's address; a field after the target, e.g. one
 * without a result, leaves the target as it is). The fields nested in it ended well (else the field is broken and never
 * read), so their marks pair. Reads at most INSTRUCTION_RUNS runs and INSTRUCTION_CHARACTERS characters: the target
 * stands at the instruction's start, and each field's instruction is read once, so the pass stays linear.
 */
function instructionText(runs, from, to) {
  let text = '';
  // The nested fields open at each run, and how many of them are in their instruction (hidden).
  const inInstruction = [];
  let hidden = 0;
  for (let i = from; i < to && i < from + INSTRUCTION_RUNS && text.length < INSTRUCTION_CHARACTERS; i++) {
    const run = runs[i];
    if (run === '\x13') {
      inInstruction.push(true);
      hidden++;
    } else if (run === '\x14') {
      if (inInstruction[inInstruction.length - 1]) hidden--;
      inInstruction[inInstruction.length - 1] = false;
    } else if (run === '\x15') {
      if (inInstruction.pop()) hidden--;
    } else if (hidden === 0) {
      text += run.slice(0, INSTRUCTION_CHARACTERS - text.length);
    }
  }
  return text;
}

/**
 * The marks of a hyperlink's shown text (`linkMarks`): LINK_START, its target, LINK_TARGET_END, the shown text, LINK_END.
 * Private-use characters, which the worker makes deleted text where the document holds them (withoutDocMarks).
 */
const LINK_START = '\ue030';
const LINK_TARGET_END = '\ue032';
const LINK_END = '\ue031';

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
 *
 * With `linkMarks`, a HYPERLINK field's result to an http(s) target is wrapped in LINK_START + target + LINK_TARGET_END
 * and LINK_END, so the reading puts the link where the field stands (by its shown text alone, it went to the first
 * paragraph showing those words); its target is read from the instruction with the fields nested in it showing their
results (instructionText: a bounded read, so the pass stays linear; only the first run was read, and a nested field
dropped the link where others were marked).
 */
function withFieldResults(raw, { linkMarks = false } = {}) {
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
        if (field.separator < 0 && !field.broken) {
          field.separator = runs.length;
          runs.push(mark);
          // The place of the link's start mark, filled when the field ends well.
          if (linkMarks) {
            const link = HYPERLINK_INSTRUCTION.exec(instructionText(runs, field.start + 1, field.separator));
            if (link) {
              field.link = { url: link[1], at: runs.length };
              runs.push('');
            }
          }
          continue;
        }
        field.broken = true;
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
      } else {
        leftOut.push(field.start, field.separator < 0 ? runs.length - 1 : field.separator);
        if (field.link) {
          runs[field.link.at] = `${LINK_START}${field.link.url}${LINK_TARGET_END}`;
          runs.push(LINK_END);
        }
      }
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

module.exports = { withFieldResults, LINK_START, LINK_TARGET_END, LINK_END };
