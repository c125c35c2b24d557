// Jest reporter: after the run, one line per engine of the engines layer (test/engines) saying whether
// its suites ran and how many of their tests passed, so CI output answers "did Kafka/MongoDB/Elasticsearch
// really run?" without reading the whole log. Suites are recognised by their top-level describe titles.
const ENGINES = [
  { name: 'kafka (KRaft broker from Maven Central)', match: /kafka/i },
  { name: 'mongodb protocol (mongo-java-server)', match: /mongo/i },
  { name: 'elasticsearch (Maven Central node)', match: /elasticsearch/i },
];
const ENGINE_SUITE = /contract|engine capabilities|specifics|connectMongo|on MongoDB|engine loss/i;

class EnginesReporter {
  onRunComplete(_contexts, results) {
    const rows = ENGINES.map((e) => ({ ...e, passed: 0, failed: 0, skipped: 0, reasons: new Set(), suites: new Map() }));
    for (const file of results.testResults) {
      for (const t of file.testResults) {
        const top = t.ancestorTitles[0] ?? '';
        if (!ENGINE_SUITE.test(top) || /sqlite|embedded/i.test(top)) continue;
        const row = rows.find((r) => r.match.test(top));
        if (!row) continue;
        const [suite, titleReason] = top.split(' — skipped: ');
        const counts = row.suites.get(suite) ?? { passed: 0, failed: 0, skipped: 0, reason: undefined };
        if (t.status === 'passed') {
          row.passed++;
          counts.passed++;
        } else if (t.status === 'failed') {
          row.failed++;
          counts.failed++;
        } else {
          row.skipped++;
          counts.skipped++;
          counts.reason ??= titleReason ?? t.title.replace(/^skipped:\s*/i, '');
          row.reasons.add(counts.reason);
        }
        row.suites.set(suite, counts);
      }
    }
    const lines = ['', 'Engines layer (test/engines; ENGINES=off turns it off):'];
    for (const r of rows) {
      const total = r.passed + r.failed + r.skipped;
      let state;
      if (total === 0) state = 'not run (no engine suite selected)';
      else if (r.passed + r.failed === 0) state = `skipped: ${[...r.reasons].join('; ') || 'no reason given'}`;
      else state = `ran: ${r.passed} passed, ${r.failed} failed${r.skipped ? `, ${r.skipped} skipped` : ''}`;
      lines.push(`  ${r.name}: ${state}`);
      if (r.passed + r.failed > 0) {
        for (const [suite, c] of r.suites) {
          lines.push(c.passed + c.failed > 0 ? `    ${suite}: ${c.passed} of ${c.passed + c.failed + c.skipped} passed` : `    ${suite}: skipped: ${c.reason}`);
        }
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
module.exports = EnginesReporter;
