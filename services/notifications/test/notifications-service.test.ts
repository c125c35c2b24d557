import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ClientError, Status } from 'nice-grpc';
import { Topics, createGrpcClient, createLogger, openSharedSqliteEventLog, type EventBus, type RunningService } from '@cards/platform';
import { events, notifications } from '@cards/proto';
import { startNotifications } from '../src/main';
import { testTempDir } from '../../../test/support/cleanup';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const verifiedEvent = (authorId: string, cardId: string, score: number) =>
  events.CardVerified.encode({ eventId: randomUUID(), occurredAt: new Date(), verificationId: randomUUID(), cardId, authorId, score, link: 'https://example.org/a', failure: '', contentSha256: '' }).finish();

const collectionCreatedEvent = (authorId: string, collectionId: string) =>
  events.CollectionEvent.encode({
    eventId: randomUUID(),
    occurredAt: new Date(),
    kind: { $case: 'created', value: { collectionId, authorId, name: 'Collection for file a.docx', isPublic: true, fileId: randomUUID() } },
  }).finish();

const cardDeletedEvent = (authorId: string, cardId: string) =>
  events.CardEvent.encode({ eventId: randomUUID(), occurredAt: new Date(), kind: { $case: 'deleted', value: { cardId, authorId } } }).finish();

const collectionDeletedEvent = (authorId: string, collectionId: string) =>
  events.CollectionEvent.encode({ eventId: randomUUID(), occurredAt: new Date(), kind: { $case: 'deleted', value: { collectionId, authorId } } }).finish();

