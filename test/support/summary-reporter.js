// Prints the closing "N passed, N failed, N skipped" line CI reads, from jest's real results.
// Extra checks run before jest (proto freshness, type-check) are added from CHECK_RESULTS.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    let passed = results.numPassedTests;
    let failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    const extra = process.env.CHECK_RESULTS ? JSON.parse(process.env.CHECK_RESULTS) : [];
    for (const check of extra) {
      if (check.ok) passed++;
      else failed++;
    }
    // Every skipped test's name says why it was skipped; listing them keeps the reasons in CI's output.
    const skips = results.testResults.flatMap((file) => file.testResults.filter((t) => t.status === 'pending' || t.status === 'todo').map((t) => `skipped: ${t.fullName}`));
    this.line = [...skips, `${passed} passed, ${failed} failed, ${skipped} skipped`].join('\n');
    // Written synchronously to fd 1: under --forceExit jest exits through exit-x, which replaces
    // process.stdout.write with a no-op before the 'exit' handlers run.
    process.on('exit', () => require('node:fs').writeSync(1, `\n${this.line}\n`));
  }
}
module.exports = SummaryReporter;
