import { readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import S3rver from 's3rver';
import { ClientError, Status } from 'nice-grpc';
import { createGrpcClient } from '@cards/platform';
import { files } from '@cards/proto';
import { freePortsSync } from '../../../test/engines/engine-support';
import { FAST_READINESS, healthOf, startServiceProcess, waitFor, type ServiceProcess } from '../../../test/engines/service-process';
import { testTempDir } from '../../../test/support/cleanup';

// Issue #8: files on S3 whose server goes away stays ready (grpc.health.v1 SERVING for "" and its own name:
// only uploads and downloads need S3) while "engine:s3" turns NOT_SERVING, answers an upload UNAVAILABLE (not
// INTERNAL) while other calls keep working, does not crash, and reports S3 back and stores uploads once a
// server answers on the same address. s3rver stands in for MinIO (docs/engines.md).
describe('engine loss on S3 (files alone, s3rver stopped and restarted)', () => {
  const [grpcPort, httpPort, s3Port] = freePortsSync(3) as [number, number, number];
  const address = `127.0.0.1:${grpcPort}`;
  const s3Dir = testTempDir('cards-s3rver-');
  const pdf = readFileSync(resolve(__dirname, '../../../test/fixtures/documents/coffee.pdf'));
  const caller = randomUUID();
  let s3: S3rver | undefined;
  let service: ServiceProcess;
  const probe = healthOf(address);
  const { client, channel } = createGrpcClient(files.FileServiceDefinition, address, { deadlineMs: 15_000 });

  const startS3 = async () => {
    s3 = new S3rver({ port: s3Port, address: '127.0.0.1', silent: true, directory: s3Dir });
    await s3.run();
  };
  /** Closes the server and the clients' kept-alive connections with it, as a crashed server would. */
  const stopS3 = async () => {
    const server = s3 as unknown as { httpServer?: { closeAllConnections(): void } } | undefined;
    const closed = s3?.close();
    server?.httpServer?.closeAllConnections();
    await closed;
    s3 = undefined;
  };
  async function* uploadParts(name: string) {
    yield { part: { $case: 'header' as const, value: { callerId: caller, fileName: name, mimeType: 'application/pdf', private: false, tags: [], size: pdf.length } } };
    yield { part: { $case: 'chunk' as const, value: pdf } };
  }

  // Files serves downloads only to a caller holding its internal token (the gateway's).
  const INTERNAL_TOKEN = randomUUID() + randomUUID();

  beforeAll(async () => {
    await startS3();
    service = startServiceProcess('files', {
      S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
      S3_ACCESS_KEY: 'S3RVER',
      S3_SECRET_KEY: 'S3RVER',
      FILES_GRPC_HOST: '127.0.0.1',
      FILES_GRPC_PORT: String(grpcPort),
      FILES_HTTP_PORT: String(httpPort),
      CARDS_SERVICE_ADDR: '127.0.0.1:1',
      FILES_INTERNAL_TOKEN: INTERNAL_TOKEN,
      ...FAST_READINESS,
    });
    await waitFor('files SERVING', async () => (await probe.status()) === 'SERVING', 60_000, service);
  }, 90_000);

  afterAll(async () => {
    channel.close();
    probe.channel.close();
    await service?.stop();
    await stopS3().catch(() => undefined);
    rmSync(s3Dir, { recursive: true, force: true });
  }, 30_000);

  it('stays SERVING (engine:s3 NOT_SERVING) and refuses uploads UNAVAILABLE while S3 is gone, then stores uploads again', async () => {
    expect(await probe.status('engine:s3')).toBe('SERVING');
    const before = await client.uploadFile(uploadParts('before.pdf'));

    await stopS3();
    const noticedMs = await waitFor('engine:s3 NOT_SERVING', async () => (await probe.status('engine:s3')) === 'NOT_SERVING', 15_000, service);
    expect(await probe.status('')).toBe('SERVING');
    expect(await probe.status('files.v1.FileService')).toBe('SERVING');
    process.stdout.write(`[engine loss] S3 stopped: engine:s3 NOT_SERVING after ${noticedMs} ms, files still SERVING\n`);

    const refused = await client.uploadFile(uploadParts('during.pdf')).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ClientError);
    expect(refused).toMatchObject({ code: Status.UNAVAILABLE });
    // S3 does not gate calls: the file records (SQLite here) still answer.
    expect((await client.getFile({ fileId: before.id, callerId: caller })).id).toBe(before.id);
    // The download route the gateway passes through answers a retryable 503 with a message, not a 500.
    const download = await fetch(`http://127.0.0.1:${httpPort}/files/${before.id}`, { headers: { 'x-caller-id': caller, 'x-files-internal-token': INTERNAL_TOKEN }, signal: AbortSignal.timeout(10_000) });
    expect(download.status).toBe(503);
    expect(await download.json()).toEqual({ message: 'A backing service is unavailable, try again' });

    await startS3();
    const backMs = await waitFor('engine:s3 SERVING again', async () => (await probe.status('engine:s3')) === 'SERVING', 15_000, service);
    process.stdout.write(`[engine loss] S3 back on the same port: engine:s3 SERVING after ${backMs} ms\n`);
    expect(await probe.status('')).toBe('SERVING');
    const after = await client.uploadFile(uploadParts('after.pdf'));
    expect(after.fileName).toBe('after.pdf');
    const bytes = await fetch(`http://127.0.0.1:${httpPort}/files/${before.id}`, { headers: { 'x-caller-id': caller, 'x-files-internal-token': INTERNAL_TOKEN }, signal: AbortSignal.timeout(10_000) });
    expect(bytes.status).toBe(200);
    expect(Buffer.from(await bytes.arrayBuffer()).equals(pdf)).toBe(true);
    expect(service.child.exitCode).toBeNull();
    expect(service.output()).toContain('S3 (S3_ENDPOINT) is unreachable: still ready, engine:s3 NOT_SERVING until it answers again');
  }, 60_000);
});
