import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
    },
  },
  {
    // The model is the pure middle of the flow: no I/O, no clients, nothing from the regions above it.
    files: ['src/model/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^node:(?!crypto$)',
              message: 'src/model does no I/O; do it in an adapter outside the model.',
            },
            {
              regex: '^(@kubernetes/|@grpc/|pino$|prom-client$|write-file-atomic$|fast-xml-parser$)',
              message: 'src/model does no I/O; do it in an adapter outside the model.',
            },
            {
              regex: '^(\\.\\./)+(node|fleet|controllers|tools|local-cluster|cli|process)/',
              message: 'src/model imports only itself, kube/types and errors.ts.',
            },
            { regex: '^(\\.\\./)+kube/(?!types/)', message: 'src/model imports only kube/types of kube/.' },
          ],
        },
      ],
    },
  },
  {
    // node:test's describe/it return promises the runner itself awaits.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false },
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly' },
    },
  },
);
