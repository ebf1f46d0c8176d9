/**
 * Interpreters: proving one is this project's agent (by its distribution and version, run isolated from any
 * workspace), finding a Python ≥ 3.11 to build the agent's own environment with, and keeping every choice
 * out of the workspace's hands (issue 25).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { insideRoots } from './shared/paths';

/** The agent's distribution on PyPI (contract 1); the import package stays `sidecar`. */
export const AGENT_DIST = 'sidecar-agent';
export const MIN_PYTHON: readonly [number, number] = [3, 11];

export class PythonNotFound extends Error {
  constructor(
    message: string,
    readonly tried: string[],
  ) {
    super(message);
  }
}

/** `~/` expanded (the user's home); nothing else. */
export function expandHome(value: string): string {
  if (value.startsWith('~/') && process.env.HOME) return path.join(process.env.HOME, value.slice(2));
  return value;
}

/** `${workspaceFolder}` and `~/` expanded (for a value the user set, in a trusted window). */
export function expandVariables(value: string, workspaceFolder: string | undefined): string {
  let out = value;
  if (workspaceFolder) out = out.split('${workspaceFolder}').join(workspaceFolder);
  return expandHome(out);
}

/** Whether `p` is one of `folders` or inside one (by path, after resolving `..`). */
export function isInside(p: string, folders: readonly string[]): boolean {
  return insideRoots(path.resolve(p), folders.map((f) => path.resolve(f)));
}

export interface Identity {
  /** The installed `sidecar-agent` version, or null when the interpreter has no such distribution. */
  agentVersion: string | null;
  python: [number, number, number];
  executable: string;
}

// Run with -I (no cwd or script folder on sys.path, no PYTHON* variables, no user site) from a cwd outside
// the workspace: a repository's `sidecar/` folder cannot answer for the package.
const IDENTITY_SCRIPT = [
  'import json, sys',
  'from importlib import metadata',
  'try:',
  `    v = metadata.version(${JSON.stringify(AGENT_DIST)})`,
  'except metadata.PackageNotFoundError:',
  '    v = None',
  // The name before the rename (contract 1): accepted only with the agent's own console script.
  '    try:',
  '        d = metadata.distribution("sidecar")',
  '        if any(e.group == "console_scripts" and e.value == "sidecar.cli:main" for e in d.entry_points):',
  '            v = d.version',
  '    except metadata.PackageNotFoundError:',
  '        pass',
  'print(json.dumps({"agentVersion": v, "python": list(sys.version_info[:3]), "executable": sys.executable}))',
].join('\n');

/** Asks an interpreter who it is, isolated (`-I`, `cwd` outside the workspace). Rejects when it cannot run. */
export function identify(python: string, cwd: string, timeoutMs = 30000): Promise<Identity> {
  return new Promise((resolve, reject) => {
    execFile(python, ['-I', '-c', IDENTITY_SCRIPT], { cwd, timeout: timeoutMs, env: cleanEnv(process.env) }, (err, stdout) => {
      if (err) return reject(err);
      try {
        const line = stdout.trim().split('\n').pop() ?? '';
        const j = JSON.parse(line) as Identity;
        if (!Array.isArray(j.python)) throw new Error('no version');
        resolve(j);
      } catch {
        reject(new Error(`${python} did not answer as a Python interpreter`));
      }
    });
  });
}

/** The editor's environment without the Anthropic credentials (nothing but the agent gets those). */
export function cleanEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && k !== 'ANTHROPIC_API_KEY' && k !== 'ANTHROPIC_AUTH_TOKEN') out[k] = v;
  return out;
}

export function versionAtLeast(v: readonly number[], min: readonly number[]): boolean {
  for (let i = 0; i < min.length; i++) {
    if ((v[i] ?? 0) !== min[i]) return (v[i] ?? 0) > min[i];
  }
  return true;
}

/** The interpreter inside a virtual environment. */
export function venvPython(env: string, platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? path.join(env, 'Scripts', 'python.exe') : path.join(env, 'bin', 'python');
}

/**
 * Whether a workspace folder's `.venv` carries the agent, judged from its files only (a `sidecar_agent-*.dist-info`
 * in site-packages): nothing of the workspace is executed to find out.
 */
export function workspaceVenvWithAgent(folder: string): string | undefined {
  const venv = path.join(folder, '.venv');
  const python = venvPython(venv);
  if (!fs.existsSync(python)) return undefined;
  const libs = process.platform === 'win32' ? [path.join(venv, 'Lib')] : [path.join(venv, 'lib')];
  for (const lib of libs) {
    let entries: string[];
    try {
      entries = fs.readdirSync(lib);
    } catch {
      continue;
    }
    for (const e of entries) {
      const site = process.platform === 'win32' ? path.join(lib, 'site-packages') : path.join(lib, e, 'site-packages');
      try {
        if (fs.readdirSync(site).some((f) => f.startsWith('sidecar_agent-') && f.endsWith('.dist-info'))) return python;
      } catch {
        /* not a site-packages */
      }
      if (process.platform === 'win32') break;
    }
  }
  return undefined;
}

/**
 * Candidates for the Python that builds the agent's environment: the user's `sidecar.setupPython`, then
 * `python3.13` … `python3` found on PATH — only absolute PATH entries outside every workspace folder (a
 * relative entry such as `.` or `node_modules/.bin` would let the repository answer).
 */
export function basePythonCandidates(setting: string, pathEnv: string | undefined, folders: readonly string[], platform: NodeJS.Platform = process.platform): string[] {
  const out: string[] = [];
  const add = (p: string): void => {
    if (!out.includes(p)) out.push(p);
  };
  if (setting) add(expandHome(setting));
  const names = platform === 'win32' ? ['python.exe', 'python3.exe'] : ['python3.14', 'python3.13', 'python3.12', 'python3.11', 'python3'];
  const dirs = (pathEnv ?? '').split(path.delimiter).filter((d) => d && path.isAbsolute(d) && !isInside(d, folders));
  for (const name of names) {
    for (const d of dirs) {
      const p = path.join(d, name);
      if (fs.existsSync(p)) {
        add(p);
        break;
      }
    }
  }
  return out;
}

/** The first candidate that runs and is Python ≥ 3.11; otherwise a PythonNotFound naming each one tried. */
export async function findBasePython(candidates: readonly string[], cwd: string): Promise<{ python: string; version: [number, number, number] }> {
  const tried: string[] = [];
  for (const c of candidates) {
    if (path.isAbsolute(c) && !fs.existsSync(c)) {
      tried.push(`${c} (missing)`);
      continue;
    }
    try {
      const id = await identify(c, cwd);
      if (versionAtLeast(id.python, MIN_PYTHON)) return { python: c, version: id.python };
      tried.push(`${c} (Python ${id.python.join('.')})`);
    } catch {
      tried.push(`${c} (does not run)`);
    }
  }
  throw new PythonNotFound(
    `Sidecar needs Python ${MIN_PYTHON.join('.')} or newer to set up its agent and found none` +
      (tried.length ? ` (tried ${tried.join('; ')})` : ' on PATH') +
      '. Install Python 3.11+ or set "sidecar.setupPython" to one, then Retry Setup.',
    tried,
  );
}
