// Raw downloads with and without a byte range: a ~19 MiB .docx (the 100-page book plus a stored part of random
// bytes, so it stays below MAX_FILE_BYTES and passes the upload checks) downloaded whole through the gateway, then
// resumed from its middle (Range: bytes=<half>- with If-Range), its last MiB and its first 100 bytes: bytes received
// and milliseconds (median of the rounds), on an all-in-one on the embedded default.
// Usage: pnpm exec tsx bench/file-download-range-bench.ts [rounds=5] [filler MiB=18]
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Mailbox } from '../test/support/mailbox';
import { startSystem } from '../test/support/service';
import { signUp } from '../test/support/accounts';

const ROOT = join(__dirname, '..');
const rounds = Number(process.argv[2] ?? 5);
const fillerMiB = Number(process.argv[3] ?? 18);
// jszip comes with mammoth, a dependency of the files service (bench/ does not depend on it).
const JSZip = createRequire(createRequire(join(ROOT, 'services/files/package.json')).resolve('mammoth'))('jszip') as {
  loadAsync(data: Buffer): Promise<{ file(name: string, data: Buffer, options: { compression: 'STORE' }): void; generateAsync(options: { type: 'nodebuffer' }): Promise<Buffer> }>;
};

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  const zip = await JSZip.loadAsync(readFileSync(join(ROOT, 'test/fixtures/documents/bench/book-100-pages.docx')));
  zip.file('word/media/filler.bin', randomBytes(fillerMiB * 1024 * 1024), { compression: 'STORE' });
  const bytes = await zip.generateAsync({ type: 'nodebuffer' });
  const mailbox = new Mailbox();
  await mailbox.start();
  const system = await startSystem({ env: { SMTP_URL: mailbox.url, LOG_LEVEL: 'warn' } });
  try {
    const user = await signUp(system.baseUrl, mailbox, 'bench-range');
    const res = await user.client.post('/api/file', {
      base64_docx_file: bytes.toString('base64url'),
      file_name: 'book-with-filler.docx',
      file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      private: false,
    });
    if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${res.text}`);
    const url = `${system.baseUrl}/api/file/${res.json.id}/download`;
    const first = await fetch(url);
    const etag = first.headers.get('etag') ?? '';
    if (!Buffer.from(await first.arrayBuffer()).equals(bytes)) throw new Error('the whole download differs from the upload');
    const half = Math.floor(bytes.length / 2);
    const cases: Array<[string, Record<string, string>, Buffer]> = [
      ['whole (no Range)', {}, bytes],
      [`resumed from the middle (bytes=${half}-, If-Range)`, { range: `bytes=${half}-`, 'if-range': etag }, bytes.subarray(half)],
      ['last MiB (bytes=-1048576)', { range: 'bytes=-1048576' }, bytes.subarray(bytes.length - 1048576)],
      ['first 100 bytes (bytes=0-99)', { range: 'bytes=0-99' }, bytes.subarray(0, 100)],
    ];
    console.log(`file: ${bytes.length} bytes; ${rounds} rounds each, median ms`);
    console.log('| request | status | bytes received | ms (median) | min-max ms |');
    console.log('|---|---|---|---|---|');
    for (const [name, headers, expected] of cases) {
      const times: number[] = [];
      let status = 0;
      let received = 0;
      for (let i = 0; i < rounds; i++) {
        const started = nowMs();
        const answer = await fetch(url, { headers });
        const body = Buffer.from(await answer.arrayBuffer());
        times.push(nowMs() - started);
        if (!body.equals(expected)) throw new Error(`${name}: the bytes differ from the file's`);
        [status, received] = [answer.status, body.length];
      }
      console.log(`| ${name} | ${status} | ${received} | ${median(times).toFixed(1)} | ${Math.min(...times).toFixed(1)}-${Math.max(...times).toFixed(1)} |`);
    }
  } finally {
    await system.stop();
    await mailbox.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
