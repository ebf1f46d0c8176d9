/**
 * The `sidecar.*` settings, read in one place and by scope (issue 25).
 *
 * A repository's `.vscode/settings.json` is the repository's, not the user's: every setting that runs code
 * (`pythonPath`, `setupPython`), picks where the API key goes (`apiBaseUrl`), loosens governance
 * (`initialMode`, `permissions`) or spends the user's money (`model`, `smallModel`, `effort`) is read from
 * User (or remote machine) settings only, in every window, trusted or not. What a workspace sets is kept
 * apart: its permission rules and mode go to the sidecar as `workspaceSettings` (project scope: they only
 * restrict until the workspace is trusted; `bypassPermissions` is never passed), its interpreter and endpoint
 * are used only in a trusted window after the user said yes (ctx.ts), the rest is ignored (and logged).
 */
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
  setupPython: string;
  model: string;
  smallModel: string;
  effort: string;
  apiBaseUrl: string;
  initialMode: ModeId;
  permissions: PermissionRules;
  approvalStyle: ApprovalStyle;
  /** Model prices overriding the sidecar's table, `{model: {input, output, cacheWrite?, cacheRead?}}` (docs/model.md). */
  prices: Record<string, unknown>;
}

/** What the workspace's own settings (folder or workspace scope) ask for; never applied as the user's. */
export interface WorkspaceScoped {
  pythonPath?: string;
  apiBaseUrl?: string;
  permissions?: PermissionRules;
  initialMode?: ModeId;
  /** Settings the workspace set that are never taken from it (named in the log). */
  ignored: string[];
}

/** `inspect()` of a setting: the values of each scope (the parts used here). */
export interface Inspected<T> {
  workspaceFolderValue?: T;
  workspaceValue?: T;
  globalValue?: T;
  defaultValue?: T;
}

/** Reads one setting: what `inspect()` reports and what `get()` resolves. */
export interface SettingSource {
  inspect(key: string): Inspected<unknown> | undefined;
  get(key: string): unknown;
}

/** Settings whose workspace value is never used, in any window (they spend the user's money or run code). */
const USER_ONLY = ['model', 'smallModel', 'effort', 'setupPython', 'prices'] as const;

const MODES: readonly ModeId[] = ['default', 'acceptEdits', 'plan', 'bypassPermissions'];

/**
 * The user's own value: User settings (`globalValue`, which in a remote window includes the remote machine's
 * settings), else what `get()` resolves when no folder or workspace value is in play, else the default.
 */
export function userValue(i: Inspected<unknown> | undefined, effective: unknown): unknown {
  if (i?.globalValue !== undefined) return i.globalValue;
  if (i?.workspaceValue === undefined && i?.workspaceFolderValue === undefined) return effective ?? i?.defaultValue;
  return i.defaultValue;
}

/** The workspace's value (the folder's first), if it set one. */
export function workspaceValue(i: Inspected<unknown> | undefined): unknown {
  return i?.workspaceFolderValue !== undefined ? i.workspaceFolderValue : i?.workspaceValue;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function str(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}

function rules(value: unknown): PermissionRules {
  const v = (value && typeof value === 'object' ? value : {}) as Partial<Record<keyof PermissionRules, unknown>>;
  return { allow: strings(v.allow), ask: strings(v.ask), deny: strings(v.deny) };
}

function prices(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function mode(value: unknown): ModeId | undefined {
  return typeof value === 'string' && (MODES as readonly string[]).includes(value) ? (value as ModeId) : undefined;
}

/** The user's settings (User / remote machine scope only). */
export function userSettings(src: SettingSource): Settings {
  const u = (key: string): unknown => userValue(src.inspect(key), src.get(key));
  const style = u('approvalStyle');
  return {
    pythonPath: str(u('pythonPath')),
    setupPython: str(u('setupPython')),
    model: str(u('model')),
    smallModel: str(u('smallModel')),
    effort: str(u('effort')),
    apiBaseUrl: str(u('apiBaseUrl')),
    initialMode: mode(u('initialMode')) ?? 'default',
    permissions: rules(u('permissions')),
    // Only how approvals are asked: harmless from any scope.
    approvalStyle: style === 'modal' || style === 'quickPick' ? style : 'notification',
    // A repository could make the agent look cheap: prices are the user's only.
    prices: prices(u('prices')),
  };
}

/** What the workspace's settings ask for, kept apart from the user's. */
export function workspaceScoped(src: SettingSource): WorkspaceScoped {
  const w = (key: string): unknown => workspaceValue(src.inspect(key));
  const out: WorkspaceScoped = { ignored: [] };
  const python = str(w('pythonPath'));
  if (python) out.pythonPath = python;
  const base = str(w('apiBaseUrl'));
  if (base) out.apiBaseUrl = base;
  const perms = w('permissions');
  if (perms !== undefined) out.permissions = rules(perms);
  const m = mode(w('initialMode'));
  // A workspace never turns permissions off, trusted or not.
  if (m === 'bypassPermissions') out.ignored.push('initialMode (bypassPermissions)');
  else if (m) out.initialMode = m;
  for (const key of USER_ONLY) if (w(key) !== undefined) out.ignored.push(key);
  return out;
}

function vscodeSource(): SettingSource {
  const c = vscode.workspace.getConfiguration('sidecar');
  return { inspect: (key) => c.inspect(key), get: (key) => c.get(key) };
}

export function readSettings(): Settings {
  return userSettings(vscodeSource());
}

export function readWorkspaceScoped(): WorkspaceScoped {
  return workspaceScoped(vscodeSource());
}

/** What goes to the sidecar in `initializationOptions.settings` (the user's; empty strings mean "sidecar default"). */
export function sidecarSettings(s: Settings, apiBaseUrl: string = s.apiBaseUrl): Record<string, unknown> {
  const out: Record<string, unknown> = { permissions: s.permissions, initialMode: s.initialMode };
  if (s.model) out.model = s.model;
  if (s.smallModel) out.smallModel = s.smallModel;
  if (s.effort) out.effort = s.effort;
  if (apiBaseUrl) out.apiBaseUrl = apiBaseUrl;
  if (Object.keys(s.prices).length) out.prices = s.prices;
  return out;
}

/** What goes in `initializationOptions.workspaceSettings` (contract 2: project scope, restricts until trusted). */
export function sidecarWorkspaceSettings(w: WorkspaceScoped): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  if (w.permissions) out.permissions = w.permissions;
  if (w.initialMode) out.initialMode = w.initialMode;
  return Object.keys(out).length ? out : undefined;
}

/** Settings whose change needs the sidecar restarted (it reads them at start). */
export const RESTART_KEYS = ['pythonPath', 'model', 'smallModel', 'effort', 'apiBaseUrl', 'permissions', 'initialMode', 'prices'].map((k) => `sidecar.${k}`);
