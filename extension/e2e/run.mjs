// `npm run test:e2e`: the end-to-end suite under node's test runner (its summary lines are what CI reads).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// Every suite, the main flow first (each starts its own code-server).
const all = fs.readdirSync(here).filter((f) => f.endsWith('.test.mjs')).sort((a, b) => (a === 'flow.test.mjs' ? -1 : b === 'flow.test.mjs' ? 1 : a.localeCompare(b)));
const files = process.argv.slice(2).length ? process.argv.slice(2) : all.map((f) => path.join(here, f));
const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', '--test-concurrency=1', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
