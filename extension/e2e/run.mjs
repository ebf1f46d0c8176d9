// `npm run test:e2e`: the end-to-end suite under node's test runner (its summary lines are what CI reads).
// Each suite runs in its own `node --test` process (each starts its own code-server anyway). A suite that
// fails fails the run: there is no second run. (One used to paper over hostile-editor's UI waits failing at
// different steps; the cause was the agent restarting twice after a Workspace Trust grant: src/restartQueue.ts.)
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// Every suite, the main flow first.
const all = fs.readdirSync(here).filter((f) => f.endsWith('.test.mjs')).sort((a, b) => (a === 'flow.test.mjs' ? -1 : b === 'flow.test.mjs' ? 1 : a.localeCompare(b)));
const files = process.argv.slice(2).length ? process.argv.slice(2) : all.map((f) => path.join(here, f));

const run = (file) => spawnSync(process.execPath, ['--test', '--test-reporter=spec', '--test-concurrency=1', file], { stdio: 'inherit' }).status ?? 1;
const failed = [];
for (const file of files) {
  if (run(file) !== 0) failed.push(path.basename(file));
}
if (failed.length) {
  console.log(`# e2e FAILED: ${failed.join(', ')}`);
  process.exit(1);
}
console.log(`# e2e passed: ${files.length} suites`);
