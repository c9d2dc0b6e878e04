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
