/**
 * The agent's own environment (issue 26): a virtual environment under the extension's global storage, made
 * on first start from what the VSIX carries (`dist/agent/`: the sidecar wheel, `requirements.txt` with every
 * dependency pinned with hashes from uv.lock, `manifest.json`). Dependencies come from the package index pip
 * is configured with (`--require-hashes`, wheels only); the wheel itself from the VSIX. A marker file holds
 * the VSIX's version: the next start reuses the environment without running anything, a newer VSIX builds a
 * fresh one next to it and swaps it in.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cleanEnv, venvPython } from './python';

export interface Bundle {
  dir: string;
  wheel: string;
  requirements: string;
  agentVersion: string;
  /** sha256 of requirements.txt: an upgrade with the same locked dependencies only replaces the wheel. */
  requirementsSha256?: string;
}

export interface Marker {
  extensionVersion: string;
  agentVersion: string;
  requirementsSha256?: string;
  basePython: string;
  pythonVersion: string;
  createdAt: string;
}

export type SetupFailure = 'bundle' | 'venv' | 'index' | 'install';

export class SetupError extends Error {
  constructor(
    readonly kind: SetupFailure,
    message: string,
  ) {
    super(message);
  }
}

/** What the VSIX carries for the agent (written by scripts/bundle-agent.mjs at packaging time). */
export function readBundle(extensionPath: string): Bundle | undefined {
  const dir = path.join(extensionPath, 'dist', 'agent');
  try {
    const m = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { wheel?: unknown; agentVersion?: unknown; requirementsSha256?: unknown };
    if (typeof m.wheel !== 'string' || typeof m.agentVersion !== 'string') return undefined;
    const wheel = path.join(dir, m.wheel);
    const requirements = path.join(dir, 'requirements.txt');
    if (!fs.existsSync(wheel) || !fs.existsSync(requirements)) return undefined;
    return { dir, wheel, requirements, agentVersion: m.agentVersion, ...(typeof m.requirementsSha256 === 'string' ? { requirementsSha256: m.requirementsSha256 } : {}) };
  } catch {
    return undefined;
  }
}

/** The package index pip will use, for messages (pip's own configuration decides). */
export function indexName(env: NodeJS.ProcessEnv): string {
  return env.PIP_INDEX_URL ? env.PIP_INDEX_URL : 'the package index (pypi.org unless pip is configured otherwise)';
}

/** pip's output says it could not reach the index (refused, timed out, no such host, TLS, proxy). */
export function unreachable(output: string): boolean {
  return /NewConnectionError|Connection refused|RemoteDisconnected|Connection aborted|Connection reset|Failed to establish a new connection|ConnectTimeout|Read timed out|Temporary failure in name resolution|Name or service not known|ProxyError|SSLError|Could not fetch URL|nodename nor servname/i.test(output);
}

export interface Step {
  /** One short line for the progress notification. */
  report(message: string): void;
}

export class AgentEnv {
  readonly envDir: string;
  readonly markerFile: string;

  constructor(
    readonly storageDir: string,
    readonly bundle: Bundle,
    readonly extensionVersion: string,
    private readonly log: (line: string) => void,
    /** The environment pip runs in (the editor's: its PIP_* and pip.conf pick the index). */
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.envDir = path.join(storageDir, 'agent-env');
    this.markerFile = path.join(this.envDir, 'sidecar-env.json');
  }

  get python(): string {
    return venvPython(this.envDir);
  }

  marker(): Marker | undefined {
    try {
      return JSON.parse(fs.readFileSync(this.markerFile, 'utf8')) as Marker;
    } catch {
      return undefined;
    }
  }

  /** The environment is there and was made by this VSIX: reuse it, nothing to run. */
  ready(): boolean {
    const m = this.marker();
    return !!m && m.extensionVersion === this.extensionVersion && m.agentVersion === this.bundle.agentVersion && fs.existsSync(this.python);
  }

  /** Why a setup is needed: 'create' (none yet) or 'upgrade' (made by another VSIX version). */
  need(): 'create' | 'upgrade' | undefined {
    if (this.ready()) return undefined;
    return this.marker() ? 'upgrade' : 'create';
  }

  /** The environment in place has the same locked dependencies: an upgrade only replaces the wheel. */
  upgradableInPlace(): boolean {
    const m = this.marker();
    return !!m && !!m.requirementsSha256 && m.requirementsSha256 === this.bundle.requirementsSha256 && fs.existsSync(this.python);
  }

