import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeGlobals = Object.fromEntries(
  ['process', 'console', 'fetch', 'setTimeout', 'clearTimeout', 'URL', 'Buffer', 'queueMicrotask', 'performance'].map((g) => [g, 'readonly']),
);

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.e2e-cache/**'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'smart'],
    },
  },
  { files: ['**/*.mjs'], languageOptions: { globals: nodeGlobals } },
);
