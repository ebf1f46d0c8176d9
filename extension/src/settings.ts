/** The `sidecar.*` settings, read in one place. */
import * as vscode from 'vscode';
import type { ModeId } from './protocol';

export type ApprovalStyle = 'notification' | 'modal' | 'quickPick';

export interface PermissionRules {
  allow: string[];
  ask: string[];
  deny: string[];
}

export interface Settings {
  pythonPath: string;
  model: string;
  smallModel: string;
  effort: string;
  apiBaseUrl: string;
  initialMode: ModeId;
  permissions: PermissionRules;
  approvalStyle: ApprovalStyle;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

export function readSettings(): Settings {
  const c = vscode.workspace.getConfiguration('sidecar');
  const perms = c.get<Partial<Record<keyof PermissionRules, unknown>>>('permissions') ?? {};
  return {
    pythonPath: c.get<string>('pythonPath') ?? '',
    model: c.get<string>('model') ?? '',
    smallModel: c.get<string>('smallModel') ?? '',
    effort: c.get<string>('effort') ?? '',
    apiBaseUrl: c.get<string>('apiBaseUrl') ?? '',
    initialMode: c.get<ModeId>('initialMode') ?? 'default',
    permissions: { allow: strings(perms.allow), ask: strings(perms.ask), deny: strings(perms.deny) },
    approvalStyle: c.get<ApprovalStyle>('approvalStyle') ?? 'notification',
  };
}

/** `inspect()` of a setting: the values of each scope (the parts used here). */
export interface Inspected<T> {
  workspaceFolderValue?: T;
  workspaceValue?: T;
  globalValue?: T;
  defaultValue?: T;
}

export interface PythonSetting {
  value: string;
  /** where it was set: 'workspaceFolder' | 'workspace' | 'user' | 'default' */
  scope: string;
}

/**
 * `sidecar.pythonPath` from every scope, the most specific first (folder, workspace, user, default), empty
 * values left out. `get()` alone is not enough: in a remote window VS Code leaves out a machine-overridable
 * value set in (local) User settings, while `inspect()` may still report it.
 */
export function pythonPathSettings(i: Inspected<unknown> | undefined): PythonSetting[] {
  const out: PythonSetting[] = [];
  const add = (v: unknown, scope: string): void => {
    if (typeof v === 'string' && v.trim() && !out.some((o) => o.value === v.trim())) out.push({ value: v.trim(), scope });
  };
  add(i?.workspaceFolderValue, 'workspaceFolder');
  add(i?.workspaceValue, 'workspace');
  add(i?.globalValue, 'user');
  add(i?.defaultValue, 'default');
  return out;
}

export function readPythonPaths(): PythonSetting[] {
  const c = vscode.workspace.getConfiguration('sidecar');
  const got = pythonPathSettings(c.inspect<string>('pythonPath'));
  const value = c.get<string>('pythonPath');
  // What `get()` resolves is included too (a remote's machine settings are not one of inspect's scopes).
  if (value && value.trim() && !got.some((g) => g.value === value.trim())) got.unshift({ value: value.trim(), scope: 'effective' });
  return got;
}

/** What goes to the sidecar in `initializationOptions.settings` (empty strings mean "sidecar default"). */
export function sidecarSettings(s: Settings): Record<string, unknown> {
  const out: Record<string, unknown> = { permissions: s.permissions, initialMode: s.initialMode };
  if (s.model) out.model = s.model;
  if (s.smallModel) out.smallModel = s.smallModel;
  if (s.effort) out.effort = s.effort;
  if (s.apiBaseUrl) out.apiBaseUrl = s.apiBaseUrl;
  return out;
}

/** Settings whose change needs the sidecar restarted (it reads them at start). */
export const RESTART_KEYS = ['pythonPath', 'model', 'smallModel', 'effort', 'apiBaseUrl', 'permissions'].map((k) => `sidecar.${k}`);
