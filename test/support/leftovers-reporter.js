// Jest reporter: names what the run left in the temporary directory — entries made during the run, named like
// mkdtemp's (<prefix>XXXXXX), still there at its end — on one warning line before the closing summary (which stays
// the last line). Tests make such directories with testTempDir (test/support/cleanup.ts), removed when their file ends;
// a name here is a test that made one another way, or a child that outlived its file. Another run on the same machine
// at the same time can add names of its own.
const { readdirSync } = require('node:fs');
const { tmpdir } = require('node:os');

const MKDTEMP_NAME = /^[A-Za-z][\w.-]*-[A-Za-z0-9]{6}$/;
const SHOWN = 20;

function entries(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

class LeftoversReporter {
  constructor() {
    this.dir = tmpdir();
    this.before = new Set(entries(this.dir));
  }

  onRunComplete() {
    const left = entries(this.dir).filter((name) => !this.before.has(name) && MKDTEMP_NAME.test(name)).sort();
    if (left.length === 0) return;
    const shown = left.slice(0, SHOWN).join(', ') + (left.length > SHOWN ? `, … ${left.length - SHOWN} more` : '');
    process.stdout.write(`\nwarning: ${left.length} temporary ${left.length === 1 ? 'entry' : 'entries'} made during this run left in ${this.dir}: ${shown} (make test directories with testTempDir of test/support/cleanup.ts)\n`);
  }
}
module.exports = LeftoversReporter;
