import { createGrpcClient } from '@cards/platform';
import { cards, files, health, identity, notifications, search } from '@cards/proto';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';

// The all-in-one's services listen on loopback gRPC ports and take the caller's user id from the request. Any local
// process or user of the host reaches loopback, so without a secret shared inside the process they could read every
// private card by naming its author as the caller.

let system: RunningSystem;
let mailbox: Mailbox;
let alice: TestUser;
const channels: { close(): void }[] = [];

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, LOG_LEVEL: 'info' } });
  alice = await signUp(system.baseUrl, mailbox, 'grpc-ports');
}, 120_000);

afterAll(async () => {
  for (const channel of channels) channel.close();
  await system?.stop();
  await mailbox?.stop();
});

/** The loopback gRPC port each service of the all-in-one logged at start. */
function grpcPorts(): Record<string, number> {
  const ports: Record<string, number> = {};
  for (const line of system.logs().split('\n')) {
    const match = /"service":"(\w+)".*"port":(\d+),"msg":"gRPC server listening"/.exec(line);
    if (match) ports[match[1]!] = Number(match[2]);
  }
  return ports;
}

/** A client of this test process, which holds no secret of the system's: an outsider on the same host. */
function clientOf<D extends Parameters<typeof createGrpcClient>[0]>(definition: D, port: number) {
  const { client, channel } = createGrpcClient(definition, `127.0.0.1:${port}`, { deadlineMs: 5000 });
  channels.push(channel);
  return client;
}

/** The gRPC status name a call ended with ("answered" when it succeeded). */
const statusOf = (call: Promise<unknown>) => call.then(() => 'answered', (err: unknown) => / ([A-Z_]+): /.exec(String(err))?.[1] ?? String(err));

describe("the all-in-one's loopback gRPC ports", () => {
  it("refuse a call from outside the process, naming a user as the caller: another local user cannot read a private card", async () => {
    const created = await alice.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: true });
    expect(created.status).toBe(200);
    const cardId = created.json.card_metadata.id as string;
    const ports = grpcPorts();
    expect(Object.keys(ports).sort()).toEqual(['cards', 'files', 'identity', 'notifications', 'search']);
    const answers = {
      cards: await statusOf(clientOf(cards.CardServiceDefinition, ports.cards!).getCard({ cardId, callerId: alice.id })),
      identity: await statusOf(clientOf(identity.IdentityServiceDefinition, ports.identity!).getUsers({ ids: [alice.id] })),
      files: await statusOf(clientOf(files.FileServiceDefinition, ports.files!).listUserFiles({ userId: alice.id, callerId: alice.id })),
      notifications: await statusOf(clientOf(notifications.NotificationServiceDefinition, ports.notifications!).listNotifications({ callerId: alice.id })),
      search: await statusOf(clientOf(search.SearchServiceDefinition, ports.search!).fullTextSearch({ query: 'x', callerId: alice.id })),
    };
    expect(answers).toEqual({ cards: 'UNAUTHENTICATED', identity: 'UNAUTHENTICATED', files: 'UNAUTHENTICATED', notifications: 'UNAUTHENTICATED', search: 'UNAUTHENTICATED' });
    // A health probe still answers, and the services still answer one another: the owner reads the card through the API.
    const probe = await clientOf(health.HealthDefinition, ports.cards!).check({ service: '' });
    expect(probe.status).toBe(health.HealthCheckResponse_ServingStatus.SERVING);
    expect((await alice.client.get(`/api/card/${cardId}`)).status).toBe(200);
  });
});
