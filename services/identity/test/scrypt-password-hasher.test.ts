import { ScryptPasswordHasher } from '../src/adapters/crypto/scrypt-password-hasher';

describe('ScryptPasswordHasher', () => {
  it('hashes and verifies at every cost the configuration takes, up to 2^17 (a fixed 64 MiB memory bound refused 2^16 and 2^17)', async () => {
    for (const cost of [1024, 16384, 65536, 131072]) {
      const hasher = new ScryptPasswordHasher(cost);
      const hash = await hasher.hash('long enough');
      expect(hash.startsWith(`scrypt$${cost}$8$1$`)).toBe(true);
      expect(await hasher.verify('long enough', hash)).toBe(true);
      expect(await hasher.verify('long enougH', hash)).toBe(false);
      // A hash keeps its own cost: one made before a cost was raised (or lowered) still verifies.
      expect(await new ScryptPasswordHasher(16384).verify('long enough', hash)).toBe(true);
    }
  });

  /** The scrypt work (the sum of N) of what `run` calls; scrypt's time grows with N. */
  async function scryptWork(run: () => Promise<unknown>): Promise<number> {
    const crypto = require('node:crypto') as typeof import('node:crypto');
    const spy = jest.spyOn(crypto, 'scrypt');
    try {
      await run();
      return spy.mock.calls.reduce((sum, call) => sum + (call[3] as { N: number }).N, 0);
    } finally {
      spy.mockRestore();
    }
  }

  it("checking a hash made before the cost was raised costs the cost now, as checking the unknown address's hash made now does", async () => {
    const hasher = new ScryptPasswordHasher(8192);
    const before = await new ScryptPasswordHasher(1024).hash('long enough');
    const now = await hasher.hash('long enough');
    expect(await scryptWork(() => hasher.verify('wrong password', now))).toBe(8192);
    expect(await scryptWork(() => hasher.verify('wrong password', before))).toBe(8192);
    expect(await hasher.verify('long enough', before)).toBe(true);
  });

  it('needs a rehash for a hash of another cost only', async () => {
    const hasher = new ScryptPasswordHasher(2048);
    expect(hasher.needsRehash(await hasher.hash('x'))).toBe(false);
    expect(hasher.needsRehash(await new ScryptPasswordHasher(1024).hash('x'))).toBe(true);
    expect(hasher.needsRehash(await new ScryptPasswordHasher(4096).hash('x'))).toBe(true);
  });
});
