import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PythonNotFound, type PythonSearch, expandVariables, pythonCandidates, resolvePython, whereToSet } from '../../src/python';
import { pythonPathSettings, sidecarSettings } from '../../src/settings';

const repoVenvPython = path.resolve(__dirname, '../../../.venv/bin/python');

const search = (over: Partial<PythonSearch>): PythonSearch => ({ settings: [], folders: [], extensionPath: '/nowhere', ...over });

describe('finding the Python that runs the sidecar', () => {
  it('the setting comes first, with ${workspaceFolder} expanded', () => {
    expect(pythonCandidates(search({ settings: ['${workspaceFolder}/env/bin/python'], folders: ['/ws'], extensionPath: '/ext/x' }))[0]).toBe('/ws/env/bin/python');
    expect(expandVariables('~/py', undefined)).toBe(path.join(os.homedir(), 'py'));
  });

  it('order: the setting by scope, the interpreter that worked last, each folder\'s .venv, the checkout\'s .venv, python3', () => {
    expect(pythonCandidates(search({ settings: ['/folder/py', '/user/py'], remembered: '/last/py', folders: ['/a', '/b'], extensionPath: '/repo/extension' }))).toEqual([
      '/folder/py',
      '/user/py',
      '/last/py',
      '/a/.venv/bin/python',
      '/b/.venv/bin/python',
      '/repo/.venv/bin/python',
      'python3',
    ]);
    // each once
    expect(pythonCandidates(search({ settings: ['/x/py'], remembered: '/x/py' })).filter((p) => p === '/x/py')).toHaveLength(1);
  });

  it('the scopes of sidecar.pythonPath: folder, workspace, user, default; empty values skipped', () => {
    expect(pythonPathSettings({ defaultValue: '', globalValue: '/user/py', workspaceValue: '  ', workspaceFolderValue: '/folder/py' })).toEqual([
      { value: '/folder/py', scope: 'workspaceFolder' },
      { value: '/user/py', scope: 'user' },
    ]);
    expect(pythonPathSettings({ workspaceValue: '/w/py', globalValue: '/w/py' })).toEqual([{ value: '/w/py', scope: 'workspace' }]);
    expect(pythonPathSettings(undefined)).toEqual([]);
  });

  it('a User value that get() no longer returns (a remote window) still starts the agent through inspect()', async () => {
    const settings = pythonPathSettings({ globalValue: repoVenvPython, defaultValue: '' }).map((s) => s.value);
    expect(await resolvePython(search({ settings }))).toBe(repoVenvPython);
  });

  it('with no setting at all, the remembered interpreter is used', async () => {
    expect(await resolvePython(search({ remembered: repoVenvPython, folders: ['/nonexistent-ws'] }))).toBe(repoVenvPython);
  });

  it('a broken setting falls through to the interpreter that worked last', async () => {
    expect(await resolvePython(search({ settings: ['/nonexistent/bin/python'], remembered: repoVenvPython }))).toBe(repoVenvPython);
  });

  it('the repository\'s .venv imports sidecar and is chosen', async () => {
    expect(fs.existsSync(repoVenvPython)).toBe(true);
    expect(await resolvePython(search({ settings: [repoVenvPython] }))).toBe(repoVenvPython);
  });

  it('nothing found: the error lists what was tried and says where to set it (Remote settings in a remote window)', async () => {
    const err = await resolvePython(search({ settings: ['/nonexistent/bin/python'] }), 'ssh-remote').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PythonNotFound);
    const message = (err as Error).message;
    expect(message).toContain('/nonexistent/bin/python (missing)');
    expect(message).toContain('"sidecar.pythonPath"');
    expect(message).toContain('Remote settings');
    expect(message).toContain('uv sync');
    expect((err as PythonNotFound).tried[0]).toBe('/nonexistent/bin/python (missing)');
    expect(whereToSet(undefined)).toContain('User settings');
  });

  it('a Python without the package is named as such', async () => {
    const err = await resolvePython(search({ settings: ['/usr/bin/python3'] })).catch((e: unknown) => e);
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
