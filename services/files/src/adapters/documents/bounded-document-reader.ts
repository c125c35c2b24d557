import { AdmissionRefusedError, BoundedAdmission, ClientShares, ResourceExhaustedError, UnavailableError } from '@cards/platform';
import type { DocumentFormat, ParsedDocument } from '../../domain/model';
import type { DocumentReader } from '../../domain/ports';

export interface DocumentReadingLimits {
  /** Documents read at once at most (each may run a parser worker with its heap cap). */
  workers: number;
  /** Upload checks waiting for a worker at most; one more is refused at once. */
  maxQueued: number;
  /** How long an upload check waits for a worker at most. */
  maxWaitMs: number;
  /** Upload checks one user has running or waiting at once at most; one more is refused RESOURCE_EXHAUSTED at once. */
  perUser: number;
}

export const BUSY_MESSAGE = 'The service is busy reading other documents; upload the file again in a few seconds';
export const OWN_CHECKS_BUSY_MESSAGE = 'You have too many uploads being checked at once; upload the file again when one of them has finished';

/**
 * Bounds how many documents are read at once, since each reading may hold a parser worker of up to its heap cap, and
 * the process would otherwise be killed for its memory under a few heavy uploads at once. An upload check beyond the
 * bound waits in a bounded line for a bounded time, then is refused UNAVAILABLE (nothing is stored, the uploader tries
 * again); an ingestion waits as long as it takes, after the waiting uploads, and is never refused (nor starved: see
 * BoundedAdmission).
 *
 * One user has at most `perUser` checks running or waiting at once: one more is refused RESOURCE_EXHAUSTED (HTTP 429,
 * the user's own quota, like the gateway's share of the upload bound) at once, before it takes a slot, so one user's
 * flood of uploads cannot take every worker and the whole line from the others.
 */
export class BoundedDocumentReader implements DocumentReader {
  private readonly admission: BoundedAdmission;
  /** Upload checks running or waiting, by user. */
  private readonly checksOf = new ClientShares();

  constructor(
    private readonly inner: DocumentReader,
    private readonly limits: DocumentReadingLimits,
  ) {
    this.admission = new BoundedAdmission({ capacity: limits.workers, maxWaiting: limits.maxQueued, maxWaitMs: limits.maxWaitMs });
  }

  async inspect(format: DocumentFormat, bytes: Buffer, uploader?: string): Promise<void> {
    const releaseShare = uploader === undefined ? () => undefined : this.checksOf.take(uploader, 1, this.limits.perUser);
    if (!releaseShare) throw new ResourceExhaustedError(OWN_CHECKS_BUSY_MESSAGE);
    try {
      await this.admission.run(() => this.inner.inspect(format, bytes, uploader));
    } catch (err) {
      if (err instanceof AdmissionRefusedError) throw new UnavailableError(BUSY_MESSAGE);
      throw err;
    } finally {
      releaseShare();
    }
  }

  parse(format: DocumentFormat, bytes: Buffer): Promise<ParsedDocument> {
    return this.admission.runPatiently(() => this.inner.parse(format, bytes));
  }
}
