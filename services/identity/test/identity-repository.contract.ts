import { randomUUID } from 'node:crypto';
import { AlreadyExistsError } from '@cards/platform';
import type { Invitation, PasswordReset, Session, User } from '../src/domain/model';
import type { IdentityRepository } from '../src/domain/ports';
import { contractTests, describeOnEngine } from '../../../test/engines/suite';

/** Records as the version before password versions stored them (no password version anywhere). */
export interface PreviousVersionRecords {
  users?: User[];
  sessions?: Session[];
  resets?: PasswordReset[];
}

export interface IdentityRepositoryHarness {
  repository: IdentityRepository;
  /** Writes records the way the previous version of the adapter did, as a rolling upgrade or an old file leaves them. */
  storeAsPreviousVersion(records: PreviousVersionRecords): Promise<void>;
  /** Closes the repository and deletes what the harness created. */
  close(): Promise<void>;
}

const at = (iso: string) => new Date(iso);

/** Test data builders: a valid object, changed only where a test cares. */
function aUser(overrides: Partial<User> = {}): User {
  const id = randomUUID();
  return {
    id,
    email: `${id.slice(0, 8)}@example.com`,
    username: null,
    website: null,
    visibleEmail: true,
    passwordHash: 'scrypt$old',
    passwordVersion: 0,
    createdAt: at('2026-01-02T03:04:05.678Z'),
    updatedAt: at('2026-01-02T03:04:05.678Z'),
    ...overrides,
  };
}

function anInvitation(overrides: Partial<Invitation> = {}): Invitation {
  return {
    id: randomUUID(),
    email: `${randomUUID().slice(0, 8)}@example.com`,
    referralTokens: ['ref-1', 'ref-2'],
    createdAt: at('2026-01-01T00:00:00.000Z'),
    expiresAt: at('2026-01-02T00:00:00.000Z'),
    usedAt: null,
    ...overrides,
  };
}

function aSession(userId: string, overrides: Partial<Session> = {}): Session {
  return { id: randomUUID(), userId, createdAt: at('2026-01-03T00:00:00.000Z'), expiresAt: at('2026-01-04T00:00:00.000Z'), revokedAt: null, passwordVersion: 0, ...overrides };
}

function aReset(userId: string, overrides: Partial<PasswordReset> = {}): PasswordReset {
  return { id: randomUUID(), userId, createdAt: at('2026-01-03T00:00:00.000Z'), expiresAt: at('2026-01-03T01:00:00.000Z'), usedAt: null, passwordVersion: 0, ...overrides };
}

/**
 * The IdentityRepository port's behaviour, run on every adapter (SQLite always, MongoDB when a
 * server is available). `skipReason` set means the adapter cannot run here and the suite is reported skipped.
 */
