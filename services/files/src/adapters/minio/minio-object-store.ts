import { Readable } from 'node:stream';
import { Client } from 'minio';
import { NotFoundError, redactUrl } from '@cards/platform';
import type { ObjectStore, StoredObject } from '../../domain/ports';

export interface MinioObjectStoreOptions {
  /** e.g. http://minio:9000 */
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region?: string;
}

const MISSING = new Set(['NoSuchKey', 'NotFound', 'NoSuchObject']);

function isMissing(err: unknown): boolean {
  return MISSING.has((err as { code?: string })?.code ?? '');
}

/**
 * The first `length` bytes of a ranged GET's body: a server that answers more than the range asked (s3rver answers
 * `bytes=0-0` with the whole object) sends no byte beyond it; the rest is not read.
 */
function atMost(stream: Readable, length: number): Readable {
  async function* first(): AsyncGenerator<Buffer> {
    let left = length;
    try {
      for await (const chunk of stream) {
        const bytes = chunk as Buffer;
        if (bytes.length >= left) {
          yield bytes.subarray(0, left);
          return;
        }
        left -= bytes.length;
        yield bytes;
      }
    } finally {
      stream.destroy();
    }
  }
  return Readable.from(first(), { objectMode: false });
}

/**
 * Objects in an S3 bucket through the `minio` client (MinIO, AWS S3, any S3-compatible server).
 * Objects are written with their size in one PUT (S3 makes it visible only when complete), which
 * also keeps servers without multipart listing (s3rver) working for files up to the part size.
 */
export class MinioObjectStore implements ObjectStore {
  private readonly client: Client;
  private bucketReady: Promise<void> | undefined;

  constructor(private readonly options: MinioObjectStoreOptions) {
    const url = new URL(options.endpoint);
    this.client = new Client({
      endPoint: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      useSSL: url.protocol === 'https:',
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      region: options.region,
      pathStyle: true,
      partSize: 64 * 1024 * 1024,
    });
  }

  /**
   * Asks the server whether the bucket exists (it is created on first use), failing within timeoutMs with a
   * message naming S3_ENDPOINT: at start-up and for the readiness monitor.
   */
  async ready(timeoutMs = 10_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.client.bucketExists(this.options.bucket),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (err) {
      throw new Error(`S3 at ${redactUrl(this.options.endpoint)} is unreachable (S3_ENDPOINT): ${(err as Error).message || (err as { code?: string }).code || String(err)}`);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** Creates the bucket once if it does not exist. */
  private ensureBucket(): Promise<void> {
    this.bucketReady ??= (async () => {
      if (!(await this.client.bucketExists(this.options.bucket))) {
        await this.client.makeBucket(this.options.bucket, this.options.region ?? 'us-east-1').catch(async (err: unknown) => {
          if (!(await this.client.bucketExists(this.options.bucket))) throw err;
        });
      }
    })().catch((err: unknown) => {
      this.bucketReady = undefined;
      throw err;
    });
    return this.bucketReady;
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    await this.ensureBucket();
    await this.client.putObject(this.options.bucket, key, bytes, bytes.length);
  }

  async open(key: string, offset = 0, length?: number): Promise<Readable> {
    await this.ensureBucket();
    try {
      // The client reads a length of 0 as "to the end": none asked for is none read, once the object is known to exist.
      if (length === 0) {
        await this.client.statObject(this.options.bucket, key);
        return Readable.from([]);
      }
      // A Range request from the offset (none at 0 without a length); the length left out reads to the end.
      const stream = await this.client.getPartialObject(this.options.bucket, key, offset, length);
      return length === undefined ? stream : atMost(stream, length);
    } catch (err) {
      if (isMissing(err)) throw new NotFoundError(`object ${key} not found`);
      // S3 answers 416 for a range starting at or past the end of an object that exists: nothing left to read.
      if ((err as { code?: string })?.code === 'InvalidRange') return Readable.from([]);
      throw err;
    }
  }

  async read(key: string): Promise<Buffer> {
    const stream = await this.open(key);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async stat(key: string): Promise<StoredObject | null> {
    await this.ensureBucket();
    try {
      const s = await this.client.statObject(this.options.bucket, key);
      return { size: s.size };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async remove(key: string): Promise<void> {
    await this.ensureBucket();
    await this.client.removeObject(this.options.bucket, key);
  }

  async *list(prefix: string): AsyncIterable<{ key: string; writtenAt: Date }> {
    await this.ensureBucket();
    for await (const item of this.client.listObjectsV2(this.options.bucket, prefix, true) as AsyncIterable<{ name?: string; lastModified?: Date }>) {
      if (item.name !== undefined && item.lastModified !== undefined) yield { key: item.name, writtenAt: item.lastModified };
    }
  }

  async close(): Promise<void> {}
}
