/** One jest run over every package: unit and contract suites beside each service, end-to-end suites in test/. */
const swc = ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }];

module.exports = {
  // node's, plus the end-of-file cleanup of what test/support/cleanup.ts registered (children, temporary directories)
  testEnvironment: '<rootDir>/test/support/test-environment.js',
  transform: { '^.+\\.(t|j)sx?$': swc },
  transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/)?(unpdf|@cards))'],
  testMatch: ['<rootDir>/packages/*/test/**/*.test.ts', '<rootDir>/services/*/test/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/test/engines/cache/'],
  testTimeout: 60_000,
  reporters: ['default', '<rootDir>/test/engines/engines-reporter.js', '<rootDir>/test/support/leftovers-reporter.js', '<rootDir>/test/support/summary-reporter.js'],
};
