// Offline checks of docker-compose.yaml and the Dockerfile (no container runtime here, so neither can be
// built or started in this suite): the compose file wires every service the way its config.ts expects,
// and the Dockerfile's per-service images never carry the build toolchain and never run as root.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from './helm';
import { COMPONENTS, wiringProblems } from './service-config';

interface ComposeService {
  image?: string;
  build?: { context: string; target: string };
  environment?: Record<string, string | number>;
  ports?: string[];
  volumes?: string[];
  tmpfs?: string[];
  read_only?: boolean;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
}

const compose = parse(readFileSync(join(ROOT, 'docker-compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService>; volumes: Record<string, unknown> };
const services = compose.services;
const env = (name: string) => Object.fromEntries(Object.entries(services[name]?.environment ?? {}).map(([k, v]) => [k, String(v)]));

interface Stage {
  name: string;
  from: string;
  lines: string[];
}

/** Stages of the Dockerfile: `FROM <image|stage> AS <name>` followed by its instructions. */
function dockerStages(): Stage[] {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const stages: Stage[] = [];
  for (const line of text.split('\n')) {
    const from = /^FROM\s+(\S+)\s+AS\s+(\S+)/i.exec(line);
    if (from) stages.push({ name: from[2]!, from: from[1]!, lines: [] });
    else stages.at(-1)?.lines.push(line);
  }
  return stages;
}

describe('docker-compose.yaml (offline)', () => {
  it('runs every service in its own container built from its Dockerfile target, on MongoDB, Elasticsearch, Kafka and MinIO', () => {
    const targets = new Set(dockerStages().map((s) => s.name));
    for (const component of COMPONENTS) {
      expect(services[component]?.build).toEqual({ context: '.', target: component });
      expect(targets.has(component)).toBe(true);
    }
    for (const engine of ['mongodb', 'elasticsearch', 'kafka', 'minio']) expect(services[engine]?.image).toBeDefined();
  });

  it('pins every third-party image to a release: no latest, no bare name', () => {
    const thirdParty = Object.entries(services).filter(([, s]) => !s.build && s.image);
    expect(thirdParty.map(([name]) => name).sort()).toEqual(['elasticsearch', 'kafka', 'mailpit', 'minio', 'mongodb']);
    for (const [name, service] of thirdParty) {
      const tag = /:([^/:]+)$/.exec(service.image!)?.[1];
      // A version carries a digit; latest, edge or a missing tag follow whatever is pushed next.
      expect({ name, tag }).toEqual({ name, tag: expect.stringMatching(/\d/) });
    }
  });

  it('gives each service a metrics listener on all interfaces of the compose network, published nowhere (the gateway too: its published port has no /metrics)', () => {
    for (const component of COMPONENTS) {
      const port = env(component).METRICS_PORT;
      expect({ component, port: Number(port) > 0, host: env(component).METRICS_HOST }).toEqual({ component, port: true, host: '0.0.0.0' });
      expect((services[component]?.ports ?? []).map(String).filter((p) => p.includes(String(port)))).toEqual([]);
    }
  });

  it('publishes only the gateway (8090), plus the local mail catcher bound to 127.0.0.1', () => {
    const published = Object.entries(services).flatMap(([name, s]) => (s.ports ?? []).map((p) => `${name} ${p}`));
    expect(published.filter((p) => !p.startsWith('mailpit '))).toEqual(['gateway 8090:8090']);
    for (const p of published.filter((p) => p.startsWith('mailpit '))) expect(p).toMatch(/^mailpit 127\.0\.0\.1:/);
  });

  it('gives every container a healthcheck and starts each service only after the engines and peers it needs are healthy', () => {
    for (const service of Object.values(services)) expect(service.healthcheck?.test?.length).toBeGreaterThan(0);
    const needs: Record<string, string[]> = {
      identity: ['mongodb'],
      cards: ['mongodb', 'kafka'],
      search: ['mongodb', 'elasticsearch', 'kafka'],
      files: ['mongodb', 'minio', 'kafka'],
      notifications: ['mongodb', 'kafka'],
      gateway: ['mongodb', 'identity', 'cards', 'search', 'files', 'notifications'],
    };
    for (const [component, dependencies] of Object.entries(needs)) {
      for (const dependency of dependencies) expect(services[component]?.depends_on?.[dependency]).toEqual({ condition: 'service_healthy' });
    }
    for (const component of COMPONENTS.filter((c) => c !== 'gateway')) {
      const port = env(component)[`${component.toUpperCase()}_GRPC_PORT`];
      expect(services[component]?.healthcheck?.test).toEqual(['CMD', 'node', '/usr/local/lib/grpc-health.cjs', port, 'liveness']);
    }
    // The gateway's: the image's /livez check, which asks the metrics listener this file turns on (METRICS_PORT), not
    // 8090, where a connection flood is refused probes included (grpc-health-probe.test.ts runs it against one).
    expect(services.gateway?.healthcheck?.test).toEqual(['CMD', 'node', '/usr/local/lib/livez.cjs']);
    expect(Number(env('gateway').METRICS_PORT)).toBeGreaterThan(0);
  });

  it('runs the services read-only with a tmpfs /tmp and a volume for DATA_DIR', () => {
    for (const component of COMPONENTS) {
      const service = services[component]!;
      expect(service.read_only).toBe(true);
      expect(service.tmpfs).toContain('/tmp');
      const dataDir = env(component).DATA_DIR;
      const volume = (service.volumes ?? []).find((v) => v.endsWith(`:${dataDir}`));
      expect(volume).toBeDefined();
      expect(Object.keys(compose.volumes)).toContain(volume!.split(':')[0]);
    }
  });

  it('sets exactly the engine, peer and credential variables each service reads (checked against its config.ts)', () => {
    const setOn = (component: string) => new Set(Object.keys(env(component)));
    // JWT_SECRET: identity generates one into its volume when unset (documented in the compose file).
    expect(wiringProblems(setOn, 'docker-compose.yaml', new Set(['JWT_SECRET']))).toEqual([]);
  });

  it('points peer and engine addresses at containers that exist, on the ports they listen on', () => {
    for (const component of COMPONENTS) {
      for (const [name, value] of Object.entries(env(component))) {
        const peer = /^([A-Z]+)_SERVICE_ADDR$/.exec(name)?.[1]?.toLowerCase();
        if (peer) expect(value).toBe(`${peer}:${env(peer)[`${peer.toUpperCase()}_GRPC_PORT`]}`);
      }
    }
    expect(env('gateway').FILES_HTTP_ADDR).toBe(`files:${env('files').FILES_HTTP_PORT}`);
    expect(env('gateway').FILES_INTERNAL_TOKEN).toBe(env('files').FILES_INTERNAL_TOKEN);
    expect(env('gateway').PORT).toBe('8090');
    for (const component of ['gateway', 'identity', 'cards', 'search', 'files', 'notifications']) expect(new URL(env(component).MONGO_URL!).hostname).toBe('mongodb');
    for (const component of ['cards', 'search', 'files', 'notifications']) expect(env(component).KAFKA_BROKERS).toBe('kafka:9092');
    expect(new URL(env('search').ELASTICSEARCH_URL!).hostname).toBe('elasticsearch');
    expect(new URL(env('files').S3_ENDPOINT!).hostname).toBe('minio');
    expect(services.kafka?.environment?.KAFKA_ADVERTISED_LISTENERS).toBe('PLAINTEXT://kafka:9092');
    expect(services.kafka?.environment?.KAFKA_PROCESS_ROLES).toBe('broker,controller');
  });
});

describe('Dockerfile (offline)', () => {
  const stages = dockerStages();
  const byName = new Map(stages.map((s) => [s.name, s]));
  const chain = (name: string): Stage[] => {
    const stage = byName.get(name);
    return stage ? [stage, ...chain(stage.from)] : [];
  };

  it('has a target per service plus all-in-one, each on a slim Node 20 base, as a non-root user, with a start command', () => {
    for (const target of [...COMPONENTS, 'all-in-one']) {
      const ancestry = chain(target);
      expect(ancestry.length).toBeGreaterThan(0);
      const base = ancestry.at(-1)!.from;
      expect(base === '${NODE_IMAGE}' ? /ARG NODE_IMAGE=node:20[\w.-]*-slim/.test(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')) : /^node:20[\w.-]*-slim$/.test(base)).toBe(true);
      const lines = ancestry.flatMap((s) => s.lines);
      // By number (uid:gid), not name: Kubernetes' runAsNonRoot can verify only a numeric user.
      const user = lines.filter((l) => /^USER\s/.test(l)).at(0);
      expect(user).toMatch(/^USER\s+[1-9]\d*:[1-9]\d*$/);
      expect(lines.some((l) => /^CMD\s/.test(l))).toBe(true);
    }
  });

  it('builds every stage on one exact Node release of the major the tests run on, and pnpm at the packageManager version', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const base = /^ARG NODE_IMAGE=node:(\d+)\.(\d+)\.(\d+)-[\w-]*slim$/m.exec(dockerfile);
    expect(base).not.toBeNull();
    expect(`v${base![1]}`).toBe(process.version.split('.')[0]);
    for (const stage of stages.filter((s) => !byName.has(s.from))) expect(stage.from).toBe('${NODE_IMAGE}');
    const packageManager = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { packageManager: string }).packageManager;
    expect(dockerfile).toContain(`npm install -g ${packageManager} `);
  });

  it('keeps the build toolchain out of the runtime images and installs from the lockfile', () => {
    const build = stages.filter((s) => s.lines.some((l) => /apt-get install.*\bg\+\+/.test(l)));
    expect(build.length).toBeGreaterThan(0);
    for (const target of [...COMPONENTS, 'all-in-one']) {
      for (const ancestor of chain(target)) expect(build.map((b) => b.name)).not.toContain(ancestor.name);
    }
    expect(stages.flatMap((s) => s.lines).some((l) => /pnpm install --frozen-lockfile/.test(l))).toBe(true);
  });

  it('keeps the word-vector cache of the images that build it on the /data volume, which the non-root user owns', () => {
    for (const target of ['search', 'all-in-one']) {
      const envLine = chain(target).flatMap((s) => s.lines).filter((l) => l.startsWith('ENV ')).join(' ');
      expect({ target, cache: / WORD_VECTORS_CACHE_DIR=(\S+)/.exec(envLine)?.[1] }).toEqual({ target, cache: '/data/word-vectors' });
      expect(envLine).toMatch(/ DATA_DIR=\/data\b/);
    }
    const user = /^USER\s+(\S+)$/m.exec(byName.get('runtime')!.lines.join('\n'))![1];
    expect(byName.get('runtime')!.lines.join('\n')).toContain(`chown ${user} /data`);
  });

  it('leaves no package manager in the runtime images (npm, npx, corepack, yarn), only node and tsx', () => {
    const runs = byName.get('runtime')!.lines.filter((l) => /^RUN\s/.test(l)).join(' ');
    const install = runs.indexOf('npm install -g "tsx@');
    expect(install).toBeGreaterThanOrEqual(0);
    const removal = /rm -rf ([^&]*)/.exec(runs.slice(install));
    const removed = removal?.[1]!.split(/\s+/) ?? [];
    for (const path of ['/usr/local/lib/node_modules/npm', '/usr/local/lib/node_modules/corepack', '/opt/yarn-v*', '/usr/local/bin/npm', '/usr/local/bin/npx', '/usr/local/bin/corepack', '/usr/local/bin/yarn', '/usr/local/bin/yarnpkg']) {
      expect(removed).toContain(path);
    }
    expect(removed.some((path) => path.includes('tsx'))).toBe(false);
    // nothing after the runtime stage's base layer calls a package manager
    for (const target of [...COMPONENTS, 'all-in-one']) {
      for (const line of byName.get(target)!.lines) expect(line).not.toMatch(/\b(npm|npx|yarn|corepack)\b/);
    }
  });

  it('copies each service its own pruned tree and listens on all interfaces', () => {
    for (const component of COMPONENTS) {
      const lines = byName.get(component)!.lines;
      expect(lines).toContainEqual(`COPY --from=build /out/${component} /app`);
      const envLine = lines.find((l) => l.startsWith('ENV ')) ?? '';
      expect(envLine).toMatch(component === 'gateway' ? /HOST=0\.0\.0\.0/ : new RegExp(`${component.toUpperCase()}_GRPC_HOST=0\\.0\\.0\\.0`));
      // METRICS_PORT alone (docker run -e) opens a service's metrics listener where it can be reached.
      expect(envLine).toMatch(/ METRICS_HOST=0\.0\.0\.0\b/);
    }
  });

  it("serves the gateway's and the all-in-one's /metrics on a port of its own, not on the published PORT", () => {
    for (const target of ['gateway', 'all-in-one']) {
      const envLine = byName.get(target)!.lines.filter((l) => l.startsWith('ENV ')).join(' ');
      const env = Object.fromEntries([...envLine.matchAll(/ (\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
      expect({ target, port: env.PORT, metricsPort: env.METRICS_PORT, metricsHost: env.METRICS_HOST }).toEqual({ target, port: '8090', metricsPort: '9464', metricsHost: '0.0.0.0' });
      expect({ target, exposed: byName.get(target)!.lines.find((l) => l.startsWith('EXPOSE ')) }).toEqual({ target, exposed: 'EXPOSE 8090 9464' });
    }
  });

  it('checks the health of the gateway (GET /livez) and the all-in-one (GET /healthz, readiness) on that metrics listener (livez.cjs), outside HTTP_MAX_CONNECTIONS', () => {
    for (const [target, command] of [
      ['gateway', 'node /usr/local/lib/livez.cjs'],
      ['all-in-one', 'node /usr/local/lib/livez.cjs /healthz'],
    ]) {
      const check = byName.get(target!)!.lines.find((l) => l.startsWith('HEALTHCHECK '));
      expect({ target, command: /\sCMD\s+(.*)$/.exec(check ?? '')?.[1] }).toEqual({ target, command });
    }
    expect(byName.get('runtime')!.lines).toContain("COPY <<'EOF' /usr/local/lib/livez.cjs");
  });
});
