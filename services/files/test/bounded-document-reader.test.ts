import { Status } from 'nice-grpc';
import { ResourceExhaustedError, UnavailableError } from '@cards/platform';
import { BoundedDocumentReader, BUSY_MESSAGE, OWN_CHECKS_BUSY_MESSAGE } from '../src/adapters/documents/bounded-document-reader';
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
    const reader = new BoundedDocumentReader(inner, { workers: 2, maxQueued: 1, maxWaitMs: 60_000, perUser: 10 });
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
      const reader = new BoundedDocumentReader(inner, { workers: 1, maxQueued: 4, maxWaitMs: 4_000, perUser: 10 });
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
    const reader = new BoundedDocumentReader(inner, { workers: 1, maxQueued: 1, maxWaitMs: 60_000, perUser: 10 });
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

  it('gives each user a share of the checks: one beyond `perUser` running or waiting is refused RESOURCE_EXHAUSTED at once, others still get slots', async () => {
    const inner = new HeldReader();
    const reader = new BoundedDocumentReader(inner, { workers: 2, maxQueued: 2, maxWaitMs: 60_000, perUser: 2 });
    // B floods: one check running, one waiting behind A's.
    const outcome = (check: Promise<void>) => check.then(() => 'read', (err: Error) => err.message);
    const flood = [outcome(reader.inspect('pdf', doc('b1'), 'bob')), outcome(reader.inspect('pdf', doc('a1'), 'alice')), outcome(reader.inspect('pdf', doc('b2'), 'bob'))];
    await settle();
    expect(inner.started).toEqual(['inspect b1', 'inspect a1']);

    const refused = await reader.inspect('pdf', doc('b3'), 'bob').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ResourceExhaustedError);
    expect((refused as ResourceExhaustedError).status).toBe(Status.RESOURCE_EXHAUSTED);
    expect((refused as Error).message).toBe(OWN_CHECKS_BUSY_MESSAGE);
    // The line still has room for another user's upload.
    const alices = outcome(reader.inspect('pdf', doc('a2'), 'alice'));

    inner.end('inspect b1');
    await settle();
    expect(inner.started).toEqual(['inspect b1', 'inspect a1', 'inspect b2']);
    // Bob's finished check gave his share back.
    const bobAgain = outcome(reader.inspect('pdf', doc('b4'), 'bob'));
    inner.end('inspect a1');
    await settle();
    expect(inner.started).toEqual(['inspect b1', 'inspect a1', 'inspect b2', 'inspect a2']);
    inner.end('inspect b2');
    inner.end('inspect a2');
    await settle();
    inner.end('inspect b4');
    expect(await Promise.all([...flood, alices, bobAgain])).toEqual(['read', 'read', 'read', 'read', 'read']);
    expect(inner.started).not.toContain('inspect b3');
  });

  it('gives the share back when a check fails or is refused for overload', async () => {
    const failing: DocumentReader = {
      inspect: async () => {
        throw new Error('not a pdf');
      },
      parse: async () => ({ blocks: [] }),
    };
    const reader = new BoundedDocumentReader(failing, { workers: 1, maxQueued: 0, maxWaitMs: 1, perUser: 1 });
    await expect(reader.inspect('pdf', doc('x'), 'bob')).rejects.toThrow('not a pdf');
    await expect(reader.inspect('pdf', doc('y'), 'bob')).rejects.toThrow('not a pdf');

    const inner = new HeldReader();
    const busy = new BoundedDocumentReader(inner, { workers: 1, maxQueued: 0, maxWaitMs: 60_000, perUser: 1 });
    const alices = busy.inspect('pdf', doc('a'), 'alice');
    await expect(busy.inspect('pdf', doc('b1'), 'bob')).rejects.toThrow(BUSY_MESSAGE);
    // Still the service's overload (503), not Bob's share (429): his refused check holds nothing.
    await expect(busy.inspect('pdf', doc('b2'), 'bob')).rejects.toThrow(BUSY_MESSAGE);
    inner.end('inspect a');
    await alices;
  });

  it('passes the reader’s own refusal through', async () => {
    const failing: DocumentReader = {
      inspect: async () => {
        throw new Error('not a pdf');
      },
      parse: async () => ({ blocks: [] }),
    };
    const reader = new BoundedDocumentReader(failing, { workers: 1, maxQueued: 0, maxWaitMs: 1, perUser: 10 });
    await expect(reader.inspect('pdf', doc('x'))).rejects.toThrow('not a pdf');
    // The slot was given back: the next check runs.
    await expect(reader.inspect('pdf', doc('y'))).rejects.toThrow('not a pdf');
  });
});