  /** Replaces the agent's wheel in the environment in place (pip rolls a failed reinstall back). */
  async upgradeWheel(step: Step): Promise<void> {
    step.report(`Installing ${path.basename(this.bundle.wheel)}…`);
    const r = await this.run(this.python, ['-I', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', '--no-deps', '--no-index', '--force-reinstall', this.bundle.wheel]);
    if (r.code !== 0) throw new SetupError('install', `Installing the agent failed (pip exit ${r.code}); the log has pip's output.`);
    const old = this.marker();
    fs.writeFileSync(this.markerFile, JSON.stringify({ ...old, ...this.markerFields(), createdAt: old?.createdAt, upgradedAt: new Date().toISOString() }, null, 2));
  }

  private markerFields(): Pick<Marker, 'extensionVersion' | 'agentVersion' | 'requirementsSha256'> {
    return { extensionVersion: this.extensionVersion, agentVersion: this.bundle.agentVersion, ...(this.bundle.requirementsSha256 ? { requirementsSha256: this.bundle.requirementsSha256 } : {}) };
  }

  /**
   * Builds the environment in a fresh folder next to the current one and swaps it in when every step
   * passed, so a failed upgrade leaves nothing half-made (the old folder is removed after the swap).
   */
  async create(basePython: string, pythonVersion: string, step: Step): Promise<void> {
    fs.mkdirSync(this.storageDir, { recursive: true });
    const fresh = path.join(this.storageDir, `agent-env-new-${process.pid}`);
    fs.rmSync(fresh, { recursive: true, force: true });
    try {
      step.report(`Creating a Python ${pythonVersion} environment…`);
      const venv = await this.run(basePython, ['-I', '-m', 'venv', fresh]);
      if (venv.code !== 0) {
        const hint = /ensurepip/.test(venv.output) ? ' On Debian or Ubuntu install the python3-venv package.' : '';
        throw new SetupError('venv', `Sidecar could not create its agent's environment with ${basePython} (exit ${venv.code}).${hint}`);
      }
      const py = venvPython(fresh);
      const pip = ['-I', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', '--retries', '2'];
      const deps = fs.readFileSync(this.bundle.requirements, 'utf8').split('\n').filter((l) => /^[A-Za-z0-9]/.test(l)).length;
      step.report(`Installing ${deps} locked dependencies from ${indexName(this.env)}…`);
      const r1 = await this.run(py, [...pip, '--require-hashes', '--only-binary', ':all:', '-r', this.bundle.requirements]);
      if (r1.code !== 0) {
        if (unreachable(r1.output)) {
          throw new SetupError(
            'index',
            `Sidecar could not reach ${indexName(this.env)} to install its agent's dependencies. Check the network or pip's index settings (PIP_INDEX_URL, pip.conf), then Retry Setup.`,
          );
        }
        throw new SetupError('install', `Installing the agent's dependencies failed (pip exit ${r1.code}); the log has pip's output.`);
      }
      step.report(`Installing ${path.basename(this.bundle.wheel)}…`);
      const r2 = await this.run(py, [...pip, '--no-deps', '--no-index', this.bundle.wheel]);
      if (r2.code !== 0) throw new SetupError('install', `Installing the agent failed (pip exit ${r2.code}); the log has pip's output.`);
      const marker: Marker = {
        ...this.markerFields(),
        basePython,
        pythonVersion,
        createdAt: new Date().toISOString(),
      };
      fs.writeFileSync(path.join(fresh, 'sidecar-env.json'), JSON.stringify(marker, null, 2));
      // Swap: the old environment goes only once the new one is complete.
      const old = path.join(this.storageDir, `agent-env-old-${process.pid}-${Date.now()}`);
      if (fs.existsSync(this.envDir)) fs.renameSync(this.envDir, old);
      await this.relocate(fresh, this.envDir);
      // The old one goes in the background: thousands of files, and the agent can start meanwhile.
      void fs.promises.rm(old, { recursive: true, force: true }).catch(() => undefined);
    } finally {
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  }

  /**
   * Moves the completed environment into place. A venv finds itself from its interpreter's location; only
   * the scripts' shebangs (`bin/pip`) and `pyvenv.cfg` name the folder it was made in, and those are fixed.
   */
  private async relocate(from: string, to: string): Promise<void> {
    fs.renameSync(from, to);
    const fix = (dir: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isFile()) {
          const buf = fs.readFileSync(p);
          if (buf.length < 1_000_000 && !buf.includes(0) && buf.includes(from)) fs.writeFileSync(p, buf.toString('utf8').split(from).join(to));
        }
      }
    };
    fix(path.join(to, process.platform === 'win32' ? 'Scripts' : 'bin'));
    if (fs.existsSync(path.join(to, 'pyvenv.cfg'))) {
      const cfg = path.join(to, 'pyvenv.cfg');
      fs.writeFileSync(cfg, fs.readFileSync(cfg, 'utf8').split(from).join(to));
    }
  }

  private run(command: string, args: string[]): Promise<{ code: number; output: string }> {
    this.log(`$ ${command} ${args.join(' ')}`);
    return new Promise((resolve) => {
      let output = '';
      const child = spawn(command, args, { cwd: this.storageDir, env: cleanEnv(this.env), stdio: ['ignore', 'pipe', 'pipe'] });
      const take = (d: Buffer): void => {
        const s = d.toString();
        output += s;
        for (const line of s.split('\n')) if (line.trim()) this.log(line.trimEnd());
      };
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      child.on('error', (e) => resolve({ code: -1, output: output + String(e) }));
      child.on('close', (code) => resolve({ code: code ?? -1, output }));
    });
  }
}
