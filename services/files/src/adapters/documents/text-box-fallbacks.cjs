// CommonJS, beside word-documents.mjs (the parser worker's Word reading, which requires it), so the worker needs no
// TypeScript loader and the tests can require it too.
'use strict';

/** At most this many text boxes are copied into one built fallback. */
const MAX_BOXES = 1000;

/**
 * Gives each mc:AlternateContent under `root` (mammoth's XML elements) without an mc:Fallback one made of its
 * mc:Choice's outermost w:txbxContent elements (mc:Fallback > w:pict > v:textbox), which mammoth reads as a VML text box.
 * `element(name, attributes, children)` is mammoth's element factory.
 *
 * The built fallback holds the very elements still inside the choice, so it is not walked: a box's content is walked
 * once, through its choice. (Walking into the fallback too walked every level of nested boxes twice, 2^depth times the
 * innermost: 26 levels took 17 s.) The search for a choice's boxes stops at a box and at an mc:AlternateContent inside
 * the choice, which goes into the fallback as it is (mammoth reads its own fallback, made when the walk reaches it), so
 * no node is searched twice either. Returns the number of nodes visited: at most twice the document's.
 */
function addTextBoxFallbacks(root, element) {
  let walked = 0;
  const pending = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    walked++;
    if (!Array.isArray(node?.children)) continue;
    // The document's own children first: a fallback added below is not among them.
    for (const child of node.children) pending.push(child);
    if (node.name === 'mc:AlternateContent' && !node.children.some((child) => child.name === 'mc:Fallback')) {
      const boxes = [];
      for (const choice of node.children) if (choice.name === 'mc:Choice') walked += textBoxesIn(choice, boxes);
      if (boxes.length > 0) node.children.push(element('mc:Fallback', {}, [element('w:pict', {}, [element('v:textbox', {}, boxes.slice(0, MAX_BOXES))])]));
    }
  }
  return walked;
}

/**
 * Adds to `found`, in document order, the outermost w:txbxContent elements under `choice` (a text box inside a text box
 * is read with its outer one) and the mc:AlternateContent elements met on the way (each read through its own fallback).
 * Returns the number of nodes visited.
 */
function textBoxesIn(choice, found) {
  let visited = 0;
  const pending = [...choice.children ?? []].reverse();
  while (pending.length > 0) {
    const next = pending.pop();
    visited++;
    if (next.name === 'w:txbxContent' || next.name === 'mc:AlternateContent') found.push(next);
    else if (Array.isArray(next.children)) for (let i = next.children.length - 1; i >= 0; i--) pending.push(next.children[i]);
  }
  return visited;
}

module.exports = { addTextBoxFallbacks };
