/** Finding the Python that runs the sidecar, and saying clearly what to install when there is none. */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export class PythonNotFound extends Error {
  constructor(
    message: string,
    readonly tried: string[],
  ) {
    super(message);
  }
}

export function expandVariables(value: string, workspaceFolder: string | undefined): string {
  let out = value;
  if (workspaceFolder) out = out.split('${workspaceFolder}').join(workspaceFolder);
  if (out.startsWith('~/') && process.env.HOME) out = path.join(process.env.HOME, out.slice(2));
  return out;
}

export interface PythonSearch {
  /** `sidecar.pythonPath` values, the most specific scope first (settings.ts `readPythonPaths`). */
  settings: string[];
  /** The interpreter that last started the agent (extension state), if any. */
  remembered?: string;
  folders: string[];
  extensionPath: string;
}

/**
 * Candidates in order, each once: the setting's values by scope; the interpreter that worked last time (a
 * remote window may not see a User value the first start saw); each workspace folder's
 * `.venv/bin/python`; the `.venv` of the checkout this extension was built from (a development install);
 * `python3` on PATH.
 */
export function pythonCandidates(s: PythonSearch): string[] {
  const out: string[] = [];
  const add = (p: string | undefined): void => {
    if (p && !out.includes(p)) out.push(p);
  };
  for (const v of s.settings) if (v.trim()) add(expandVariables(v.trim(), s.folders[0]));
  add(s.remembered);
  for (const f of s.folders) add(path.join(f, '.venv', 'bin', 'python'));
  add(path.join(path.dirname(s.extensionPath), '.venv', 'bin', 'python'));
  add('python3');
  return out;
}

function hasSidecar(python: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(python, ['-c', 'import sidecar'], { timeout: 20000 }, (err) => resolve(!err));
  });
}

/** Where to set `sidecar.pythonPath` so this window uses it: a remote window reads Remote settings. */
export function whereToSet(remoteName: string | undefined): string {
  return remoteName
    ? `Set "sidecar.pythonPath" in the Remote settings of this window (Preferences: Open Remote Settings; a User value of this machine-overridable setting is not used in a ${remoteName} window)`
    : 'Set "sidecar.pythonPath" in User settings (Preferences: Open User Settings)';
}

/** The first candidate that exists and imports `sidecar`; otherwise a PythonNotFound naming the fix. */
export async function resolvePython(s: PythonSearch, remoteName?: string): Promise<string> {
  const tried: string[] = [];
  for (const candidate of pythonCandidates(s)) {
    if (path.isAbsolute(candidate) && !fs.existsSync(candidate)) {
      tried.push(`${candidate} (missing)`);
      continue;
    }
    if (await hasSidecar(candidate)) return candidate;
    tried.push(`${candidate} (no "sidecar" package)`);
  }
  throw new PythonNotFound(
    'Sidecar cannot start the agent: no Python with the "sidecar" package was found. ' +
      `Tried: ${tried.join('; ')}. Install it into a virtual environment (in a sidecar checkout: ` +
      '"uv sync", or "python -m venv .venv && .venv/bin/pip install <path to the checkout>"), then ' +
      `${whereToSet(remoteName)} to that environment's bin/python.`,
    tried,
  );
}
