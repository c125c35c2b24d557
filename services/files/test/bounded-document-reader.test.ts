import { Status } from 'nice-grpc';
import { UnavailableError } from '@cards/platform';
import { BoundedDocumentReader, BUSY_MESSAGE } from '../src/adapters/documents/bounded-document-reader';
import type { DocumentFormat, ParsedDocument } from '../src/domain/model';
import type { DocumentReader } from '../src/domain/ports';

/** A reader whose every reading runs until the test ends it; records which readings have started. */
class HeldReader implements DocumentReader {
  readonly started: string[] = [];
  private readonly endings = new Map<string, () => void>();

  inspect(_format: DocumentFormat, bytes: Buffer): Promise<void> {
    return this.hold(`inspect ${bytes.toString()}`);
  }

  async parse(_format: DocumentFormat, bytes: Buffer): Promise<ParsedDocument> {
    await this.hold(`parse ${bytes.toString()}`);
    return { blocks: [{ kind: 'paragraph', text: bytes.toString(), links: [] }] };
  }

  end(reading: string): void {
    this.endings.get(reading)!();
  }

  private hold(reading: string): Promise<void> {
    this.started.push(reading);
    return new Promise((resolve) => this.endings.set(reading, resolve));
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const doc = (name: string) => Buffer.from(name);

describe('BoundedDocumentReader', () => {
  it('reads at most `workers` documents at once: the next upload check waits, one beyond the queue is refused UNAVAILABLE', async () => {
    const inner = new HeldReader();
    const reader = new BoundedDocumentReader(inner, { workers: 2, maxQueued: 1, maxWaitMs: 60_000 });
    const checks = [reader.inspect('pdf', doc('a')), reader.inspect('pdf', doc('b')), reader.inspect('pdf', doc('c'))];
    await settle();
    expect(inner.started).toEqual(['inspect a', 'inspect b']);

    const refused = await reader.inspect('pdf', doc('d')).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(UnavailableError);
    expect((refused as UnavailableError).status).toBe(Status.UNAVAILABLE);
    expect((refused as Error).message).toBe(BUSY_MESSAGE);
    expect(inner.started).not.toContain('inspect d');

    inner.end('inspect a');
    await settle();
    expect(inner.started).toEqual(['inspect a', 'inspect b', 'inspect c']);
    inner.end('inspect b');
    inner.end('inspect c');
    await Promise.all(checks);
  });

  it('refuses an upload check whose wait runs past the deadline', async () => {
    jest.useFakeTimers();
    try {
      const inner = new HeldReader();
      const reader = new BoundedDocumentReader(inner, { workers: 1, maxQueued: 4, maxWaitMs: 4_000 });
      const first = reader.inspect('doc', doc('a'));
      const late = reader.inspect('doc', doc('b'));
      jest.advanceTimersByTime(4_000);
      await expect(late).rejects.toThrow(BUSY_MESSAGE);
      inner.end('inspect a');
      await first;
      expect(inner.started).toEqual(['inspect a']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('never refuses an ingestion: it waits while the workers are busy and the queue is full, then reads', async () => {
    const inner = new HeldReader();
    const reader = new BoundedDocumentReader(inner, { workers: 1, maxQueued: 1, maxWaitMs: 60_000 });
    const upload = reader.inspect('pdf', doc('upload'));
    const queuedUpload = reader.inspect('pdf', doc('queued'));
    const ingestion = reader.parse('pdf', doc('ingested'));
    await settle();
    await expect(reader.inspect('pdf', doc('refused'))).rejects.toThrow(BUSY_MESSAGE);
    expect(inner.started).toEqual(['inspect upload']);

    inner.end('inspect upload');
    await settle();
    // Waiting uploads go first: they have a deadline, the ingestion has none.
    expect(inner.started).toEqual(['inspect upload', 'inspect queued']);
    inner.end('inspect queued');
    await settle();
    expect(inner.started).toEqual(['inspect upload', 'inspect queued', 'parse ingested']);
    inner.end('parse ingested');
    await expect(ingestion).resolves.toEqual({ blocks: [{ kind: 'paragraph', text: 'ingested', links: [] }] });
    await Promise.all([upload, queuedUpload]);
  });

  it('passes the reader’s own refusal through', async () => {
    const failing: DocumentReader = {
      inspect: async () => {
        throw new Error('not a pdf');
      },
      parse: async () => ({ blocks: [] }),
    };
    const reader = new BoundedDocumentReader(failing, { workers: 1, maxQueued: 0, maxWaitMs: 1 });
    await expect(reader.inspect('pdf', doc('x'))).rejects.toThrow('not a pdf');
    // The slot was given back: the next check runs.
    await expect(reader.inspect('pdf', doc('y'))).rejects.toThrow('not a pdf');
  });
});
