import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { DocumentBlock } from '../../domain/model';
import { UnreadableDocumentError } from '../../domain/ports';

export interface ParserLimits {
  /** PDF pages read at most. */
  maxPages: number;
  timeoutMs: number;
  maxHeapMb: number;
  /**
   * Time for the text check while an upload waits: well inside the gateway's call deadline (GRPC_DEADLINE_MS, 10 s by
   * default). A check that runs out accepts the document and leaves the verdict to the ingestion, which has timeoutMs.
   */
  uploadCheckMs: number;
}

export const DEFAULT_PARSER_LIMITS: ParserLimits = { maxPages: 2000, timeoutMs: 120_000, maxHeapMb: 512, uploadCheckMs: 5_000 };

/** The document library did not finish within the time limit (the document may still be fine). */
export class ReadingTimedOutError extends UnreadableDocumentError {
  constructor(readonly timeoutMs: number) {
    super(`reading the document took longer than ${timeoutMs} ms`);
    this.name = 'ReadingTimedOutError';
  }
}

/** The document library needed more heap than the worker's cap. */
export class ReadingOutOfMemoryError extends UnreadableDocumentError {
  constructor(readonly maxHeapMb: number, cause: Error) {
    super(`reading the document needed more than ${maxHeapMb} MB of memory`, { cause });
    this.name = 'ReadingOutOfMemoryError';
  }
}

interface Operations {
  /** mammoth's HTML rendering of a .docx. */
  'docx-html': string;
  /** word-extractor's text of a .doc, one paragraph per line: the body, then its text boxes, footnotes and endnotes. */
  'doc-text': string;
  /**
   * Paragraphs of a PDF via unpdf (pdf.js): text items are joined into lines, and a vertical gap
   * clearly larger than the usual line pitch starts a new paragraph (PDFs carry no paragraph markup).
   * Link annotations are attached to the line they sit on. Running heads and feet (short lines at a page's top or bottom
   * that recur at the same height on many pages, page numbers aside) are dropped, and a paragraph that runs on over a
   * page break (no sentence end before it, lower case after it) is one.
   */
  'pdf-blocks': DocumentBlock[];
  /** Whether any page up to the page limit has a text item that is not whitespace (a scan without OCR has none). */
  'pdf-has-text': boolean;
}

/**
 * Runs one document library call in a worker thread (parser-worker.mjs) with a time and heap limit, so
 * a slow or hostile document neither blocks the service's event loop nor exhausts its memory.
 */
export function parseInWorker<K extends keyof Operations>(op: K, bytes: Buffer, limits: ParserLimits = DEFAULT_PARSER_LIMITS): Promise<Operations[K]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(join(__dirname, 'parser-worker.mjs'), {
      workerData: { op, bytes: new Uint8Array(bytes), maxPages: limits.maxPages },
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
    const fail = (reason: string) => finish(() => reject(new UnreadableDocumentError(reason)));
    const timer = setTimeout(() => finish(() => reject(new ReadingTimedOutError(limits.timeoutMs))), limits.timeoutMs);
    worker.once('message', (message: { result?: Operations[K]; error?: string }) => {
      if (message.error === undefined && message.result !== undefined) finish(() => resolve(message.result!));
      else fail(message.error ?? 'unknown error');
    });
    worker.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') finish(() => reject(new ReadingOutOfMemoryError(limits.maxHeapMb, err)));
      else fail(err.message);
    });
    worker.once('exit', (code) => fail(`the document reader stopped (exit code ${code})`));
  });
}
