import { randomUUID } from 'node:crypto';
import { ResourceExhaustedError, TooLargeError } from '@cards/platform';
import { describeBehindGateway, stubPeersForSuite } from './fake-peer';

/** The files service's refusal of an upload beyond the user's share of its document checks (PARSER_CHECKS_PER_USER). */
const OWN_CHECKS_BUSY = 'You have too many uploads being checked at once; upload the file again when one of them has finished';

/** Users whose collection listing the stub cards service answers in a way the test names. */
const overQuota = randomUUID();
const tooLarge = randomUUID();
const sentTooMuch = randomUUID();

const peers = stubPeersForSuite({
  identity: {
    async getUsers(req) {
      return { users: req.ids.map((id) => ({ id, email: `${id}@example.com` })) };
    },
    async resolveSession(req) {
      return { id: req.token, email: `${req.token}@example.com`, visibleEmail: false };
    },
  },
  files: {
    async uploadFile(messages) {
      for await (const _message of messages);
      throw new ResourceExhaustedError(OWN_CHECKS_BUSY);
    },
  },
  cards: {
    async listUserCollections(req) {
      // A service's own quota: the client's doing.
      if (req.userId === overQuota) throw new ResourceExhaustedError('collections: more than this user may list at once');
      // A service's size limit (as the files service's MAX_FILE_BYTES under a larger gateway limit).
      if (req.userId === sentTooMuch) throw new TooLargeError('base64_docx_file: the file is 30 bytes, above the limit of 20');
      // An answer over gRPC's 8 MiB message limit, as an unpaged list of 4,500 long collections was.
      const at = new Date('2026-01-01T00:00:00.000Z');
      const collection = { authorId: req.userId, name: 'long', description: 'd'.repeat(2000), isPublic: true, createdAt: at, updatedAt: at };
      return { collections: Array.from({ length: 4500 }, () => ({ ...collection, id: randomUUID() })), nextPageToken: '' };
    },
  },
});

describeBehindGateway('a RESOURCE_EXHAUSTED status behind the gateway', () => peers.address, (gateway, inProcess) => {
  it("is 429 with the service's message when the service's own code refused (a quota or limit)", async () => {
    const res = await fetch(`${gateway.base}/api/user/collections/${overQuota}`);
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 429, body: { message: 'collections: more than this user may list at once' } });
  });

  it("is 413 with the service's message when the service found what was sent too large (no quota: no retry helps)", async () => {
    const res = await fetch(`${gateway.base}/api/user/collections/${sentTooMuch}`);
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 413, body: { message: 'base64_docx_file: the file is 30 bytes, above the limit of 20' } });
  });

  it("is 429 with Retry-After and the files service's message when an upload finds the user's share of its document checks taken", async () => {
    const res = await fetch(`${gateway.base}/api/file`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `ai-editor=${randomUUID()}` },
      body: JSON.stringify({ base64_docx_file: Buffer.from('PK').toString('base64url'), file_name: 'a.docx', file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', private: false }),
    });
    expect({ status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') }).toEqual({ status: 429, body: { message: OWN_CHECKS_BUSY }, retryAfter: '5' });
  });

  if (!inProcess) {
    // In process, messages are never framed, so no size limit applies (see docs/decisions.md).
    it("is a 500 with a generic message, the detail only in the log, when it is gRPC's own: a message over the size limit", async () => {
      const res = await fetch(`${gateway.base}/api/user/collections/${tooLarge}`);
      const body = await res.json();
      expect({ status: res.status, body }).toEqual({ status: 500, body: { message: 'Internal error' } });
      expect(gateway.logged.join('')).toMatch(/message larger than max/);
    });
  }
});
