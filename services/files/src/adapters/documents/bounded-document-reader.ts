import { AdmissionRefusedError, BoundedAdmission, UnavailableError } from '@cards/platform';
import type { DocumentFormat, ParsedDocument } from '../../domain/model';
import type { DocumentReader } from '../../domain/ports';

export interface DocumentReadingLimits {
  /** Documents read at once at most (each may run a parser worker with its heap cap). */
  workers: number;
  /** Upload checks waiting for a worker at most; one more is refused at once. */
  maxQueued: number;
  /** How long an upload check waits for a worker at most. */
  maxWaitMs: number;
}

export const BUSY_MESSAGE = 'The service is busy reading other documents; upload the file again in a few seconds';

/**
 * Bounds how many documents are read at once, since each reading may hold a parser worker of up to its heap cap, and
 * the process would otherwise be killed for its memory under a few heavy uploads at once. An upload check beyond the
 * bound waits in a bounded line for a bounded time, then is refused UNAVAILABLE (nothing is stored, the uploader tries
 * again); an ingestion waits as long as it takes, after the waiting uploads, and is never refused.
 */
export class BoundedDocumentReader implements DocumentReader {
  private readonly admission: BoundedAdmission;

  constructor(
    private readonly inner: DocumentReader,
    limits: DocumentReadingLimits,
  ) {
    this.admission = new BoundedAdmission({ capacity: limits.workers, maxWaiting: limits.maxQueued, maxWaitMs: limits.maxWaitMs });
  }

  async inspect(format: DocumentFormat, bytes: Buffer): Promise<void> {
    try {
      await this.admission.run(() => this.inner.inspect(format, bytes));
    } catch (err) {
      if (err instanceof AdmissionRefusedError) throw new UnavailableError(BUSY_MESSAGE);
      throw err;
    }
  }

  parse(format: DocumentFormat, bytes: Buffer): Promise<ParsedDocument> {
    return this.admission.runPatiently(() => this.inner.parse(format, bytes));
  }
}
