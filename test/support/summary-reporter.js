// The closing "N passed, N failed, N skipped" line CI reads, from jest's real results.
// Under scripts/run-jest.mjs (pnpm test) the runner prints it: this reporter writes each test file's result to the
// runner's directory (RUN_JEST_RESULTS) as it comes and marks the run complete, so the line also counts what jest
// itself cannot report (a test file killed for hanging, a jest that crashed). A jest run on its own prints it here.
const { appendFileSync, writeFileSync, writeSync } = require('node:fs');
const { join } = require('node:path');

const skippedNames = (file) => file.testResults.filter((t) => t.status === 'pending' || t.status === 'todo').map((t) => t.fullName);

class SummaryReporter {
  constructor() {
    // A jest that a test starts inherits the variables: only the jest the runner started itself reports to it, and
    // the variable goes from this process's environment so that this jest's workers do not record their files there.
    if (process.env.RUN_JEST_RESULTS && String(process.ppid) !== process.env.RUN_JEST_RUNNER_PID) delete process.env.RUN_JEST_RESULTS;
    this.dir = process.env.RUN_JEST_RESULTS;
  }

  onTestFileResult(_test, file) {
    if (!this.dir) return;
    const result = {
      path: file.testFilePath,
      passed: file.numPassingTests,
      // A file that failed to run (did not compile, its worker died, an afterAll threw) is one failure, as jest counts it.
      failed: file.numFailingTests + (file.testExecError ? 1 : 0),
      skipped: file.numPendingTests + file.numTodoTests,
      skips: skippedNames(file),
    };
    appendFileSync(join(this.dir, 'results.jsonl'), `${JSON.stringify(result)}\n`);
  }

  onRunComplete(_contexts, results) {
    if (this.dir) {
      writeFileSync(join(this.dir, 'complete'), '');
      return;
    }
    const passed = results.numPassedTests;
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    // Every skipped test's name says why it was skipped; listing them keeps the reasons in CI's output.
    const skips = results.testResults.flatMap((file) => skippedNames(file).map((name) => `skipped: ${name}`));
    this.line = [...skips, `${passed} passed, ${failed} failed, ${skipped} skipped`].join('\n');
    // Written synchronously to fd 1: under --forceExit jest exits through exit-x, which replaces
    // process.stdout.write with a no-op before the 'exit' handlers run.
    process.on('exit', () => writeSync(1, `\n${this.line}\n`));
  }
}
module.exports = SummaryReporter;
