// Document ingestion: a 100-page .docx and a 100-page PDF uploaded through the gateway and turned into
// cards (parse + split + CreateCard per card + the file collection), next to the raw parse time of the
// library alone (mammoth / unpdf) and of the files service's reader + splitter, all in one run.
// Usage: pnpm exec tsx bench/files-ingest-bench.ts [repeats=3]
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { LibraryDocumentReader } from '../services/files/src/adapters/documents/library-document-reader';
import { splitIntoCards } from '../services/files/src/domain/card-splitter';
import type { DocumentFormat } from '../services/files/src/domain/model';
import { Mailbox } from '../test/support/mailbox';
import { startSystem } from '../test/support/service';
import { signUp } from '../test/support/accounts';

const ROOT = join(__dirname, '..');
const repeats = Number(process.argv[2] ?? 3);
const filesRequire = createRequire(join(ROOT, 'services/files/package.json'));
// The libraries are dependencies of the files service, loaded from there (bench/ does not depend on them).
const mammoth = filesRequire('mammoth') as { convertToHtml(input: { buffer: Buffer }): Promise<{ value: string }> };
interface PdfProxy {
  destroy(): Promise<void>;
}
const unpdf = filesRequire('unpdf') as {
  getDocumentProxy(data: Uint8Array): Promise<PdfProxy>;
  extractText(pdf: PdfProxy, options: { mergePages: false }): Promise<unknown>;
};

const DOCS: { name: string; format: DocumentFormat; mime: string }[] = [
  { name: 'book-100-pages.docx', format: 'docx', mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' },
  { name: 'book-100-pages.pdf', format: 'pdf', mime: 'application/pdf' },
];

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function timedMedian(fn: () => Promise<unknown>): Promise<number> {
  const runs: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = nowMs();
    await fn();
    runs.push(nowMs() - t);
  }
  return median(runs);
}

async function rawParse(format: DocumentFormat, bytes: Buffer): Promise<void> {
  if (format === 'docx') await mammoth.convertToHtml({ buffer: bytes });
  else {
    const pdf = await unpdf.getDocumentProxy(new Uint8Array(bytes));
    await unpdf.extractText(pdf, { mergePages: false });
    await pdf.destroy();
  }
}

async function main() {
  const reader = new LibraryDocumentReader();
  const rows: string[] = [];
  const mailbox = new Mailbox();
  await mailbox.start();
  const system = await startSystem({ env: { SMTP_URL: mailbox.url, LOG_LEVEL: 'warn' } });
  try {
    for (const doc of DOCS) {
      const bytes = readFileSync(join(ROOT, 'test/fixtures/documents/bench', doc.name));
      // One untimed warm-up of each path, so neither pays for the other's JIT and module loading.
      await rawParse(doc.format, bytes);
      await reader.parse(doc.format, bytes);
      const rawMs = await timedMedian(() => rawParse(doc.format, bytes));
      let drafts = 0;
      const readerMs = await timedMedian(async () => {
        drafts = splitIntoCards(await reader.parse(doc.format, bytes)).length;
      });

      // Through the system: one fresh user per document, so the user's card count is the document's.
      const user = await signUp(system.baseUrl, mailbox, `bench-${doc.format}`);
      const started = nowMs();
      const res = await user.client.post('/api/file', { base64_docx_file: bytes.toString('base64url'), file_name: doc.name, file_mime_type: doc.mime, private: false, tag_set: ['bench'] });
      if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${res.text}`);
      const uploadMs = nowMs() - started;
      let status = 'pending';
      while (status === 'pending') {
        await new Promise((r) => setTimeout(r, 100));
        const file = await user.client.get(`/api/file/${res.json.id}`);
        status = file.json.ingestion_status;
        if (status === 'failed') throw new Error(`ingestion failed: ${file.json.ingestion_error}`);
      }
      const totalS = (nowMs() - started) / 1000;
      const cards = (await user.client.get(`/api/user/${user.id}/1`)).json.total_cards_created as number;
      rows.push(
        `| ${doc.name} | ${(bytes.length / 1024).toFixed(0)} KiB | ${rawMs.toFixed(0)} | ${readerMs.toFixed(0)} | ${drafts} | ${(uploadMs / 1000).toFixed(2)} | ${totalS.toFixed(2)} | ${cards} | ${(cards / totalS).toFixed(1)} |`,
      );
      console.log(rows[rows.length - 1]);
    }
  } finally {
    await system.stop();
    await mailbox.stop();
  }
  console.log('\n| document | size | raw library parse ms (median) | files reader + splitter ms (median) | cards planned | upload s | seconds per document (upload -> ingestion done) | cards created | cards/s |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
