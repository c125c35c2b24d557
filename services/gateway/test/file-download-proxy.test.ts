import { Agent, createServer, get, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GatewayClients } from '../src/clients';
import { appWithoutServices, listening } from './app-without-services';

const TOKEN = 'the-current-internal-token';
const FILE_ID = '6f1c2b1e-0000-4000-8000-000000000001';
const BYTES = Buffer.from('%PDF-1.4 the bytes of the file');

/** Stands in for the files service's download endpoint: the bytes with its token, its 401 answer without. */
function filesDownloadEndpoint(): Server {
  return createServer((req, res) => {
    if (req.headers['x-files-internal-token'] !== TOKEN) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'Missing or wrong internal token' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/pdf' });
    res.end(BYTES);
  });
}

async function listen(server: Server): Promise<string> {
  await listening(server);
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// The visibility check is a gRPC call to files; here every file is public.
const clients = { files: { getFile: async () => ({ id: FILE_ID }) } } as unknown as GatewayClients;

describe('GET /api/file/:id/download when the files service refuses the gateway', () => {
  let files: Server;
  let filesHttpAddress: string;
  const gateways: Server[] = [];

  beforeAll(async () => {
    files = filesDownloadEndpoint();
    filesHttpAddress = await listen(files);
  });
  afterAll(async () => {
    for (const server of [...gateways, files]) await new Promise((resolve) => server.close(resolve));
  });

  async function download(filesInternalToken: string | undefined): Promise<Response> {
    const gateway = createServer(appWithoutServices({ clients, filesHttpAddress, filesInternalToken }));
    gateways.push(gateway);
    return fetch(`http://${await listen(gateway)}/api/file/${FILE_ID}/download`);
  }

  it('passes the bytes through with the token files holds', async () => {
    const res = await download(TOKEN);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(BYTES)).toBe(true);
  });

  it("answers 502 with a JSON message, not files' 401 (which would tell a signed-in user to sign in again)", async () => {
    for (const token of ['a-token-files-does-not-hold', undefined]) {
      const res = await download(token);
      expect(res.status).toBe(502);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ message: expect.stringContaining('file service refused the gateway') });
    }
  });
});

describe('GET /api/file/:id/download over a kept-alive connection', () => {
  let files: Server;
  let gateway: Server;
  let gatewayAddress: string;

  beforeAll(async () => {
    files = filesDownloadEndpoint();
    gateway = createServer(appWithoutServices({ clients, filesHttpAddress: await listen(files), filesInternalToken: TOKEN }));
    gatewayAddress = await listen(gateway);
  });
  afterAll(async () => {
    gateway.closeAllConnections();
    for (const server of [gateway, files]) await new Promise((resolve) => server.close(resolve));
  });

  const download = (agent: Agent) =>
    new Promise<{ res: IncomingMessage; reusedSocket: boolean; body: Buffer }>((resolve, reject) => {
      const req = get(`http://${gatewayAddress}/api/file/${FILE_ID}/download`, { agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ res, reusedSocket: req.reusedSocket, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
    });

  // The proxy's own request to files says `Connection: close` (no agent of its own), and files' answer said so too:
  // passed through, it closed the client's connection after every download, so a browser or a reverse proxy in
  // front opened a new one (TCP, TLS) for its next request.
  it("keeps the client's connection open: the files service's `Connection: close` is not passed on", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await download(agent);
      expect(first.res.statusCode).toBe(200);
      expect(first.body.equals(BYTES)).toBe(true);
      expect(first.res.headers.connection).not.toBe('close');
      const second = await download(agent);
      expect(second.res.statusCode).toBe(200);
      expect(second.body.equals(BYTES)).toBe(true);
      expect(second.reusedSocket).toBe(true);
    } finally {
      agent.destroy();
    }
  });
});

// http-proxy writes the head of its request to files at once when the client's request says `Expect: 100-continue`,
// and then skips the hook that sets the gateway's token and caller and removes the client's own: files answered 401,
// the client a 502, and the operator log blamed FILES_INTERNAL_TOKEN. Any client could do that at will.
describe('GET /api/file/:id/download with `Expect: 100-continue`', () => {
  let files: Server;
  let gateway: Server;
  let gatewayAddress: string;
  const seenByFiles: IncomingMessage['headers'][] = [];

  beforeAll(async () => {
    files = filesDownloadEndpoint();
    files.prependListener('request', (req: IncomingMessage) => seenByFiles.push(req.headers));
    gateway = createServer(appWithoutServices({ clients, filesHttpAddress: await listen(files), filesInternalToken: TOKEN }));
    gatewayAddress = await listen(gateway);
  });
  afterAll(async () => {
    gateway.closeAllConnections();
    for (const server of [gateway, files]) await new Promise((resolve) => server.close(resolve));
  });

  it("passes the bytes through with the gateway's token and none of the client's own caller or token headers", async () => {
    const headers = { expect: '100-continue', 'x-caller-id': '6f1c2b1e-0000-4000-8000-0000000000ff', 'x-files-internal-token': 'guessed', authorization: 'Bearer x' };
    const { status, body } = await new Promise<{ status?: number; body: Buffer }>((resolve, reject) => {
      const req = get(`http://${gatewayAddress}/api/file/${FILE_ID}/download`, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
    });
    expect(status).toBe(200);
    expect(body.equals(BYTES)).toBe(true);
    const seen = seenByFiles.at(-1)!;
    expect(seen['x-files-internal-token']).toBe(TOKEN);
    expect(seen['x-caller-id']).toBeUndefined();
    expect(seen.authorization).toBeUndefined();
    expect(seen.expect).toBeUndefined();
  });
});

// http-proxy copies the client's Connection header into the answer when files' names none (setConnection): a request
// saying `Connection: Upgrade` got a 200 saying `Connection: Upgrade`, which announces a protocol switch that never
// happens, and any token a client sent came back as if the gateway had chosen it.
describe("GET /api/file/:id/download answers with the gateway's own Connection header", () => {
  let files: Server;
  let gateway: Server;
  let gatewayAddress: string;

  beforeAll(async () => {
    files = filesDownloadEndpoint();
    gateway = createServer(appWithoutServices({ clients, filesHttpAddress: await listen(files), filesInternalToken: TOKEN }));
    gatewayAddress = await listen(gateway);
  });
  afterAll(async () => {
    gateway.closeAllConnections();
    for (const server of [gateway, files]) await new Promise((resolve) => server.close(resolve));
  });

  const download = (connection: string) =>
    new Promise<{ status?: number; connection?: string; body: Buffer }>((resolve, reject) => {
      const req = get(`http://${gatewayAddress}/api/file/${FILE_ID}/download`, { agent: false, headers: { connection } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
    });

  it.each([
    ['Upgrade', 'keep-alive'],
    ['x-made-up-token', 'keep-alive'],
    ['close', 'close'],
  ])('the client asks `Connection: %s`: the answer says %s', async (asked, answered) => {
    const { status, connection, body } = await download(asked);
    expect(status).toBe(200);
    expect(body.equals(BYTES)).toBe(true);
    expect(connection).toBe(answered);
  });
});
