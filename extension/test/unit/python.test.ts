import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PythonNotFound, expandVariables, pythonCandidates, resolvePython } from '../../src/python';
import { sidecarSettings } from '../../src/settings';

const repoVenvPython = path.resolve(__dirname, '../../../.venv/bin/python');

describe('finding the Python that runs the sidecar', () => {
  it('the setting wins, with ${workspaceFolder} expanded', () => {
    expect(pythonCandidates('${workspaceFolder}/env/bin/python', ['/ws'], '/ext')).toEqual(['/ws/env/bin/python']);
    expect(expandVariables('~/py', undefined)).toBe(path.join(os.homedir(), 'py'));
  });

  it('without a setting: each folder\'s .venv, the checkout\'s .venv, then python3', () => {
    expect(pythonCandidates('', ['/a', '/b'], '/repo/extension')).toEqual([
      '/a/.venv/bin/python',
      '/b/.venv/bin/python',
      '/repo/.venv/bin/python',
      'python3',
    ]);
  });

  it('the repository\'s .venv imports sidecar and is chosen', async () => {
    expect(fs.existsSync(repoVenvPython)).toBe(true);
    expect(await resolvePython(repoVenvPython, [], '/nowhere')).toBe(repoVenvPython);
  });

  it('a missing interpreter is an error that says what to install and which setting to set', async () => {
    const err = await resolvePython('/nonexistent/bin/python', [], '/nowhere').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PythonNotFound);
    expect((err as Error).message).toContain('/nonexistent/bin/python (missing)');
    expect((err as Error).message).toContain('"sidecar.pythonPath"');
    expect((err as Error).message).toContain('uv sync');
  });

  it('a Python without the package is named as such', async () => {
    const err = await resolvePython('/usr/bin/python3', [], '/nowhere').catch((e: unknown) => e);
    expect((err as Error).message).toContain('/usr/bin/python3 (no "sidecar" package)');
  });
});

describe('settings sent to the sidecar', () => {
  it('carries permission rules and the mode; empty model names are left to the sidecar', () => {
    expect(
      sidecarSettings({
        pythonPath: '',
        model: '',
        smallModel: 'claude-haiku-4-5',
        effort: 'high',
        apiBaseUrl: 'http://127.0.0.1:9',
        initialMode: 'acceptEdits',
        permissions: { allow: ['Bash(npm test *)'], ask: [], deny: ['Read(./.env)'] },
        approvalStyle: 'modal',
      }),
    ).toEqual({
      permissions: { allow: ['Bash(npm test *)'], ask: [], deny: ['Read(./.env)'] },
      initialMode: 'acceptEdits',
      smallModel: 'claude-haiku-4-5',
      effort: 'high',
      apiBaseUrl: 'http://127.0.0.1:9',
    });
  });
});
