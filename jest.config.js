/** jest over tests/cdk only (the Python tiers run under pytest). Type checking is `npm run lint`. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests/cdk'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true, diagnostics: false }],
  },
  testTimeout: 120000,
};
