// `npm run test:e2e`: the end-to-end suite under node's test runner (its summary lines are what CI reads).
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const files = process.argv.slice(2).length ? process.argv.slice(2) : [path.join(here, 'flow.test.mjs')];
const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', '--test-concurrency=1', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
