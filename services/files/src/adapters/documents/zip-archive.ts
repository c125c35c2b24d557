import * as yauzl from 'yauzl';
import { InvalidArgumentError } from '@cards/platform';

/** Limits that keep a small upload from expanding into gigabytes (zip bombs). */
export interface ZipLimits {
  maxEntries: number;
  /** Sum of all entries' uncompressed sizes. */
  maxTotalUncompressed: number;
  /** Uncompressed/compressed ratio above which a large entry is refused. */
  maxRatio: number;
}

export const DEFAULT_ZIP_LIMITS: ZipLimits = { maxEntries: 5_000, maxTotalUncompressed: 200 * 1024 * 1024, maxRatio: 200 };

/** Entries below this size may compress as well as they like (an XML of spaces is legitimately tiny). */
const RATIO_EXEMPT_BYTES = 1024 * 1024;

export interface ZipContents {
  names: Set<string>;
  /** The small text parts asked for, decoded as UTF-8. */
  parts: Map<string, string>;
}

/**
 * Walks a zip held in memory without trusting its headers: declared sizes are checked against the
 * limits first, then every entry is inflated through yauzl, which fails when an entry expands past
 * its declared size; inflated bytes are counted and discarded. The wanted parts are returned as text.
 */
export async function readZip(bytes: Buffer, wanted: readonly string[], limits: ZipLimits = DEFAULT_ZIP_LIMITS): Promise<ZipContents> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true, validateEntrySizes: true, strictFileNames: false, decodeStrings: true });
  } catch (err) {
    throw new InvalidArgumentError(`base64_docx_file: the zip container is corrupt or truncated (${(err as Error).message})`);
  }
  if (zip.entryCount > limits.maxEntries) {
    zip.close();
    throw new InvalidArgumentError(`base64_docx_file: the document has too many parts (${zip.entryCount} > ${limits.maxEntries})`);
  }
  const names = new Set<string>();
  const parts = new Map<string, string>();
  let declaredTotal = 0;
  let inflatedTotal = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        void (async () => {
          names.add(entry.fileName);
          if (entry.fileName.endsWith('/')) return;
          declaredTotal += entry.uncompressedSize;
          if (declaredTotal > limits.maxTotalUncompressed) throw bomb(`it expands to more than ${limits.maxTotalUncompressed} bytes`);
          if (entry.uncompressedSize > RATIO_EXEMPT_BYTES && entry.uncompressedSize > limits.maxRatio * Math.max(1, entry.compressedSize)) {
            throw bomb(`part ${entry.fileName} has a compression ratio above ${limits.maxRatio}`);
          }
          const keep = wanted.includes(entry.fileName);
          const chunks: Buffer[] = [];
          const stream = await zip.openReadStreamPromise(entry);
          for await (const chunk of stream) {
            inflatedTotal += (chunk as Buffer).length;
            if (inflatedTotal > limits.maxTotalUncompressed) {
              stream.destroy();
              throw bomb(`it expands to more than ${limits.maxTotalUncompressed} bytes`);
            }
            if (keep) chunks.push(chunk as Buffer);
          }
          if (keep) parts.set(entry.fileName, Buffer.concat(chunks).toString('utf8'));
        })().then(
          () => zip.readEntry(),
          (err: unknown) => reject(err),
        );
      });
      zip.readEntry();
    });
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw err;
    throw new InvalidArgumentError(`base64_docx_file: the zip container is corrupt (${(err as Error).message})`);
  } finally {
    zip.close();
  }
  return { names, parts };
}

function bomb(reason: string): InvalidArgumentError {
  return new InvalidArgumentError(`base64_docx_file: refused a decompression bomb: ${reason}`);
}
