import { existsSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import S3rver from 's3rver';
import { DiskObjectStore } from '../src/adapters/disk/disk-object-store';
import { MinioObjectStore } from '../src/adapters/minio/minio-object-store';
import { describeObjectStoreContract } from './object-store.contract';
import { testTempDir } from '../../../test/support/cleanup';

const dirs: string[] = [];
const temp = () => {
  const d = testTempDir('files-objects-');
  dirs.push(d);
  return d;
};
let s3: S3rver | undefined;

afterAll(async () => {
  await s3?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describeObjectStoreContract('DiskObjectStore', async () => new DiskObjectStore(temp()));

// A real S3 protocol server in-process: the MinIO adapter talks HTTP + SigV4 to it. Against a real
// MinIO/S3 when S3_ENDPOINT is set.
describeObjectStoreContract('MinioObjectStore', async () => {
  if (process.env.S3_ENDPOINT) {
    return new MinioObjectStore({ endpoint: process.env.S3_ENDPOINT, accessKey: process.env.S3_ACCESS_KEY ?? '', secretKey: process.env.S3_SECRET_KEY ?? '', bucket: `contract-${Date.now()}` });
  }
  s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: temp() });
  const { port } = (await s3.run()) as { port: number };
  return new MinioObjectStore({ endpoint: `http://127.0.0.1:${port}`, accessKey: 'S3RVER', secretKey: 'S3RVER', bucket: 'card-files' });
});

describe('DiskObjectStore atomic writes', () => {
  it('leaves no temporary files behind and refuses keys that could escape the directory', async () => {
    const dir = temp();
    const store = new DiskObjectStore(dir);
    await store.put('abc', Buffer.from('x'));
    expect(readdirSync(join(dir, '.tmp'))).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual(['.tmp', 'abc']);
    await expect(store.put('../evil', Buffer.from('x'))).rejects.toThrow(/invalid object key/);
  });

  it('deletes the temporary file when the write or the fsync fails (a full disk), not only when the rename does', async () => {
    const dir = temp();
    const store = new DiskObjectStore(dir);
    const probe = await open(join(dir, 'probe'), 'w');
    const FileHandle = Object.getPrototypeOf(probe) as { writeFile: () => Promise<void>; sync: () => Promise<void> };
    await probe.close();
    const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const write = jest.spyOn(FileHandle, 'writeFile').mockRejectedValueOnce(enospc());
    await expect(store.put('abc', Buffer.from('x'))).rejects.toMatchObject({ code: 'ENOSPC' });
    write.mockRestore();
    const sync = jest.spyOn(FileHandle, 'sync').mockRejectedValueOnce(enospc());
    await expect(store.put('abc', Buffer.from('x'))).rejects.toMatchObject({ code: 'ENOSPC' });
    sync.mockRestore();
    expect(readdirSync(join(dir, '.tmp'))).toEqual([]);
    expect(await store.stat('abc')).toBeNull();
  });

  it('sweeps temporary files a crash left (older than an hour) at start, never a recent one (a write under way)', async () => {
    const dir = temp();
    await new DiskObjectStore(dir).put('warm-up', Buffer.from('x'));
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000);
    for (const [name, age] of [['left-by-a-crash', 2], ['being-written', 0]] as const) {
      writeFileSync(join(dir, '.tmp', name), 'partial');
      utimesSync(join(dir, '.tmp', name), hoursAgo(age), hoursAgo(age));
    }
    const store = new DiskObjectStore(dir);
    await store.put('abc', Buffer.from('x'));
    expect(readdirSync(join(dir, '.tmp'))).toEqual(['being-written']);
  });

  it('close waits for what the start writes (objects/.tmp, the sweep): a directory removed after it stays removed', async () => {
    const dir = join(temp(), 'objects');
    const store = new DiskObjectStore(dir);
    await store.close();
    expect(readdirSync(dir)).toEqual(['.tmp']);
    rmSync(dir, { recursive: true, force: true });
    await store.close();
    expect(existsSync(dir)).toBe(false);
  });
});
