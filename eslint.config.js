// Lint rules that guard correctness rather than taste (Prettier owns formatting).
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'fs',
  'path',
  'os',
  'crypto',
  'http',
  'https',
  'net',
  'child_process',
  'worker_threads',
  'stream',
  'timers',
  'process',
  'url',
  'util',
  'events',
  'dns',
  'zlib',
  'readline',
  'perf_hooks',
  'cluster',
  'dgram',
  'tls',
  'v8',
  'vm',
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tools/**', '.pixelmill/**', 'out/**', 'bin/**', 'scripts/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Each emulator states its provider's wire format on its own: sharing the client's or an
    // adapter's definitions would make it agree with them by construction, so it could not catch
    // their mistakes. A regex, so that every depth is covered (emulator/apimart/routes/ is 3 deep).
    files: ['emulator/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(api|providers)(/|$)',
              message:
                "The emulators must not import the client (api/) or the adapters (providers/); state the wire format in the provider's folder (emulator/apimart/wire.ts, emulator/fal/wire.ts, ...).",
            },
          ],
        },
      ],
    },
  },
  {
    // Workflow code is replayed: it must be deterministic and run inside Temporal's sandbox.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins
              .flatMap((name) => [name, `node:${name}`])
              .map((name) => ({
                name,
                message: 'Workflow code must not use Node built-ins; do it in an activity.',
              })),
            { name: 'undici', message: 'Workflow code must not do I/O; do it in an activity.' },
            { name: '@temporalio/activity', message: 'Workflows call activities through proxyActivities.' },
            { name: '@temporalio/client', message: 'Workflows must not use the client.' },
            { name: '@temporalio/worker', message: 'Workflows must not import the worker.' },
          ],
          patterns: [
            {
              group: ['../activities/*', '../activities'],
              allowTypeImports: true,
              message: 'Import activities as types only.',
            },
            {
              group: ['../api/*', '../emulator/*', '../worker/*', '../client/*'],
              allowTypeImports: true,
              message: 'Workflow code may import only deterministic modules.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'setInterval', message: 'Use sleep() or condition() from @temporalio/workflow.' },
        { name: 'fetch', message: 'Workflow code must not do I/O.' },
        { name: 'process', message: 'Workflow code must not read the environment.' },
      ],
    },
  },
);
