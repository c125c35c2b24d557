// What an upload's unfinished-upload marker costs (96387b4): FilesService.upload of energy.docx (inspection, bytes,
// record and event) on the embedded stores (SQLite + the object directory, fsynced writes), median milliseconds over the
// rounds, beside the marker's own two writes alone (an empty object stored, then removed) on the same object store.
// Usage: pnpm exec tsx bench/upload-marker-bench.ts [rounds=200]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, newId } from '@cards/platform';
import { DiskObjectStore } from '../services/files/src/adapters/disk/disk-object-store';
import { LibraryDocumentReader } from '../services/files/src/adapters/documents/library-document-reader';
import { SqliteFileRepository } from '../services/files/src/adapters/sqlite/sqlite-file-repository';
import { FilesService } from '../services/files/src/application/files-service';

const rounds = Number(process.argv[2] ?? 200);
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'upload-marker-bench-'));
  const repository = new SqliteFileRepository(join(dir, 'files.db'));
  const objects = new DiskObjectStore(join(dir, 'objects'));
  const service = new FilesService({ repository, objects, reader: new LibraryDocumentReader(), maxFileBytes: 20 * 1024 * 1024, logger: createLogger('bench', 'silent'), onEventsWritten: () => undefined });
  const bytes = readFileSync(join(__dirname, '../test/fixtures/documents/energy.docx'));
  const uploads: number[] = [];
  const markers: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      let started = nowMs();
      await service.upload({ callerId: newId(), fileName: 'energy.docx', mimeType: DOCX, private: false, tags: [], bytes });
      uploads.push(nowMs() - started);
      started = nowMs();
      const key = `unfinished-upload-${newId()}`;
      await objects.put(key, Buffer.alloc(0));
      await objects.remove(key);
      markers.push(nowMs() - started);
    }
  } finally {
    await objects.close();
    await repository.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const up = median(uploads);
  const mark = median(markers);
  process.stdout.write(`rounds ${rounds}, ${bytes.length}-byte .docx\nupload (marker included): median ${up.toFixed(2)} ms\nthe marker's two writes alone: median ${mark.toFixed(2)} ms (${((mark / up) * 100).toFixed(1)} % of an upload)\n`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
