// The chart's alerting rules (metrics.prometheusRule, templates/prometheusrule.yaml): rendered only when enabled, every
// expr valid PromQL (the Prometheus project's own grammar, @prometheus-io/lezer-promql), every metric it reads one the
// code exports (names collected from the sources, so renaming a metric fails here), every alert with a runbook section
// in docs/deploy.md.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parser } from '@prometheus-io/lezer-promql';
import { CHART_DIR, helmBinary, ROOT, runHelm } from './helm';

const CI_VALUES = join(CHART_DIR, 'ci-values.yaml');

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; spec?: { groups: { name: string; rules: AlertRule[] }[] } };

const helm = helmBinary();
const describeWithHelm = 'path' in helm ? describe : describe.skip;
if (!('path' in helm)) console.warn(`SKIPPED PrometheusRule tests: ${helm.reason}`);

function template(args: string[]): K8sObject[] {
  const result = runHelm('path' in helm ? helm.path : '', ['template', 'cards', CHART_DIR, '--namespace', 'cards', '--kube-version', '1.30.0', '-f', CI_VALUES, ...args]);
  if (result.status !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  return parseAllDocuments(result.stdout)
    .map((d) => d.toJS() as K8sObject)
    .filter(Boolean);
}

function rulesOf(objects: K8sObject[]): AlertRule[] {
  const rules = objects.filter((o) => o.kind === 'PrometheusRule');
  expect(rules).toHaveLength(1);
  return rules[0]!.spec!.groups.flatMap((g) => g.rules);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/**
 * The metric names the services export, read from their sources (packages/<p>/src, services/<s>/src): serviceCounter(
 * and sampledGauge( of @cards/platform, and prom-client's new Counter/Gauge/Histogram/Summary({ name: … }) (a `${PREFIX}`
 * resolved from the file's `const PREFIX = '…'`); a histogram's or summary's series are <name>_bucket|_sum|_count.
 */
function exportedMetricNames(): Set<string> {
  const names = new Set<string>();
  const dirs = ['packages', 'services'].flatMap((top) => readdirSync(join(ROOT, top)).map((name) => join(ROOT, top, name, 'src')));
  for (const file of dirs.filter((dir) => statSync(dir, { throwIfNoEntry: false })?.isDirectory()).flatMap(sourceFiles)) {
    const text = readFileSync(file, 'utf8');
    const prefix = /const PREFIX = '([a-z_]+)'/.exec(text)?.[1] ?? '';
    const literal = (raw: string) => raw.replace('${PREFIX}', prefix);
    for (const m of text.matchAll(/\b(?:serviceCounter|sampledGauge)\(\s*['`]([^'`]+)['`]/g)) names.add(literal(m[1]!));
    for (const m of text.matchAll(/new (Counter|Gauge|Histogram|Summary)\(\{\s*name:\s*['`]([^'`]+)['`]/g)) {
      const name = literal(m[2]!);
      if (m[1] === 'Histogram' || m[1] === 'Summary') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
      else names.add(name);
    }
  }
  return names;
}

/** Parses a PromQL expression: its syntax errors (with where they start) and the metric names its selectors read. */
function parsePromQL(expr: string): { errors: string[]; metrics: string[] } {
  const errors: string[] = [];
  const metrics: string[] = [];
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError) errors.push(`syntax error at ${node.from}: ${JSON.stringify(expr.slice(node.from, node.from + 20))}`);
      if (node.name === 'VectorSelector') {
        const name = node.node.getChild('Identifier');
        if (name) metrics.push(expr.slice(name.from, name.to));
      }
    },
  });
  return { errors, metrics };
}

const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');

describe('the PromQL check itself', () => {
  it('finds syntax errors, unknown functions and the metric names of selectors', () => {
    expect(parsePromQL('sum by (group) (increase(card_library_events_handled_total{outcome="dead_letter"}[15m])) > 0')).toEqual({ errors: [], metrics: ['card_library_events_handled_total'] });
    expect(parsePromQL('sum(rate(x_total[5m]) > 0').errors).not.toEqual([]);
    expect(parsePromQL('rate(x_total{a="b"[5m])').errors).not.toEqual([]);
    expect(parsePromQL('no_such_function(x_total[5m])').errors).not.toEqual([]);
  });

  it('collects the metric names of the code, histograms with their series', () => {
    const names = exportedMetricNames();
    for (const name of ['grpc_server_handled_total', 'card_library_events_handled_total', 'card_library_event_consumer_lag', 'card_library_rate_limited_total', 'http_request_duration_seconds_count', 'cards_data_dir_free_bytes', 'card_library_engine_unreachable']) {
      expect(names).toContain(name);
    }
  });
});

describeWithHelm('Helm chart deploy/k8s: metrics.prometheusRule', () => {
  let rules: AlertRule[];
  beforeAll(() => {
    rules = rulesOf(template(['--set', 'metrics.prometheusRule.enabled=true']));
  });

  it('renders no PrometheusRule by default, one when enabled with the labels Prometheus selects it by', () => {
    expect(template([]).filter((o) => o.kind === 'PrometheusRule')).toEqual([]);
    const objects = template(['--set', 'metrics.prometheusRule.enabled=true,metrics.prometheusRule.labels.release=kube-prometheus-stack']);
    const rule = objects.find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(rule.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack', 'app.kubernetes.io/instance': 'cards' });
  });

  it('alerts on what needs a human', () => {
    expect(rules.map((r) => r.alert).sort()).toEqual(
      [
        'CardLibraryBackgroundEngineUnreachable',
        'CardLibraryConsumerLagGrowing',
        'CardLibraryConsumerStuck',
        'CardLibraryDataDirAlmostFull',
        'CardLibraryEngineUnreachable',
        'CardLibraryEventsDeadLettered',
        'CardLibraryGatewayHttpErrors',
        'CardLibraryGrpcErrors',
        'CardLibraryIngestionFailures',
        'CardLibraryMailFailures',
        'CardLibraryRateLimitedSpike',
        'CardLibrarySearchIndexRebuildRequested',
        'CardLibraryVerificationQueueStuck',
      ].sort(),
    );
    expect(rules.find((r) => r.alert === 'CardLibraryRateLimitedSpike')!.labels.severity).toBe('info');
  });

  it("groups the data dir alert by the gauge's own label, process (which process: never a path), and names it", () => {
    const rule = rules.find((r) => r.alert === 'CardLibraryDataDirAlmostFull')!;
    expect(rule.expr).toMatch(/^min by \(namespace, pod, process\) \(cards_data_dir_free_bytes\{/);
    expect(rule.annotations.description).toContain('{{ $labels.process }}');
    expect(rule.annotations.description).not.toContain('data_dir');
    expect(readFileSync(join(ROOT, 'packages/platform/src/data-dir-space.ts'), 'utf8')).toMatch(/sampledGauge\('cards_data_dir_free_bytes',.*\['process'\]\);/);
  });

  it('writes every expr as valid PromQL', () => {
    for (const rule of rules) expect({ alert: rule.alert, errors: parsePromQL(rule.expr).errors }).toEqual({ alert: rule.alert, errors: [] });
  });

  it('reads only metrics the code exports, each selector limited to the release namespace', () => {
    const exported = exportedMetricNames();
    for (const rule of rules) {
      const { metrics } = parsePromQL(rule.expr);
      expect(metrics.length).toBeGreaterThan(0);
      expect({ alert: rule.alert, unknown: metrics.filter((name) => !exported.has(name)) }).toEqual({ alert: rule.alert, unknown: [] });
      expect(rule.expr.match(/\{[^}]*\}/g)).toHaveLength(metrics.length);
      for (const matchers of rule.expr.match(/\{[^}]*\}/g)!) expect(matchers).toContain('namespace="cards"');
    }
  });

  it('gives every alert a severity, a summary and a description naming its runbook section in docs/deploy.md', () => {
    const alerts = docs.slice(docs.indexOf('\n## Alerts\n'));
    expect(docs.indexOf('\n## Alerts\n')).toBeGreaterThan(-1);
    for (const rule of rules) {
      expect(['critical', 'warning', 'info']).toContain(rule.labels.severity);
      expect(rule.annotations.summary).toBeTruthy();
      expect(rule.annotations.description).toContain(`docs/deploy.md, "Alerts" > ${rule.alert} (#${rule.alert.toLowerCase()})`);
      expect(alerts).toContain(`\n### ${rule.alert}\n`);
    }
  });

  it('takes each alert\'s settings, the selector, extra alert labels and a runbook base from values', () => {
    const tuned = rulesOf(
      template([
        '--set',
        [
          'metrics.prometheusRule.enabled=true',
          'metrics.prometheusRule.rules.deadLetters.enabled=false',
          'metrics.prometheusRule.rules.consumerStuck.for=30m',
          'metrics.prometheusRule.rules.consumerStuck.threshold=900',
          'metrics.prometheusRule.rules.gatewayHttpErrors.severity=page',
          'metrics.prometheusRule.rules.gatewayHttpErrors.window=15m',
          'metrics.prometheusRule.alertLabels.team=cards',
          'metrics.prometheusRule.runbookBaseUrl=https://git.example.com/cards/docs/deploy.md',
        ].join(','),
        '--set-string',
        'metrics.prometheusRule.selector=job=~"cards-card-library-.*"',
      ]),
    );
    const byName = new Map(tuned.map((r) => [r.alert, r]));
    expect(byName.has('CardLibraryEventsDeadLettered')).toBe(false);
    expect(byName.get('CardLibraryConsumerStuck')).toMatchObject({ for: '30m', expr: 'max by (namespace, group, topic) (card_library_event_consumer_oldest_unhandled_seconds{job=~"cards-card-library-.*"}) > 900' });
    const gateway = byName.get('CardLibraryGatewayHttpErrors')!;
    expect(gateway.labels).toEqual({ severity: 'page', team: 'cards' });
    expect(gateway.expr).toContain('[15m]');
    expect(gateway.annotations.runbook_url).toBe('https://git.example.com/cards/docs/deploy.md#cardlibrarygatewayhttperrors');
    for (const rule of tuned) expect(parsePromQL(rule.expr).errors).toEqual([]);
  });

  it('refuses a selector with braces, a duration that is not one, an unknown rule and a setting its rule does not take', () => {
    const render = (set: string) => runHelm('path' in helm ? helm.path : '', ['template', 'cards', CHART_DIR, '-f', CI_VALUES, '--set', `metrics.prometheusRule.enabled=true,${set}`]);
    const refused = [
      'metrics.prometheusRule.selector=a{b}',
      'metrics.prometheusRule.rules.consumerStuck.for=ten minutes',
      'metrics.prometheusRule.rules.nosuchRule.enabled=true',
      // dataDirAlmostFull takes thresholdMiB: a threshold would be ignored without a word.
      'metrics.prometheusRule.rules.dataDirAlmostFull.threshold=1024',
      'metrics.prometheusRule.rules.engineUnreachable.window=5m',
    ];
    for (const set of refused) {
      const result = render(set);
      expect(result.status).not.toBe(0);
      expect(result.stderr).toMatch(/values don't meet the specifications of the schema/);
    }
  });
});