export function describeIdentityRepositoryContract(name: string, factory: () => Promise<IdentityRepositoryHarness>, skipReason?: string): void {
  describeOnEngine(`IdentityRepository contract: ${name}`, skipReason, () => {
    const test = contractTests(`identity-repository on ${name}`);
    let h: IdentityRepositoryHarness;
    let repo: IdentityRepository;
    beforeEach(async () => {
      h = await factory();
      repo = h.repository;
    });
    afterEach(async () => {
      await h.close();
    });

    async function registered(overrides: Partial<User> = {}): Promise<User> {
      const invitation = anInvitation();
      await repo.createInvitation(invitation);
      const user = aUser(overrides);
      expect(await repo.registerFromInvitation(invitation.id, user, at('2026-01-01T12:00:00.000Z'))).toBe(true);
      return user;
    }

    test('stores and finds an invitation with its dates and referral tokens; unknown ids find nothing', async () => {
      const invitation = anInvitation();
      await repo.createInvitation(invitation);
      expect(await repo.findInvitation(invitation.id)).toEqual(invitation);
      expect(await repo.findInvitation(randomUUID())).toBeNull();
    });

    test('registering from an invitation creates the user and uses the invitation up', async () => {
      const invitation = anInvitation();
      await repo.createInvitation(invitation);
      const user = aUser({ email: invitation.email });
      const usedAt = at('2026-01-01T12:00:00.000Z');
      expect(await repo.registerFromInvitation(invitation.id, user, usedAt)).toBe(true);
      expect(await repo.findUserById(user.id)).toEqual(user);
      expect(await repo.findUserByEmail(user.email)).toEqual(user);
      expect((await repo.findInvitation(invitation.id))?.usedAt).toEqual(usedAt);
      const second = aUser();
      expect(await repo.registerFromInvitation(invitation.id, second, usedAt)).toBe(false);
      expect(await repo.findUserById(second.id)).toBeNull();
    });

    test('an unknown invitation registers nobody', async () => {
      const user = aUser();
      expect(await repo.registerFromInvitation(randomUUID(), user, new Date())).toBe(false);
      expect(await repo.findUserById(user.id)).toBeNull();
    });

    test('a taken e-mail is AlreadyExistsError and leaves the invitation usable', async () => {
      const existing = await registered();
      const invitation = anInvitation();
      await repo.createInvitation(invitation);
      const clash = aUser({ email: existing.email });
      await expect(repo.registerFromInvitation(invitation.id, clash, new Date())).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await repo.findUserById(clash.id)).toBeNull();
      expect((await repo.findInvitation(invitation.id))?.usedAt).toBeNull();
      const other = aUser();
      expect(await repo.registerFromInvitation(invitation.id, other, new Date())).toBe(true);
    });

    test('of concurrent registrations with one invitation exactly one succeeds', async () => {
      const invitation = anInvitation();
      await repo.createInvitation(invitation);
      const users = Array.from({ length: 5 }, () => aUser());
      const results = await Promise.all(users.map((u) => repo.registerFromInvitation(invitation.id, u, new Date())));
      expect(results.filter(Boolean)).toHaveLength(1);
      const found = await repo.findUsersByIds(users.map((u) => u.id));
      expect(found).toHaveLength(1);
      expect(found[0]!.id).toBe(users[results.indexOf(true)]!.id);
    });

    test('finds users by ids, ignoring unknown and repeated ids', async () => {
      const a = await registered();
      const b = await registered({ username: 'Bea', website: 'https://bea.example', visibleEmail: false });
      expect(await repo.findUsersByIds([])).toEqual([]);
      const found = await repo.findUsersByIds([b.id, randomUUID(), a.id, b.id]);
      expect(found.map((u) => u.id).sort()).toEqual([a.id, b.id].sort());
      expect(found.find((u) => u.id === b.id)).toEqual(b);
      expect(await repo.findUserByEmail('nobody@example.com')).toBeNull();
    });

    test('finds an account stored under the NFD spelling of an address by its NFC form, the NFC one first when both exist', async () => {
      const tag = randomUUID().slice(0, 8);
      const nfc = `j\u00f6rg-${tag}@ex\u00e4mple.com`;
      const older = await registered({ email: nfc.normalize('NFD') });
      expect(await repo.findUserByEmail(nfc)).toEqual(older);
      const both = `\u00e5sa-${tag}@example.com`;
      await registered({ email: both.normalize('NFD') });
      const current = await registered({ email: both });
      expect(await repo.findUserByEmail(both)).toEqual(current);
      expect(await repo.findUserByEmail(`jorg-${tag}@example.com`)).toBeNull();
    });

    test('finds the account of the first of several spellings that has one, each spelling before its NFD form', async () => {
      const tag = randomUUID().slice(0, 8);
      const unicode = `x-${tag}@ex\u00e4mple.com`;
      const ascii = `x-${tag}@xn--exmple-cua.com`;
      const decomposed = await registered({ email: unicode.normalize('NFD') });
      expect(await repo.findUserByEmail([ascii, unicode])).toEqual(decomposed);
      const stored = await registered({ email: ascii });
      expect(await repo.findUserByEmail([ascii, unicode])).toEqual(stored);
      expect(await repo.findUserByEmail([unicode, ascii])).toEqual(decomposed);
      expect(await repo.findUserByEmail([`y-${tag}@example.com`, ascii])).toEqual(stored);
      expect(await repo.findUserByEmail([`y-${tag}@example.com`])).toBeNull();
    });

    test('usernames are unique regardless of case; a user may re-case their own; many users may have none', async () => {
      const a = await registered();
      const b = await registered();
      await registered();
      const later = at('2026-02-01T00:00:00.000Z');
      await repo.updateProfile(a.id, { username: 'CardFan', website: 'https://a.example', visibleEmail: false }, 'none', later);
      expect(await repo.findUserById(a.id)).toMatchObject({ username: 'CardFan', website: 'https://a.example', visibleEmail: false, updatedAt: later });
      await expect(repo.updateProfile(b.id, { username: 'cardfan' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect((await repo.findUserById(b.id))?.username).toBeNull();
      await repo.updateProfile(a.id, { username: 'CARDFAN' }, 'none', later);
      expect((await repo.findUserById(a.id))?.username).toBe('CARDFAN');
      // Giving a username up frees it for others.
      await repo.updateProfile(a.id, { username: null, visibleEmail: true }, 'none', later);
      await repo.updateProfile(b.id, { username: 'cardfan' }, 'none', later);
      expect((await repo.findUserById(b.id))?.username).toBe('cardfan');
      expect((await repo.findUserById(a.id))?.username).toBeNull();
    });

    test('usernames of any script are unique under Unicode case folding, and stored as written', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      const [owner, other] = [await registered(), await registered()];
      for (const [taken, clash] of [
        ['Zo\u00eb', 'ZO\u00cb'],
        ['Stra\u00dfe', 'STRASSE'],
        ['\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3', '\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2'], // ΣΊΣΥΦΟΣ, σίσυφος
        ['\u0414\u043c\u0438\u0442\u0440\u0438\u0439', '\u0434\u043c\u0438\u0442\u0440\u0438\u0439'], // Дмитрий, дмитрий
      ]) {
        expect(await repo.updateProfile(owner.id, { username: taken }, 'none', later)).toMatchObject({ username: taken });
        await expect(repo.updateProfile(other.id, { username: clash }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
        // Another spelling of the same name is the owner's to take.
        expect(await repo.updateProfile(owner.id, { username: clash }, 'none', later)).toMatchObject({ username: clash });
      }
      // Names that only look alike to ASCII lower-casing are different names: "김철수" and "김철수2" both, "Zoë" and "Zoe".
      expect(await repo.updateProfile(owner.id, { username: '\uae40\ucca0\uc218' }, 'none', later)).toMatchObject({ username: '\uae40\ucca0\uc218' });
      expect(await repo.updateProfile(other.id, { username: '\uae40\ucca0\uc2182' }, 'none', later)).toMatchObject({ username: '\uae40\ucca0\uc2182' });
      await expect(repo.updateProfile(other.id, { username: '\uae40\ucca0\uc218' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      const third = await registered({ username: 'Zo\u00eb' });
      await expect(repo.updateProfile(other.id, { username: 'zo\u00cb' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await repo.updateProfile(other.id, { username: 'Zoe' }, 'none', later)).toMatchObject({ username: 'Zoe' });
      expect(await repo.findUserById(third.id)).toMatchObject({ username: 'Zo\u00eb' });
    });

    test('usernames that look alike across scripts are one name: unique under the confusable skeleton of their case fold (UTS #39)', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      const [owner, other] = [await registered(), await registered()];
      for (const [taken, lookAlike] of [
        ['coco', '\u0441\u043e\u0441\u043e'], // сосо, all Cyrillic
        ['\u0421\u041e\u0421\u041e', 'coco'], // СОСО in Cyrillic capitals, then the Latin name
        ['paypal', '\u0440\u0430\u0443\u0440\u0430l'], // раураl: Cyrillic р, а, у, then a Latin l
        ['admin', '\u0430dmin'], // аdmin with a Cyrillic а
        ['ADMIN', 'adrnin'], // "rn" is "m"
        ['b0b', 'BOB'], // the digit 0 is the letter O
      ]) {
        expect(await repo.updateProfile(owner.id, { username: taken }, 'none', later)).toMatchObject({ username: taken });
        await expect(repo.updateProfile(other.id, { username: lookAlike }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
        expect((await repo.findUserById(other.id))?.username).toBeNull();
        // The look-alike is the owner's to take.
        expect(await repo.updateProfile(owner.id, { username: lookAlike }, 'none', later)).toMatchObject({ username: lookAlike });
        await repo.updateProfile(owner.id, { username: null }, 'none', later);
      }
      // The case-folding equivalences stay: "Straße" and "STRASSE" are one name.
      expect(await repo.updateProfile(owner.id, { username: 'Stra\u00dfe' }, 'none', later)).toMatchObject({ username: 'Stra\u00dfe' });
      await expect(repo.updateProfile(other.id, { username: 'STRASSE' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      // Different letters stay different names.
      expect(await repo.updateProfile(other.id, { username: 'cocoa' }, 'none', later)).toMatchObject({ username: 'cocoa' });
    });

    test('usernames that read alike only as written are one name too: "wiII" with capital i\'s is "will" (the skeleton before folding)', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      const [owner, other] = [await registered(), await registered()];
      for (const [taken, lookAlike] of [
        ['will', 'wiII'], // capital i's
        ['wiII', 'will'],
        ['wiII', 'Will'],
        ['BiII', 'bill'],
        ['Ian', 'lan'],
        ['lan', 'IAN'],
        ['xIx', 'x1x'],
        // One name's first key is the other's second: "WILL" is "will" up to case, which "wiII" reads as.
        ['WILL', 'wiII'],
        ['wiII', 'WILL'],
      ]) {
        expect(await repo.updateProfile(owner.id, { username: taken }, 'none', later)).toMatchObject({ username: taken });
        await expect(repo.updateProfile(other.id, { username: lookAlike }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
        expect((await repo.findUserById(other.id))?.username).toBeNull();
        // The look-alike is the owner's to take.
        expect(await repo.updateProfile(owner.id, { username: lookAlike }, 'none', later)).toMatchObject({ username: lookAlike });
        await repo.updateProfile(owner.id, { username: null }, 'none', later);
      }
      // What only folding first joins stays one name ("ΣΊΣΥΦΟΣ" and "σίσυφος"), and different letters stay two names.
      expect(await repo.updateProfile(owner.id, { username: '\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3' }, 'none', later)).toMatchObject({ username: '\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3' });
      await expect(repo.updateProfile(other.id, { username: '\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await repo.updateProfile(owner.id, { username: 'will' }, 'none', later)).toMatchObject({ username: 'will' });
      expect(await repo.updateProfile(other.id, { username: 'wiii' }, 'none', later)).toMatchObject({ username: 'wiii' });
      // Given up, the name is free under both keys.
      await repo.updateProfile(owner.id, { username: null }, 'none', later);
      expect(await repo.updateProfile(other.id, { username: 'wiII' }, 'none', later)).toMatchObject({ username: 'wiII' });
    });

    test('"will" and "wiII" both taken before the second key are both kept, and no one else can take either', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      const first = aUser({ username: 'will', createdAt: at('2026-01-01T00:00:00.000Z') });
      const second = aUser({ username: 'wiII', createdAt: at('2026-01-02T00:00:00.000Z') }); // capital i's
      await h.storeAsPreviousVersion({ users: [second, first] });
      expect(await repo.findUserById(first.id)).toMatchObject({ username: 'will' });
      expect(await repo.findUserById(second.id)).toMatchObject({ username: 'wiII' });
      const newer = await registered();
      const lookAlikes = ['will', 'WILL', 'Will', 'wiII', 'WiII', 'wi11'];
      const refusedToNewer = async () => {
        for (const name of lookAlikes) await expect(repo.updateProfile(newer.id, { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
        expect((await repo.findUserById(newer.id))?.username).toBeNull();
      };
      await refusedToNewer();
      // Each holder may send their own name again, and change its capitals; neither may take the other's name.
      expect(await repo.updateProfile(second.id, { username: 'wiII', website: 'https://second.example' }, 'none', later)).toMatchObject({ username: 'wiII', website: 'https://second.example' });
      expect(await repo.updateProfile(first.id, { username: 'will' }, 'none', later)).toMatchObject({ username: 'will' });
      expect(await repo.updateProfile(second.id, { username: 'WiII' }, 'none', later)).toMatchObject({ username: 'WiII' });
      expect(await repo.updateProfile(first.id, { username: 'Will' }, 'none', later)).toMatchObject({ username: 'Will' });
      await expect(repo.updateProfile(second.id, { username: 'will' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repo.updateProfile(first.id, { username: 'wiII' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      // The older renames away: the younger is given the second key itself; the name stays taken.
      expect(await repo.updateProfile(first.id, { username: 'robert_x' }, 'none', later)).toMatchObject({ username: 'robert_x' });
      await refusedToNewer();
      await expect(repo.updateProfile(first.id, { username: 'will' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      // The last holder leaves: the name is free.
      expect(await repo.updateProfile(second.id, { username: null }, 'none', later)).toMatchObject({ username: null });
      expect(await repo.updateProfile(newer.id, { username: 'will' }, 'none', later)).toMatchObject({ username: 'will' });
      await expect(repo.updateProfile(second.id, { username: 'wiII' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
    });

    test('the holder of "will" changing only its capitals keeps the name: a look-alike "wiII" kept from before is not given the key "will" still holds', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      const first = aUser({ username: 'will', createdAt: at('2026-01-01T00:00:00.000Z') });
      const second = aUser({ username: 'wiII', createdAt: at('2026-01-02T00:00:00.000Z') }); // capital i's
      await h.storeAsPreviousVersion({ users: [second, first] });
      const newer = await registered();
      // "WILL" leaves "will" as the second key (its own is "wlll": confusables.txt maps a capital I to "l"), not as the first.
      expect(await repo.updateProfile(first.id, { username: 'WILL' }, 'none', later)).toMatchObject({ username: 'WILL' });
      expect(await repo.updateProfile(first.id, { username: 'will' }, 'none', later)).toMatchObject({ username: 'will' });
      expect(await repo.updateProfile(first.id, { username: 'WILL' }, 'none', later)).toMatchObject({ username: 'WILL' });
      expect(await repo.updateProfile(first.id, { username: 'Will' }, 'none', later)).toMatchObject({ username: 'Will' });
      // Nothing moved to the look-alike: it keeps its name, takes none of will's, and no one else takes either.
      await expect(repo.updateProfile(second.id, { username: 'will' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repo.updateProfile(second.id, { username: 'WILL' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await repo.updateProfile(second.id, { username: 'wiII' }, 'none', later)).toMatchObject({ username: 'wiII' });
      for (const name of ['will', 'WILL', 'wiII', 'wi11']) await expect(repo.updateProfile(newer.id, { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      // The holder may not take the look-alike's own name on the way.
      await expect(repo.updateProfile(first.id, { username: 'wiII' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await repo.updateProfile(first.id, { username: 'will' }, 'none', later)).toMatchObject({ username: 'will' });
    });

    test('"WILL" and "wiII" both taken before, which meet only across the two keys, are kept and refused to others and to each other', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      const first = aUser({ username: 'WILL', createdAt: at('2026-01-01T00:00:00.000Z') });
      const second = aUser({ username: 'wiII', createdAt: at('2026-01-02T00:00:00.000Z') });
      await h.storeAsPreviousVersion({ users: [first, second] });
      const newer = await registered();
      for (const name of ['will', 'WILL', 'wiII']) await expect(repo.updateProfile(newer.id, { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repo.updateProfile(first.id, { username: 'wiII' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repo.updateProfile(second.id, { username: 'WILL' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await repo.updateProfile(first.id, { username: 'WILL', website: 'https://first.example' }, 'none', later)).toMatchObject({ username: 'WILL' });
      expect(await repo.updateProfile(second.id, { username: 'wiII' }, 'none', later)).toMatchObject({ username: 'wiII' });
    });

    test('of "WILL" and "wiII" taken at once by two users, which meet only across the two keys, exactly one is stored', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      for (let round = 0; round < 20; round++) {
        const [a, b] = [await registered(), await registered()];
        // Alternately first, so either may be the one whose first key is the other's second.
        const [first, second] = round % 2 === 0 ? [a, b] : [b, a];
        const results = await Promise.allSettled([repo.updateProfile(first.id, { username: 'WILL' }, 'none', later), repo.updateProfile(second.id, { username: 'wiII' }, 'none', later)]);
        expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
        const refused = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
        expect(refused?.reason).toBeInstanceOf(AlreadyExistsError);
        const names = (await repo.findUsersByIds([first.id, second.id])).map((user) => user.username);
        expect(names.filter((name) => name !== null)).toEqual([results[0].status === 'fulfilled' ? 'WILL' : 'wiII']);
        // The winner gives the name up for the next round.
        await repo.updateProfile(results[0].status === 'fulfilled' ? first.id : second.id, { username: null }, 'none', later);
      }
    });

    test('look-alike usernames both taken before the skeleton key are kept, and no one else can take either', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      const first = aUser({ username: 'coco', createdAt: at('2026-01-01T00:00:00.000Z') });
      const second = aUser({ username: '\u0441\u043e\u0441\u043e', createdAt: at('2026-01-02T00:00:00.000Z') });
      await h.storeAsPreviousVersion({ users: [second, first] });
      expect(await repo.findUserById(first.id)).toMatchObject({ username: 'coco' });
      expect(await repo.findUserById(second.id)).toMatchObject({ username: '\u0441\u043e\u0441\u043e' });
      const newer = await registered();
      for (const name of ['coco', 'COCO', '\u0441\u043e\u0441\u043e', '\u0421\u041e\u0421\u041e']) {
        await expect(repo.updateProfile(newer.id, { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      }
      // Each holder may send their own name again (a profile form does, with any other change).
      expect(await repo.updateProfile(second.id, { username: '\u0441\u043e\u0441\u043e', website: 'https://second.example' }, 'none', later)).toMatchObject({ username: '\u0441\u043e\u0441\u043e', website: 'https://second.example' });
      expect(await repo.updateProfile(first.id, { username: 'coco' }, 'none', later)).toMatchObject({ username: 'coco' });
      // Each may change its capitals, keeping the key it holds (the younger one's "key id" too).
      expect(await repo.updateProfile(second.id, { username: '\u0421\u041e\u0421\u041e' }, 'none', later)).toMatchObject({ username: '\u0421\u041e\u0421\u041e' });
      expect(await repo.updateProfile(first.id, { username: 'Coco' }, 'none', later)).toMatchObject({ username: 'Coco' });
      await expect(repo.updateProfile(newer.id, { username: 'coco' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
    });

    test('a look-alike kept from before takes the key when its holder leaves it: while anyone holds a look-alike, no one else takes one', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      const first = aUser({ username: 'coco', createdAt: at('2026-01-01T00:00:00.000Z') });
      const second = aUser({ username: '\u0441\u043e\u0441\u043e', createdAt: at('2026-01-02T00:00:00.000Z') }); // сосо
      const third = aUser({ username: 'c0c0', createdAt: at('2026-01-03T00:00:00.000Z') });
      await h.storeAsPreviousVersion({ users: [third, second, first] });
      const newer = await registered();
      const lookAlikes = ['coco', 'COCO', 'c0c0', 'C0C0', '\u0441\u043e\u0441\u043e'];
      const refusedToNewer = async () => {
        for (const name of lookAlikes) await expect(repo.updateProfile(newer.id, { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
        expect((await repo.findUserById(newer.id))?.username).toBeNull();
      };
      // Two users never show one name, up to capitals: a look-alike under "key id" may change only its capitals, the
      // holder of the key may not take a look-alike's name.
      for (const name of ['coco', 'Coco', 'c0c0']) await expect(repo.updateProfile(second.id, { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      for (const name of ['\u0421\u041e\u0421\u041e', 'C0C0', 'c0c0']) await expect(repo.updateProfile(first.id, { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect((await repo.findUsersByIds([first.id, second.id, third.id])).map((u) => u.username).sort()).toEqual(['c0c0', 'coco', '\u0441\u043e\u0441\u043e']);
      // The holder of the key renames away: the two look-alikes left still hold it.
      expect(await repo.updateProfile(first.id, { username: 'robert_x' }, 'none', later)).toMatchObject({ username: 'robert_x' });
      await refusedToNewer();
      // Coming back is taking a name someone holds.
      await expect(repo.updateProfile(first.id, { username: 'coco' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      // The oldest look-alike left holds the key itself now: the younger one still cannot move onto another spelling.
      expect(await repo.updateProfile(second.id, { username: 'Coco' }, 'none', later)).toMatchObject({ username: 'Coco' });
      expect(await repo.updateProfile(third.id, { username: 'C0C0', website: 'https://third.example' }, 'none', later)).toMatchObject({ username: 'C0C0' });
      // Clearing the name leaves the key too.
      expect(await repo.updateProfile(second.id, { username: null }, 'none', later)).toMatchObject({ username: null });
      await refusedToNewer();
      expect(await repo.updateProfile(third.id, { username: 'c0c0' }, 'none', later)).toMatchObject({ username: 'c0c0' });
      // The last holder leaves: the name is free.
      expect(await repo.updateProfile(third.id, { username: 'third_one' }, 'none', later)).toMatchObject({ username: 'third_one' });
      expect(await repo.updateProfile(newer.id, { username: 'c0c0' }, 'none', later)).toMatchObject({ username: 'c0c0' });
      await expect(repo.updateProfile(second.id, { username: 'coco' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      // No two users show one name.
      const names = (await repo.findUsersByIds([first.id, second.id, third.id, newer.id])).map((u) => u.username);
      expect(names.filter((name) => name !== null && lookAlikes.includes(name))).toEqual(['c0c0']);
    });

    test('a username stored by the previous version still holds against its other casings', async () => {
      const later = at('2026-02-01T00:00:00.000Z');
      const older = aUser({ username: 'OldTimer' });
      await h.storeAsPreviousVersion({ users: [older] });
      const newer = await registered();
      await expect(repo.updateProfile(newer.id, { username: 'oldtimer' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repo.updateProfile(newer.id, { username: 'OLDTIMER' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await repo.updateProfile(older.id, { username: 'oldTimer' }, 'none', later)).toMatchObject({ username: 'oldTimer' });
      // Given up, it is free for others.
      await repo.updateProfile(older.id, { username: null }, 'none', later);
      expect(await repo.updateProfile(newer.id, { username: 'OLDTIMER' }, 'none', later)).toMatchObject({ username: 'OLDTIMER' });
    });

    test('a profile change writes only the fields it names and answers the user as stored', async () => {
      const user = await registered({ username: 'keeper', website: 'https://keep.example' });
      const later = at('2026-02-01T00:00:00.000Z');
      expect(await repo.updateProfile(user.id, { website: 'https://new.example' }, 'none', later)).toEqual({ ...user, website: 'https://new.example', updatedAt: later });
      expect(await repo.updateProfile(user.id, { visibleEmail: false }, 'has-username', later)).toEqual({ ...user, website: 'https://new.example', visibleEmail: false, updatedAt: later });
      expect(await repo.updateProfile(user.id, { website: null }, 'none', later)).toMatchObject({ username: 'keeper', website: null, visibleEmail: false });
      expect(await repo.findUserById(user.id)).toEqual({ ...user, website: null, visibleEmail: false, updatedAt: later });
      // Changes of different fields at once: each writes its own field only, so both stay.
      await Promise.all([repo.updateProfile(user.id, { website: 'https://both.example' }, 'none', later), repo.updateProfile(user.id, { username: 'Both' }, 'none', later)]);
      expect(await repo.findUserById(user.id)).toMatchObject({ username: 'Both', website: 'https://both.example', visibleEmail: false });
      expect(await repo.updateProfile(randomUUID(), { website: null }, 'none', later)).toBeNull();
    });

    test('a profile change whose condition the stored profile does not meet writes nothing and answers null', async () => {
      const user = await registered();
      const later = at('2026-02-01T00:00:00.000Z');
      expect(await repo.updateProfile(user.id, { visibleEmail: false }, 'has-username', later)).toBeNull();
      expect(await repo.findUserById(user.id)).toEqual(user);
      await repo.updateProfile(user.id, { username: 'hidden', visibleEmail: false }, 'none', later);
      expect(await repo.updateProfile(user.id, { username: null }, 'email-visible', at('2026-03-01T00:00:00.000Z'))).toBeNull();
      expect(await repo.findUserById(user.id)).toMatchObject({ username: 'hidden', visibleEmail: false, updatedAt: later });
      await repo.updateProfile(user.id, { visibleEmail: true }, 'none', later);
      expect(await repo.updateProfile(user.id, { username: null }, 'email-visible', later)).toMatchObject({ username: null, visibleEmail: true });
      // The username given up is free again.
      const other = await registered();
      expect(await repo.updateProfile(other.id, { username: 'HIDDEN' }, 'none', later)).toMatchObject({ username: 'HIDDEN' });
    });

    test('sessions are stored, found and revoked once', async () => {
      const user = await registered();
      const session = aSession(user.id);
      await repo.createSession(session);
      expect(await repo.findSession(session.id)).toEqual(session);
      expect(await repo.findSession(randomUUID())).toBeNull();
      const first = at('2026-01-03T10:00:00.000Z');
      await repo.revokeSession(session.id, first);
      await repo.revokeSession(session.id, at('2026-01-03T11:00:00.000Z'));
      expect((await repo.findSession(session.id))?.revokedAt).toEqual(first);
    });

    test('completing a reset changes the password, revokes only that user\'s sessions and kills other reset links', async () => {
      const user = await registered();
      const bystander = await registered();
      const s1 = aSession(user.id);
      const s2 = aSession(user.id);
      const other = aSession(bystander.id);
      for (const s of [s1, s2, other]) await repo.createSession(s);
      const reset = aReset(user.id);
      const second = aReset(user.id);
      const bystanderReset = aReset(bystander.id);
      for (const r of [reset, second, bystanderReset]) await repo.createPasswordReset(r);
      expect(await repo.findPasswordReset(reset.id)).toEqual(reset);
      const when = at('2026-01-03T00:30:00.000Z');
      expect(await repo.completePasswordReset(reset, 'scrypt$new', when)).toBe(true);
      expect(await repo.findUserById(user.id)).toMatchObject({ passwordHash: 'scrypt$new', passwordVersion: 1, updatedAt: when });
      expect(await repo.findSession(s1.id)).toMatchObject({ passwordVersion: 0 });
      expect((await repo.findSession(s1.id))?.revokedAt).toEqual(when);
      expect((await repo.findSession(s2.id))?.revokedAt).toEqual(when);
      expect((await repo.findSession(other.id))?.revokedAt).toBeNull();
      expect((await repo.findPasswordReset(reset.id))?.usedAt).toEqual(when);
      expect((await repo.findPasswordReset(second.id))?.usedAt).toEqual(when);
      expect((await repo.findPasswordReset(bystanderReset.id))?.usedAt).toBeNull();
      expect((await repo.findUserById(bystander.id))?.passwordHash).toBe('scrypt$old');
      expect(await repo.completePasswordReset(reset, 'scrypt$again', new Date())).toBe(false);
      expect(await repo.findUserById(user.id)).toMatchObject({ passwordHash: 'scrypt$new', passwordVersion: 1 });
    });

    test('a rehash replaces the hash only while it is the one read, keeping the password version, sessions and reset links', async () => {
      const user = await registered({ passwordHash: 'scrypt$typed' });
      const session = aSession(user.id);
      await repo.createSession(session);
      const link = aReset(user.id);
      await repo.createPasswordReset(link);
      expect(await repo.rehashPassword(user.id, 'scrypt$typed', 'scrypt$nfc')).toBe(true);
      expect(await repo.findUserById(user.id)).toEqual({ ...user, passwordHash: 'scrypt$nfc' });
      expect((await repo.findSession(session.id))?.revokedAt).toBeNull();
      expect((await repo.findPasswordReset(link.id))?.usedAt).toBeNull();
      // A reset (or another rehash) came first: the hash read before is gone, nothing is written.
      expect(await repo.rehashPassword(user.id, 'scrypt$typed', 'scrypt$late')).toBe(false);
      expect((await repo.findUserById(user.id))?.passwordHash).toBe('scrypt$nfc');
    });

    test('of two reset links of one user used at once, exactly one replaces the password and the other changes nothing', async () => {
      for (let round = 0; round < 5; round++) {
        const user = await registered();
        const links = [aReset(user.id), aReset(user.id)];
        for (const r of links) await repo.createPasswordReset(r);
        const results = await Promise.all(links.map((r, i) => repo.completePasswordReset(r, `scrypt$link${i}`, new Date())));
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await repo.findUserById(user.id)).toMatchObject({ passwordHash: `scrypt$link${results.indexOf(true)}`, passwordVersion: 1 });
      }
    });

    test('a reset link sent under a password replaced since cannot replace it again, nor end the sessions opened with the new one', async () => {
      const user = await registered();
      const used = aReset(user.id);
      await repo.createPasswordReset(used);
      expect(await repo.completePasswordReset(used, 'scrypt$first', new Date())).toBe(true);
      // The user logs in with the new password.
      const afterReset = aSession(user.id, { passwordVersion: 1 });
      await repo.createSession(afterReset);
      // Sent while the first link was being used: it records the version before.
      const late = aReset(user.id, { passwordVersion: 0 });
      await repo.createPasswordReset(late);
      expect(await repo.completePasswordReset(late, 'scrypt$late', new Date())).toBe(false);
      expect(await repo.findUserById(user.id)).toMatchObject({ passwordHash: 'scrypt$first', passwordVersion: 1 });
      // Refused, it ends no session either: the one opened with the new password stays.
      expect((await repo.findSession(afterReset.id))?.revokedAt).toBeNull();
      const current = aReset(user.id, { passwordVersion: 1 });
      await repo.createPasswordReset(current);
      expect(await repo.completePasswordReset(current, 'scrypt$second', new Date())).toBe(true);
      expect(await repo.findUserById(user.id)).toMatchObject({ passwordHash: 'scrypt$second', passwordVersion: 2 });
    });

    test('users, sessions and reset links stored before password versions keep working', async () => {
      const user = aUser();
      const session = aSession(user.id);
      const link = aReset(user.id);
      await h.storeAsPreviousVersion({ users: [user], sessions: [session], resets: [link] });
      expect(await repo.findUserById(user.id)).toEqual({ ...user, passwordVersion: 0 });
      expect(await repo.findSession(session.id)).toEqual({ ...session, passwordVersion: null });
      const stored = await repo.findPasswordReset(link.id);
      expect(stored).toEqual({ ...link, passwordVersion: null });
      const when = at('2026-01-03T00:30:00.000Z');
      expect(await repo.completePasswordReset(stored!, 'scrypt$new', when)).toBe(true);
      expect(await repo.findUserById(user.id)).toMatchObject({ passwordHash: 'scrypt$new', passwordVersion: 1 });
      expect((await repo.findSession(session.id))?.revokedAt).toEqual(when);
      // A link without a version sent later (by a replica of the previous version) is held to the current password.
      const older = aReset(user.id);
      await h.storeAsPreviousVersion({ resets: [older] });
      expect(await repo.completePasswordReset((await repo.findPasswordReset(older.id))!, 'scrypt$newer', new Date())).toBe(true);
      expect(await repo.findUserById(user.id)).toMatchObject({ passwordHash: 'scrypt$newer', passwordVersion: 2 });
    });

    test('deleteExpired deletes the sessions, invitations and reset links expired at or before the time, used, revoked or not, at most limit of each; the rest stay', async () => {
      const user = await registered();
      const cutoff = at('2026-02-01T00:00:00.000Z');
      const before = at('2026-01-31T00:00:00.000Z');
      const after = at('2026-02-01T00:00:00.001Z');
      const oldSessions = [aSession(user.id, { expiresAt: before }), aSession(user.id, { expiresAt: cutoff, revokedAt: before }), aSession(user.id, { expiresAt: before })];
      const liveSessions = [aSession(user.id, { expiresAt: after }), aSession(user.id, { expiresAt: after, revokedAt: before })];
      const oldInvitations = [anInvitation({ expiresAt: before }), anInvitation({ expiresAt: cutoff, usedAt: before })];
      const liveInvitations = [anInvitation({ expiresAt: after })];
      const oldResets = [aReset(user.id, { expiresAt: before, usedAt: before }), aReset(user.id, { expiresAt: cutoff })];
      const liveResets = [aReset(user.id, { expiresAt: after, usedAt: before })];
      for (const s of [...oldSessions, ...liveSessions]) await repo.createSession(s);
      for (const i of [...oldInvitations, ...liveInvitations]) await repo.createInvitation(i);
      for (const r of [...oldResets, ...liveResets]) await repo.createPasswordReset(r);

      // registered() used an invitation expired by then too: 3 sessions, 3 invitations, 2 reset links, 2 of each at a time.
      expect(await repo.deleteExpired(cutoff, 2)).toBe(6);
      expect(await repo.deleteExpired(cutoff, 2)).toBe(2);
      expect(await repo.deleteExpired(cutoff, 2)).toBe(0);
      for (const s of oldSessions) expect(await repo.findSession(s.id)).toBeNull();
      for (const i of oldInvitations) expect(await repo.findInvitation(i.id)).toBeNull();
      for (const r of oldResets) expect(await repo.findPasswordReset(r.id)).toBeNull();
      for (const s of liveSessions) expect(await repo.findSession(s.id)).toEqual(s);
      for (const i of liveInvitations) expect(await repo.findInvitation(i.id)).toEqual(i);
      for (const r of liveResets) expect(await repo.findPasswordReset(r.id)).toEqual(r);
      expect(await repo.findUserById(user.id)).not.toBeNull();
    });

    test('of concurrent completions of one reset exactly one succeeds', async () => {
      const user = await registered();
      const reset = aReset(user.id);
      await repo.createPasswordReset(reset);
      const results = await Promise.all(['a', 'b', 'c', 'd'].map((p) => repo.completePasswordReset(reset, `scrypt$${p}`, new Date())));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = ['a', 'b', 'c', 'd'][results.indexOf(true)];
      expect((await repo.findUserById(user.id))?.passwordHash).toBe(`scrypt$${winner}`);
    });
  });
}
