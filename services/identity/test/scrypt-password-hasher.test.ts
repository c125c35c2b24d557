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
});
