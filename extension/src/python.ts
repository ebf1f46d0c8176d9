/** Finding the Python that runs the sidecar, and saying clearly what to install when there is none. */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export class PythonNotFound extends Error {}

export function expandVariables(value: string, workspaceFolder: string | undefined): string {
  let out = value;
  if (workspaceFolder) out = out.split('${workspaceFolder}').join(workspaceFolder);
  if (out.startsWith('~/') && process.env.HOME) out = path.join(process.env.HOME, out.slice(2));
  return out;
}

/**
 * Candidates in order: the setting; each workspace folder's `.venv/bin/python`; the `.venv` of the
 * checkout this extension was built from (a development install); `python3` on PATH.
 */
export function pythonCandidates(setting: string, folders: string[], extensionPath: string): string[] {
  if (setting.trim()) return [expandVariables(setting.trim(), folders[0])];
  const out: string[] = [];
  for (const f of folders) out.push(path.join(f, '.venv', 'bin', 'python'));
  out.push(path.join(path.dirname(extensionPath), '.venv', 'bin', 'python'));
  out.push('python3');
  return out;
}

function hasSidecar(python: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(python, ['-c', 'import sidecar'], { timeout: 20000 }, (err) => resolve(!err));
  });
}

/** The first candidate that exists and imports `sidecar`; otherwise a PythonNotFound naming the fix. */
export async function resolvePython(setting: string, folders: string[], extensionPath: string): Promise<string> {
  const tried: string[] = [];
  for (const candidate of pythonCandidates(setting, folders, extensionPath)) {
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
      '"uv sync", or "python -m venv .venv && .venv/bin/pip install <path to the checkout>") and set ' +
      '"sidecar.pythonPath" to that environment\'s bin/python.',
  );
}
