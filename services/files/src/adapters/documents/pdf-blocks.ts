import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { DocumentBlock } from '../../domain/model';
import { UnreadableDocumentError } from '../../domain/ports';

export interface PdfLimits {
  maxPages: number;
  timeoutMs: number;
  maxHeapMb: number;
}

export const DEFAULT_PDF_LIMITS: PdfLimits = { maxPages: 2000, timeoutMs: 120_000, maxHeapMb: 512 };

/**
 * Paragraphs of a PDF via unpdf (pdf.js), in a worker thread with a time and memory limit: text items
 * are joined into lines, and a vertical gap clearly larger than the usual line pitch starts a new
 * paragraph (PDFs carry no paragraph markup). Link annotations are attached to the line they sit on.
 * PDFs are treated as heading-less.
 */
export function blocksFromPdf(bytes: Buffer, limits: PdfLimits = DEFAULT_PDF_LIMITS): Promise<DocumentBlock[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(join(__dirname, 'pdf-worker.mjs'), {
      workerData: { bytes: new Uint8Array(bytes), maxPages: limits.maxPages },
      resourceLimits: { maxOldGenerationSizeMb: limits.maxHeapMb },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      fn();
    };
    const timer = setTimeout(() => finish(() => reject(new UnreadableDocumentError(`reading the PDF took longer than ${limits.timeoutMs} ms`))), limits.timeoutMs);
    worker.once('message', (message: { blocks?: DocumentBlock[]; error?: string }) => {
      if (message.blocks) finish(() => resolve(message.blocks!));
      else finish(() => reject(new UnreadableDocumentError(`the .pdf document could not be read: ${message.error ?? 'unknown error'}`)));
    });
    worker.once('error', (err) => finish(() => reject(new UnreadableDocumentError(`the .pdf document could not be read: ${err.message}`))));
    worker.once('exit', (code) => finish(() => reject(new UnreadableDocumentError(`the PDF reader stopped (exit code ${code})`))));
  });
}
