// The chart's Kafka security values (engines.kafka.tls, engines.kafka.sasl.*): rendered as the KAFKA_SSL and
// KAFKA_SASL_* variables the services read (packages/platform kafka-security.ts), the credentials from a Secret only.
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import { CHART_DIR, helmBinary, runHelm } from './helm';

const helm = helmBinary();
const describeWithHelm = 'path' in helm ? describe : describe.skip;
if (!('path' in helm)) console.warn(`SKIPPED chart Kafka security tests: ${helm.reason}`);
const CI_VALUES = join(CHART_DIR, 'ci-values.yaml');
const KAFKA_USERS = ['cards', 'search', 'files', 'notifications'];

function render(set: string[]): { status: number; stderr: string; env: Map<string, IEnvVar[]> } {
  const args = ['template', 'cards', CHART_DIR, '--namespace', 'cards', '--kube-version', '1.30.0', '-f', CI_VALUES, ...set.flatMap((s) => ['--set', s])];
  const result = runHelm('path' in helm ? helm.path : '', args);
  const env = new Map<string, IEnvVar[]>();
  if (result.status === 0) {
    for (const doc of parseAllDocuments(result.stdout).map((d) => d.toJS() as IDeployment & { kind: string })) {
      if (doc?.kind !== 'Deployment') continue;
      const component = doc.metadata!.labels!['app.kubernetes.io/component']!;
      env.set(component, doc.spec!.template.spec!.containers[0]!.env ?? []);
    }
  }
  return { status: result.status, stderr: result.stderr, env };
}

const kafkaSecurityEnv = (env: IEnvVar[] = []) => env.filter((e) => /^KAFKA_(SSL|SASL)/.test(e.name));

describeWithHelm('Helm chart: Kafka TLS and SASL', () => {
  it('sets nothing by default: plaintext, no authentication', () => {
    const { status, stderr, env } = render([]);
    expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
    for (const component of KAFKA_USERS) expect({ component, env: kafkaSecurityEnv(env.get(component)) }).toEqual({ component, env: [] });
  });

  it('renders KAFKA_SSL and the SASL mechanism on every Kafka user, username and password from the named Secret only', () => {
    const { status, stderr, env } = render(['engines.kafka.tls=true', 'engines.kafka.sasl.mechanism=scram-sha-512', 'engines.kafka.sasl.existingSecret=kafka-user', 'engines.kafka.sasl.passwordKey=pw']);
    expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
    expect(env.size).toBe(6);
    for (const [component, vars] of env) {
      const expected = KAFKA_USERS.includes(component)
        ? [
            { name: 'KAFKA_SSL', value: 'true' },
            { name: 'KAFKA_SASL_MECHANISM', value: 'scram-sha-512' },
            { name: 'KAFKA_SASL_USERNAME', valueFrom: { secretKeyRef: { name: 'kafka-user', key: 'username' } } },
            { name: 'KAFKA_SASL_PASSWORD', valueFrom: { secretKeyRef: { name: 'kafka-user', key: 'pw' } } },
          ]
        : [];
      expect({ component, env: kafkaSecurityEnv(vars) }).toEqual({ component, env: expected });
    }
  });

  it('fails clearly on a mechanism without its Secret, and the schema refuses unknown mechanisms', () => {
    const noSecret = render(['engines.kafka.sasl.mechanism=plain']);
    expect(noSecret.status).not.toBe(0);
    expect(noSecret.stderr).toContain('Kafka: engines.kafka.sasl.mechanism is plain: set engines.kafka.sasl.existingSecret, the Secret holding the username (key username) and password (key password)');
    const unknown = render(['engines.kafka.sasl.mechanism=gssapi', 'engines.kafka.sasl.existingSecret=kafka-user']);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toMatch(/engines\/kafka\/sasl\/mechanism/);
    const plainPassword = render(['engines.kafka.sasl.password=hunter2']);
    expect(plainPassword.status).not.toBe(0);
    expect(plainPassword.stderr).toMatch(/additional properties 'password' not allowed|password/);
  });
});
