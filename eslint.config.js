import js from '@eslint/js'
import globals from 'globals'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.bench/', 'docs/api/', 'test-artifacts/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-restricted-imports': 'off',
    },
  },
  {
    // A promise nobody awaits loses its rejection (an unhandled rejection ends the process),
    // and one handed where a callback's result is ignored does the same: both are bugs here.
    files: ['**/*.ts'],
    ignores: ['scripts/package-smoke/**'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // A Koa or Hono listener returned as a node:http RequestListener handles its own promise.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { returns: false } }] },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The core speaks plain objects: no framework and no node:http server API.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['express', 'koa', 'node:http', 'node:https', 'http', 'https'].map((name) => ({ name, message: 'The core imports no framework or server API; that belongs in adapters/.' })),
      }],
    },
  },
)
