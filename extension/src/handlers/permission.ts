/**
 * `session/request_permission`: ask the user to approve a tool call, in the style the settings choose.
 * Answers `selected` with the option's id, or `cancelled` when dismissed or when the sidecar cancels.
 */
import * as vscode from 'vscode';
import type { PermissionOption, RequestPermissionParams, RequestPermissionResult } from '../protocol';
import type { ApprovalStyle } from '../settings';

const CANCELLED: RequestPermissionResult = { outcome: { outcome: 'cancelled' } };

/** What is being approved, in one line: the command for Bash, else the card title. */
export function describe(params: RequestPermissionParams): string {
  const raw = params.toolCall.rawInput as Record<string, unknown> | undefined;
  const title = params.toolCall.title ?? 'a tool call';
  if (raw && typeof raw.command === 'string') {
    const desc = typeof raw.description === 'string' && raw.description ? ` — ${raw.description}` : '';
    return `Run \`${raw.command}\`${desc}?`;
  }
  if (raw && typeof raw.url === 'string') return `${title}: fetch ${raw.url}?`;
  return `Allow: ${title}?`;
}

const ORDER: Record<PermissionOption['kind'], number> = { allow_once: 0, allow_always: 1, reject_once: 2, reject_always: 3 };

export function orderedOptions(options: PermissionOption[]): PermissionOption[] {
  return [...options].sort((a, b) => (ORDER[a.kind] ?? 9) - (ORDER[b.kind] ?? 9));
}

function selected(optionId: string): RequestPermissionResult {
  return { outcome: { outcome: 'selected', optionId } };
}

function onCancel(token: vscode.CancellationToken | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!token) return;
    if (token.isCancellationRequested) resolve();
    else token.onCancellationRequested(() => resolve());
  });
}

export async function requestPermission(
  params: RequestPermissionParams,
  style: ApprovalStyle,
  token?: vscode.CancellationToken,
): Promise<RequestPermissionResult> {
  const options = orderedOptions(params.options ?? []);
  if (options.length === 0) return CANCELLED;
  const message = describe(params);
  if (style === 'quickPick') return pick(message, options, token);

  const names = options.map((o) => o.name);
  const shown =
    style === 'modal'
      ? vscode.window.showWarningMessage(message, { modal: true, detail: `Sidecar asks before running ${params.toolCall.kind ?? 'this'} tool.` }, ...names)
      : vscode.window.showWarningMessage(`Sidecar: ${message}`, ...names);
  // A notification cannot be closed from an extension: when the sidecar cancels we answer at once and
  // a late click is ignored (the tool already was not run).
  const answer = await Promise.race([Promise.resolve(shown), onCancel(token).then(() => 'cancelled' as const)]);
  if (answer === 'cancelled' || answer === undefined) return CANCELLED;
  const option = options.find((o) => o.name === answer);
  return option ? selected(option.optionId) : CANCELLED;
}

function pick(message: string, options: PermissionOption[], token?: vscode.CancellationToken): Promise<RequestPermissionResult> {
  return new Promise((resolve) => {
    const qp = vscode.window.createQuickPick<vscode.QuickPickItem & { optionId: string }>();
    qp.title = 'Sidecar needs approval';
    qp.placeholder = message;
    qp.ignoreFocusOut = true;
    qp.items = options.map((o) => ({ label: o.name, optionId: o.optionId }));
    let done = false;
    const finish = (r: RequestPermissionResult): void => {
      if (done) return;
      done = true;
      resolve(r);
      qp.hide();
      qp.dispose();
    };
    qp.onDidAccept(() => {
      const item = qp.selectedItems[0] ?? qp.activeItems[0];
      finish(item ? selected(item.optionId) : CANCELLED);
    });
    qp.onDidHide(() => finish(CANCELLED));
    token?.onCancellationRequested(() => finish(CANCELLED));
    qp.show();
  });
}
