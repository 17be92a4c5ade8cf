// Flat config: ESLint recommended + typescript-eslint recommended, over the CDK app and its tests.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'cdk.out/**', '.venv/**', '**/*.js', '**/*.mjs', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['cdk/**/*.ts', 'tests/cdk/**/*.ts'],
    rules: {
      'no-new': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/explicit-function-return-type': ['error', { allowExpressions: true }],
    },
  },
  {
    // Tests walk synthesized CloudFormation JSON, which has no static type.
    files: ['tests/cdk/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
