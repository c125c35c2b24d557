import { randomUUID } from 'node:crypto';
import { createGrpcClient, createLogger, KafkaEventBus, Topics, type Subscription } from '@cards/platform';
import { cards } from '@cards/proto';
import { freePortsSync } from './engine-support';
import { startKafkaSync } from './kafka';
import { FAST_READINESS, healthOf, startServiceProcess, waitFor, type ServiceProcess } from './service-process';
import { describeOnEngine, engineForSuite, report } from './suite';

// Issue #8: a service on Kafka whose broker goes away stays ready (grpc.health.v1 SERVING for "" and its own
// name, so Kubernetes keeps the pod in its Service's endpoints) while "engine:kafka" turns NOT_SERVING, keeps
// accepting writes (their events wait in the transactional outbox), does not crash, reports the broker back
// once it listens on the same address again, and the events written during the outage then reach the topic.
const { engine, skipReason } = engineForSuite('kafka', startKafkaSync);

const CARD_HTML = (n: string) =>
  `<p>${n} ${Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ')} about brokers that come and go while the cards service keeps its writes in the outbox.</p>`;

describeOnEngine('engine loss on Kafka (cards alone, the broker halted and resumed)', skipReason, () => {
  const [grpcPort, deadPort] = freePortsSync(2) as [number, number];
  const address = `127.0.0.1:${grpcPort}`;
  const namespace = `engineloss-${randomUUID().slice(0, 8)}`;
  let service: ServiceProcess;
  let observer: KafkaEventBus | undefined;
  let subscription: Subscription | undefined;
  const probe = healthOf(address);
  const { client, channel } = createGrpcClient(cards.CardServiceDefinition, address, { deadlineMs: 15_000 });
  const author = randomUUID();
  const create = async (label: string) => (await client.createCard({ callerId: author, cardHtml: CARD_HTML(label), link: '', private: false, tags: [] })).card!.id;

  beforeAll(async () => {
    const nowhere = `127.0.0.1:${deadPort}`;
    service = startServiceProcess('cards', {
      KAFKA_BROKERS: engine!.brokers,
      KAFKA_NAMESPACE: namespace,
      CARDS_GRPC_HOST: '127.0.0.1',
      CARDS_GRPC_PORT: String(grpcPort),
      IDENTITY_SERVICE_ADDR: nowhere,
      SEARCH_SERVICE_ADDR: nowhere,
      FILES_SERVICE_ADDR: nowhere,
      NEAR_DUPLICATE_DEADLINE_MS: '500',
      ...FAST_READINESS,
    });
    await waitFor('cards SERVING', async () => (await probe.status()) === 'SERVING', 90_000, service);
  }, 120_000);

  afterAll(async () => {
    await subscription?.close();
    await observer?.close();
    channel.close();
    probe.channel.close();
    await service?.stop();
  }, 60_000);

  it('stays SERVING while the broker is gone (engine:kafka NOT_SERVING), keeps taking writes, and publishes them once the broker is back', async () => {
    expect(await probe.status('engine:kafka')).toBe('SERVING');
    const before = await create('before');

    await engine!.halt();
    const noticedMs = await waitFor('engine:kafka NOT_SERVING', async () => (await probe.status('engine:kafka')) === 'NOT_SERVING', 30_000, service);
    // Kafka does not gate requests: readiness, which decides whether the pod stays in rotation, is unchanged.
    expect(await probe.status('')).toBe('SERVING');
    expect(await probe.status('cards.v1.CardService')).toBe('SERVING');
    expect(await probe.status('liveness')).toBe('SERVING');
    report(`[engine loss] Kafka halted: engine:kafka NOT_SERVING after ${noticedMs} ms, cards still SERVING`);

    // The card and its event commit together in the outbox.
    const during = await create('during');
    expect((await client.getCard({ cardId: during, callerId: author })).id).toBe(during);
    expect(await probe.status('')).toBe('SERVING');

    const resumed = Date.now();
    engine!.resume();
    const backMs = await waitFor('engine:kafka SERVING again', async () => (await probe.status('engine:kafka')) === 'SERVING', 60_000, service);
    report(`[engine loss] Kafka resumed (listening after ${backMs === 0 ? 0 : Date.now() - resumed - backMs} ms): engine:kafka SERVING ${backMs} ms later`);
    expect(await probe.status('')).toBe('SERVING');
    const after = await create('after');

    // A new consumer group reads the topic from its beginning: every card's event is there, the outage's included.
    const seen = new Set<string>();
    observer = new KafkaEventBus({ brokers: [engine!.brokers], namespace, logger: createLogger('engine-loss-observer', 'warn') });
    subscription = await observer.subscribe({ group: 'engine-loss-observer', topics: [Topics.card], handler: async (event) => void seen.add(event.key) });
    await waitFor('the events of all three cards on the topic', () => [before, during, after].every((id) => seen.has(id)), 60_000, service);
    expect(service.child.exitCode).toBeNull();
    expect(service.output()).toContain('Kafka (KAFKA_BROKERS) is unreachable: still ready, engine:kafka NOT_SERVING until it answers again');
    expect(service.output()).toContain('Kafka (KAFKA_BROKERS) answers again');
  }, 180_000);
});