/** The service as the system runs it: its own gRPC server and event consumer on the shared event log. */
describe('notifications service (gRPC + events)', () => {
  let dataDir: string;
  let service: RunningService;
  let bus: EventBus;
  let client: ReturnType<typeof createGrpcClient<typeof notifications.NotificationServiceDefinition>>;

  beforeAll(async () => {
    dataDir = testTempDir('notifications-svc-');
    const port = await freePort();
    service = await startNotifications({ DATA_DIR: dataDir, NOTIFICATIONS_GRPC_PORT: String(port), LOG_LEVEL: 'silent' });
    bus = openSharedSqliteEventLog({ path: join(dataDir, 'events', 'events.db'), logger: createLogger('test', 'silent') });
    client = createGrpcClient(notifications.NotificationServiceDefinition, service.address, { deadlineMs: 5000 });
  });
  afterAll(async () => {
    client?.channel.close();
    await service?.stop();
    await bus?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function listEventually(callerId: string, count: number) {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { notifications: list } = await client.client.listNotifications({ callerId });
      if (list.length >= count || Date.now() > deadline) return list;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('turns card-verified and collection-created events into unread notifications of the author, newest first', async () => {
    const author = randomUUID();
    const cardId = randomUUID();
    const collectionId = randomUUID();
    const verified = verifiedEvent(author, cardId, 83);
    await bus.publish([{ topic: Topics.keptVerification, key: cardId, payload: verified }]);
    await listEventually(author, 1);
    await bus.publish([{ topic: Topics.collection, key: collectionId, payload: collectionCreatedEvent(author, collectionId) }]);
    const list = await listEventually(author, 2);
    const decoded = events.CardVerified.decode(verified);
    expect(list).toHaveLength(2);
    expect(list[0]).toMatchObject({ type: notifications.NotificationType.NOTIFICATION_TYPE_COLLECTION_CREATED, userId: author, collectionId, userRead: false });
    expect(list[1]).toMatchObject({
      type: notifications.NotificationType.NOTIFICATION_TYPE_VERIFICATION,
      userId: author,
      cardId,
      verificationId: decoded.verificationId,
      similarityScore: 83,
      userRead: false,
    });
  });

  it('replaying the same events leaves exactly one notification each', async () => {
    const author = randomUUID();
    const cardId = randomUUID();
    const collectionId = randomUUID();
    const verified = verifiedEvent(author, cardId, 12);
    const created = collectionCreatedEvent(author, collectionId);
    const batch = [
      { topic: Topics.keptVerification, key: cardId, payload: verified },
      { topic: Topics.collection, key: collectionId, payload: created },
    ];
    await bus.publish(batch);
    await bus.publish(batch);
    // A marker event published after the replays: once it is visible, the replays have been consumed.
    const marker = randomUUID();
    await bus.publish([{ topic: Topics.keptVerification, key: marker, payload: verifiedEvent(author, marker, 1) }]);
    const list = await listEventually(author, 3);
    await new Promise((r) => setTimeout(r, 200));
    const again = (await client.client.listNotifications({ callerId: author })).notifications;
    expect(again).toHaveLength(3);
    expect(list.filter((n) => n.cardId === cardId)).toHaveLength(1);
    expect(list.filter((n) => n.collectionId === collectionId)).toHaveLength(1);
  });

  it('an undecodable event is skipped without blocking the ones behind it', async () => {
    const author = randomUUID();
    const cardId = randomUUID();
    await bus.publish([
      { topic: Topics.keptVerification, key: cardId, payload: new Uint8Array([0xff, 0xff, 0xff, 0xff]) },
      { topic: Topics.keptVerification, key: cardId, payload: verifiedEvent(author, cardId, 40) },
    ]);
    expect(await listEventually(author, 1)).toHaveLength(1);
  });

  it('lists in pages that follow next_page_token; a bad page_size or page_token is INVALID_ARGUMENT', async () => {
    const author = randomUUID();
    const cards = [randomUUID(), randomUUID(), randomUUID()];
    await bus.publish(cards.map((cardId) => ({ topic: Topics.keptVerification, key: cardId, payload: verifiedEvent(author, cardId, 50) })));
    const all = await listEventually(author, 3);

    const first = await client.client.listNotifications({ callerId: author, pageSize: 2 });
    expect(first.notifications).toEqual(all.slice(0, 2));
    expect(first.nextPageToken).not.toBe('');
    const second = await client.client.listNotifications({ callerId: author, pageSize: 2, pageToken: first.nextPageToken });
    expect(second).toEqual({ notifications: all.slice(2), nextPageToken: '' });
    expect(await client.client.listNotifications({ callerId: author, pageSize: 5000 })).toEqual({ notifications: all, nextPageToken: '' });

    await expect(client.client.listNotifications({ callerId: author, pageSize: -1 })).rejects.toMatchObject({ code: Status.INVALID_ARGUMENT, details: expect.stringContaining('page_size') });
    await expect(client.client.listNotifications({ callerId: author, pageSize: 2, pageToken: 'not-a-token' })).rejects.toMatchObject({ code: Status.INVALID_ARGUMENT, details: expect.stringContaining('page_token') });
  });

  it('mark read: owner only (NOT_FOUND for someone else or unknown ids), then mark all', async () => {
    const author = randomUUID();
    const intruder = randomUUID();
    const first = randomUUID();
    const second = randomUUID();
    await bus.publish([
      { topic: Topics.keptVerification, key: first, payload: verifiedEvent(author, first, 70) },
      { topic: Topics.keptVerification, key: second, payload: verifiedEvent(author, second, 10) },
    ]);
    const list = await listEventually(author, 2);
    const target = list[0]!;

    await expect(client.client.markRead({ callerId: intruder, notificationId: target.id })).rejects.toMatchObject({ code: Status.NOT_FOUND });
    await expect(client.client.markRead({ callerId: author, notificationId: randomUUID() })).rejects.toMatchObject({ code: Status.NOT_FOUND });
    await expect(client.client.markRead({ callerId: author, notificationId: 'nope' })).rejects.toBeInstanceOf(ClientError);
    await client.client.markAllRead({ callerId: intruder });
    expect((await client.client.listNotifications({ callerId: author })).notifications.every((n) => !n.userRead)).toBe(true);

    await client.client.markRead({ callerId: author, notificationId: target.id });
    const afterOne = (await client.client.listNotifications({ callerId: author })).notifications;
    expect(afterOne.find((n) => n.id === target.id)!.userRead).toBe(true);
    expect(afterOne.filter((n) => !n.userRead)).toHaveLength(1);

    await client.client.markAllRead({ callerId: author });
    expect((await client.client.listNotifications({ callerId: author })).notifications.every((n) => n.userRead)).toBe(true);
  });

  it('a deleted card or collection takes its notifications with it; one announced behind the deletion is not kept', async () => {
    const author = randomUUID();
    const [gone, stays, goneCollection] = [randomUUID(), randomUUID(), randomUUID()];
    await bus.publish([
      { topic: Topics.keptVerification, key: gone, payload: verifiedEvent(author, gone, 40) },
      { topic: Topics.keptVerification, key: stays, payload: verifiedEvent(author, stays, 60) },
      { topic: Topics.collection, key: goneCollection, payload: collectionCreatedEvent(author, goneCollection) },
    ]);
    expect(await listEventually(author, 3)).toHaveLength(3);
    await bus.publish([
      { topic: Topics.card, key: gone, payload: cardDeletedEvent(author, gone) },
      { topic: Topics.collection, key: goneCollection, payload: collectionDeletedEvent(author, goneCollection) },
    ]);
    // A later result about the deleted card (its event was behind the deletion), then a marker event to wait for.
    await bus.publish([{ topic: Topics.keptVerification, key: gone, payload: verifiedEvent(author, gone, 70) }]);
    const marker = randomUUID();
    await bus.publish([{ topic: Topics.keptVerification, key: marker, payload: verifiedEvent(author, marker, 10) }]);
    const deadline = Date.now() + 10_000;
    let list = await listEventually(author, 1);
    while ((list.length !== 2 || !list.some((n) => n.cardId === marker)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      list = (await client.client.listNotifications({ callerId: author })).notifications;
    }
    expect(list.map((n) => n.cardId).sort()).toEqual([stays, marker].sort());
  });
});
