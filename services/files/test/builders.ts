import { newId } from '@cards/platform';
import type { FileRecord } from '../src/domain/model';

/** Test data builder: aFile().ownedBy(id).private().build(). */
export function aFile(overrides: Partial<FileRecord> = {}) {
  let record: FileRecord = {
    id: newId(),
    userId: newId(),
    fileName: 'notes.docx',
    mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    format: 'docx',
    private: false,
    size: 1234,
    tags: ['a', 'b'],
    ocFilePath: null,
    ingestionStatus: 'pending',
    ingestionError: null,
    cardCount: 0,
    collectionId: null,
    idempotencyKey: null,
    requestFingerprint: null,
    createdAt: new Date('2026-01-01T10:00:00.123Z'),
    updatedAt: new Date('2026-01-01T10:00:00.123Z'),
    ...overrides,
  };
  const builder = {
    ownedBy(userId: string) {
      record = { ...record, userId };
      return builder;
    },
    private() {
      record = { ...record, private: true };
      return builder;
    },
    withIdempotencyKey(key: string, requestFingerprint: string | null = null) {
      record = { ...record, idempotencyKey: key, requestFingerprint };
      return builder;
    },
    createdAt(date: Date) {
      record = { ...record, createdAt: date, updatedAt: date };
      return builder;
    },
    build(): FileRecord {
      return { ...record, tags: [...record.tags] };
    },
  };
  return builder;
}
