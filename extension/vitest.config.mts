import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    alias: {
      // The hand-written `vscode` stand-in: just the API surface the handlers touch, with recorders.
      vscode: fileURLToPath(new URL('./test/mocks/vscode.ts', import.meta.url)),
    },
  },
  test: {
    environment: 'node',
    testTimeout: 90000,
    hookTimeout: 60000,
  },
});
