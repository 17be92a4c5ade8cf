/** jest over tests/cdk only (the Python tiers run under pytest). Type checking is `npm run lint`. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests/cdk'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true, diagnostics: false }],
  },
  testTimeout: 120000,
  // Synthesized assemblies go to a private TMPDIR, removed after the run (tests/cdk/tmpdir-setup.js).
  globalSetup: '<rootDir>/tests/cdk/tmpdir-setup.js',
  globalTeardown: '<rootDir>/tests/cdk/tmpdir-teardown.js',
};
