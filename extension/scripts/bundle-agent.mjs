// What the VSIX carries for the agent (issue 26, docs/extension.md "The agent's environment"): the sidecar
// wheel built from this checkout and every dependency pinned with hashes from uv.lock, into dist/agent/.
// The extension makes its own environment from these on first start. Run by `npm run package`.
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const extensionDir = path.dirname(here);
const repoRoot = path.dirname(extensionDir);
const out = path.join(extensionDir, 'dist', 'agent');

// The pinned uv scripts/setup installs, else one on PATH.
const pinned = path.join(repoRoot, '.tools', 'uv', 'bin', 'uv');
const uv = process.env.UV ?? (fs.existsSync(pinned) ? pinned : 'uv');
const run = (args) => execFileSync(uv, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] }).toString();

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sidecar-wheel-'));
try {
  run(['build', '--wheel', '--quiet', '--out-dir', tmp]);
  const wheels = fs.readdirSync(tmp).filter((f) => f.endsWith('.whl'));
  if (wheels.length !== 1) throw new Error(`uv build made ${wheels.length} wheels: ${wheels.join(', ')}`);
  fs.copyFileSync(path.join(tmp, wheels[0]), path.join(out, wheels[0]));
  // The wheel's own metadata names the distribution and version (sidecar_agent-0.1.0-py3-none-any.whl).
  const [dist, agentVersion] = wheels[0].split('-');
  // Every dependency with its hashes, for `pip install --require-hashes`; the project itself is the wheel.
  run(['export', '--frozen', '--no-dev', '--hashes', '--no-emit-project', '--no-header', '--quiet', '-o', path.join(out, 'requirements.txt')]);
  const requirements = fs.readFileSync(path.join(out, 'requirements.txt'));
  fs.writeFileSync(
    path.join(out, 'manifest.json'),
    JSON.stringify(
      {
        wheel: wheels[0],
        distribution: dist.replace(/_/g, '-'),
        agentVersion,
        requirementsSha256: crypto.createHash('sha256').update(requirements).digest('hex'),
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`bundle-agent: ${wheels[0]} + ${requirements.toString().split('\n').filter((l) => /^[A-Za-z0-9]/.test(l)).length} pinned dependencies → ${path.relative(repoRoot, out)}`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
