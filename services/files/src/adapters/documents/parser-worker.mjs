// Runs the document libraries in a worker thread (plain ESM so it needs no TypeScript loader): parsing
// is CPU-heavy and must not stall the service's event loop, and the thread's time and memory caps
// contain hostile documents.
// Input (workerData): { op: 'docx-html' | 'doc-text' | 'pdf-blocks' | 'pdf-has-text', bytes: Uint8Array, maxPages: number }.
// Output: { result } (HTML string, body text, paragraph blocks, or whether the PDF has text) or { error }.
// This file only dispatches: the readers are word-documents.mjs (.docx, .doc) and pdf-layout.mjs (PDF), beside it.
import { parentPort, workerData } from 'node:worker_threads';
import { pdfBlocks, pdfHasText } from './pdf-layout.mjs';
import { createRequire } from 'node:module';
import { docText, docxHtml } from './word-documents.mjs';

// The result is bounded by the document's size before it is sent back (output-bounds.cjs).
const { boundedOutput } = createRequire(import.meta.url)('./output-bounds.cjs');

async function run() {
  const bytes = Buffer.from(workerData.bytes.buffer, workerData.bytes.byteOffset, workerData.bytes.byteLength);
  switch (workerData.op) {
    case 'docx-html':
      return docxHtml(bytes);
    case 'doc-text':
      return docText(bytes);
    case 'pdf-blocks':
      return pdfBlocks(workerData.bytes, workerData.maxPages);
    case 'pdf-has-text':
      return pdfHasText(workerData.bytes, workerData.maxPages);
    default:
      throw new Error(`unknown operation ${workerData.op}`);
  }
}

run()
  .then((result) => boundedOutput(workerData.op, workerData.bytes, result))
  .then(
    (result) => parentPort.postMessage({ result }),
    (err) => parentPort.postMessage({ error: err instanceof Error ? err.message : String(err) }),
  );
