// ESLint with typescript-eslint's type-checked rules over every TypeScript
// file of the repository. The rules kept are the ones that find bugs the
// compiler lets through (a floating promise in a server is a lost error);
// rules that only restyle code are off.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/dist/', '**/node_modules/', 'var/', 'data/', 'bench/results/'],
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: {
        // Every linted file belongs to one of these, so each is type-checked
        // with the options it is compiled with.
        project: [
          './tsconfig.json',
          './console/tsconfig.json',
          './console/tsconfig.config.json',
          './packages/client/tsconfig.json',
          './packages/client/test/tsconfig.json',
        ],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's test() and describe() return promises that the runner
          // itself awaits and reports.
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // Restyling only: a redundant assertion or an async function without
      // an await is harmless (and the latter is how a function rejects
      // instead of throwing, or implements an async interface).
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/require-await': 'off',
      // Templates here format numbers and log fields; String() around each adds nothing.
      '@typescript-eslint/restrict-template-expressions': 'off',
      // An empty catch is how a best-effort step says "whatever happens, go on"; the reason is beside it.
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    // Tests read parsed JSON answers as they come; their assertions are the type check.
    files: ['test/**/*.ts', 'packages/client/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // This file and any other plain JavaScript: no types to check.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly' },
    },
  },
);
