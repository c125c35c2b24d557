import { randomBytes, randomUUID } from 'node:crypto';
import { NotFoundError } from '@cards/platform';
import type { ObjectStore } from '../src/domain/ports';

async function drain(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The ObjectStore port's contract; every adapter runs it. factory() gives a store to use for the whole suite. */
export function describeObjectStoreContract(name: string, factory: () => Promise<ObjectStore>): void {
  describe(`ObjectStore contract: ${name}`, () => {
    let store: ObjectStore;

    beforeAll(async () => {
      store = await factory();
    });
    afterAll(async () => {
      await store?.close();
    });

    const run = (title: string, body: (s: ObjectStore) => Promise<void>) => it(title, () => body(store));

    run('put then read and open return the same bytes, stat the size', async (s) => {
      const key = randomUUID();
      const bytes = randomBytes(300_000);
      await s.put(key, bytes);
      expect((await s.read(key)).equals(bytes)).toBe(true);
      expect((await drain(await s.open(key))).equals(bytes)).toBe(true);
      expect(await s.stat(key)).toEqual({ size: bytes.length });
    });

    run('open from an offset streams the bytes from there to the end; at or past the end, none', async (s) => {
      const key = randomUUID();
      const bytes = randomBytes(300_001);
      await s.put(key, bytes);
      for (const offset of [0, 1, 65_536, 150_000, 300_000]) {
        expect({ offset, same: (await drain(await s.open(key, offset))).equals(bytes.subarray(offset)) }).toEqual({ offset, same: true });
      }
      for (const offset of [300_001, 400_000]) expect({ offset, length: (await drain(await s.open(key, offset))).length }).toEqual({ offset, length: 0 });
      await expect(s.open(randomUUID(), 10)).rejects.toBeInstanceOf(NotFoundError);
    });

    run('open with a length streams at most that many bytes from the offset (a byte range), none for 0', async (s) => {
      const key = randomUUID();
      const bytes = randomBytes(300_001);
      await s.put(key, bytes);
      const cases: Array<[number, number]> = [[0, 100], [0, 1], [100, 1], [65_530, 20], [150_000, 100_000], [299_901, 100], [300_000, 1], [299_990, 500], [0, 300_001]];
      for (const [offset, length] of cases) {
        expect({ offset, length, same: (await drain(await s.open(key, offset, length))).equals(bytes.subarray(offset, offset + length)) }).toEqual({ offset, length, same: true });
      }
      expect((await drain(await s.open(key, 10, 0))).length).toBe(0);
      await expect(s.open(randomUUID(), 0, 10)).rejects.toBeInstanceOf(NotFoundError);
      await expect(s.open(randomUUID(), 0, 0)).rejects.toBeInstanceOf(NotFoundError);
    });

    run('put replaces an existing object', async (s) => {
      const key = randomUUID();
      await s.put(key, Buffer.from('first version'));
      await s.put(key, Buffer.from('second'));
      expect((await s.read(key)).toString()).toBe('second');
      expect(await s.stat(key)).toEqual({ size: 6 });
    });

    run('an empty object is stored as empty', async (s) => {
      const key = randomUUID();
      await s.put(key, Buffer.alloc(0));
      expect((await s.read(key)).length).toBe(0);
      expect(await s.stat(key)).toEqual({ size: 0 });
    });

    run('missing objects: stat is null, read and open throw NotFoundError, remove is quiet', async (s) => {
      const key = randomUUID();
      expect(await s.stat(key)).toBeNull();
      await expect(s.read(key)).rejects.toBeInstanceOf(NotFoundError);
      await expect(s.open(key)).rejects.toBeInstanceOf(NotFoundError);
      await expect(s.remove(key)).resolves.toBeUndefined();
    });

    run('remove deletes the object', async (s) => {
      const key = randomUUID();
      await s.put(key, Buffer.from('bye'));
      await s.remove(key);
      expect(await s.stat(key)).toBeNull();
      await expect(s.read(key)).rejects.toBeInstanceOf(NotFoundError);
    });

    run('objects are independent of each other', async (s) => {
      const [a, b] = [randomUUID(), randomUUID()];
      await Promise.all([s.put(a, Buffer.from('aaa')), s.put(b, Buffer.from('bbbb'))]);
      await s.remove(a);
      expect((await s.read(b)).toString()).toBe('bbbb');
    });

    run('list answers the objects whose key starts with the prefix (an empty one too), with when each was written', async (s) => {
      const prefix = `list-${randomUUID().slice(0, 8)}-`;
      const keys = [`${prefix}${randomUUID()}`, `${prefix}${randomUUID()}`];
      const started = Date.now();
      await s.put(keys[0]!, Buffer.alloc(0));
      await s.put(keys[1]!, Buffer.from('x'));
      await s.put(randomUUID(), Buffer.from('not listed'));
      const listed: { key: string; writtenAt: Date }[] = [];
      for await (const item of s.list(prefix)) listed.push(item);
      expect(listed.map((l) => l.key).sort()).toEqual([...keys].sort());
      // Within a minute of the put (S3 dates whole seconds; clocks may differ a little).
      for (const { writtenAt } of listed) expect(Math.abs(writtenAt.getTime() - started)).toBeLessThan(60_000);
      await s.remove(keys[0]!);
      const after: string[] = [];
      for await (const item of s.list(prefix)) after.push(item.key);
      expect(after).toEqual([keys[1]]);
    });
  });
}
