/**
 * `session/request_permission`: ask the user to approve a tool call. The chat is the first channel: the
 * pending tool card carries every option as a button, with the rule written out in full. The style the
 * settings choose (a notification with short labels and "Show", a modal, a QuickPick) is the second.
 * Whichever answers first wins and the other is closed. With the chat, the notification is a progress
 * notification — the one kind an extension can close — whose answers are command links, so it closes the
 * moment the approval is answered anywhere (an answered approval never stays live or piles up in the
 * notification centre). Without the chat, it is a plain warning with buttons. Dismissing the notification
 * does not reject: the request stays open in the chat (and in the status bar) until it is answered or the
 * sidecar cancels it.
 */
import * as vscode from 'vscode';
import type { PermissionOption, RequestPermissionParams, RequestPermissionResult } from '../protocol';
import type { ApprovalStyle } from '../settings';

const CANCELLED: RequestPermissionResult = { outcome: { outcome: 'cancelled' } };

/** The chat side of an approval (implemented by the chat view). */
export interface ChatApprovals {
  /** Puts the options on the tool's card; `answer` settles when the user picks one there. */
  offer(params: RequestPermissionParams, options: PermissionOption[]): { answer: Promise<RequestPermissionResult>; close(result: RequestPermissionResult): void };
  /** Reveals the chat scrolled to the card. */
  show(toolCallId: string): void;
}

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

const SHORT: Record<string, string> = { allow_once: 'Allow', allow_always: 'Always allow', reject_once: 'Reject', reject_always: 'Always reject' };
export const SHOW = 'Show';

/**
 * Button labels short enough for a notification. The sidecar's standard options (ids = kinds) get short
 * labels; custom ones (ExitPlanMode's, AskUserQuestion's fallback) keep their names.
 */
export function shortLabels(options: PermissionOption[]): string[] {
  const standard = options.every((o) => o.optionId === o.kind && SHORT[o.kind]);
  return options.map((o) => (standard ? (SHORT[o.kind] as string) : o.name));
}

/** The notification's text: the command and, when "Always allow" is offered, the rule it would save. */
export function notificationMessage(params: RequestPermissionParams, options: PermissionOption[]): string {
  const always = options.find((o) => o.kind === 'allow_always' && o.optionId === o.kind);
  const rule = always ? /^Always allow (.+)$/.exec(always.name)?.[1] : undefined;
  return `Sidecar: ${describe(params)}${rule ? ` ("Always allow" saves ${rule})` : ''}`;
}

/** After the notification's links: the model's description of a command, and the rule "Always allow" saves. */
function toastDetail(params: RequestPermissionParams, options: PermissionOption[]): string {
  const raw = params.toolCall.rawInput as Record<string, unknown> | undefined;
  const desc = raw && typeof raw.command === 'string' && typeof raw.description === 'string' ? raw.description : '';
  const always = options.find((o) => o.kind === 'allow_always' && o.optionId === o.kind);
  const rule = always ? /^Always allow (.+)$/.exec(always.name)?.[1] : undefined;
  return [desc, rule ? `"Always allow" saves ${rule}.` : ''].filter(Boolean).join('. ');
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

const never = new Promise<never>(() => undefined);

/** The command an approval notification's links run, with `[toastId, choice]` (a label's index, or "Show"). */
export const ANSWER_COMMAND = 'sidecar.answerApproval';

/** The open approval notifications, by id: what a click on one of their links does. */
const toasts = new Map<string, (choice: string) => void>();
let toastCount = 0;

/** `sidecar.answerApproval`: a link of an approval notification was clicked. */
export function answerToast(id: unknown, choice: unknown): void {
  if (typeof id === 'string' && typeof choice === 'string') toasts.get(id)?.(choice);
}

/** The question in a few words (the chat card shows it whole): a long command is cut. */
function shortQuestion(params: RequestPermissionParams): string {
  const raw = params.toolCall.rawInput as Record<string, unknown> | undefined;
  if (raw && typeof raw.command === 'string') {
    const first = raw.command.split('\n')[0] ?? '';
    const cmd = first.length > 48 || raw.command.includes('\n') ? `${first.slice(0, 47)}…` : first;
    return `Run \`${cmd}\`?`;
  }
  return describe(params);
}

function toastLink(label: string, id: string, choice: string): string {
  return `[${label.replace(/[[\]]/g, '')}](command:${ANSWER_COMMAND}?${encodeURIComponent(JSON.stringify([id, choice]))})`;
}

/**
 * The approval as a notification the extension can close: the question, one link per label and "Show",
 * then `detail`. A toast without buttons shows one line until expanded, so the answers come right after the
 * short question and the rest (the description, the rule "Always allow" saves) after them.
 * `choice` settles with the label clicked (or SHOW); `close()` takes the notification away.
 */
function toast(question: string, labels: string[], detail: string): { choice: Promise<string>; close(): void } {
  const id = `approval-${++toastCount}`;
  let close = (): void => undefined;
  const closed = new Promise<void>((resolve) => (close = resolve));
  const choice = new Promise<string>((resolve) => toasts.set(id, (c) => resolve(c === SHOW ? SHOW : (labels[Number(c)] ?? SHOW))));
  const links = [...labels.map((l, i) => toastLink(l, id, String(i))), toastLink(SHOW, id, SHOW)].join(' · ');
  void Promise.resolve(
    // All in the title: a progress message would be joined to it with ": ".
    vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Sidecar: ${question} ${links}${detail ? ` — ${detail}` : ''}`, cancellable: false }, () => closed),
  ).finally(() => toasts.delete(id));
  return {
    choice,
    close: () => {
      toasts.delete(id);
      close();
    },
  };
}

export async function requestPermission(
  params: RequestPermissionParams,
  style: ApprovalStyle,
  token?: vscode.CancellationToken,
  chat?: ChatApprovals,
): Promise<RequestPermissionResult> {
  const options = orderedOptions(params.options ?? []);
  if (options.length === 0) return CANCELLED;
  const inChat = chat?.offer(params, options);
  const chatAnswer = inChat?.answer ?? never;
  const cancelled = onCancel(token).then(() => CANCELLED);
  let settled = false;
  // Closes the QuickPick when the chat (or the sidecar) answered first.
  const closer = new vscode.CancellationTokenSource();
  const sub = token?.onCancellationRequested(() => closer.cancel());

  // With the chat, the notification closes once the approval is answered (see `toast`).
  let shownToast: { choice: Promise<string>; close(): void } | undefined;

  // The second channel; resolves only with an answer (a dismissal leaves the chat waiting, when there is one).
  const second = async (): Promise<RequestPermissionResult> => {
    if (style === 'quickPick') {
      const r = await pick(describe(params), options, closer.token);
      return r.outcome.outcome === 'cancelled' && inChat ? never : r;
    }
    const labels = shortLabels(options);
    const buttons = chat ? [...labels, SHOW] : labels;
    let shown: Thenable<string | undefined>;
    if (style === 'modal') {
      shown = vscode.window.showWarningMessage(describe(params), { modal: true, detail: `Sidecar asks before running ${params.toolCall.kind ?? 'this'} tool.` }, ...buttons);
    } else if (chat) {
      shownToast = toast(shortQuestion(params), labels, toastDetail(params, options));
      shown = shownToast.choice;
    } else {
      shown = vscode.window.showWarningMessage(notificationMessage(params, options), ...buttons);
    }
    const answer = await Promise.resolve(shown);
    if (settled) return never;
    if (answer === SHOW && chat) {
      shownToast?.close();
      chat.show(params.toolCall.toolCallId);
      return never; // answered in the chat; the status bar keeps the count meanwhile
    }
    if (answer === undefined) return inChat ? never : CANCELLED;
    const i = labels.indexOf(answer);
    const option = options[i];
    return option ? selected(option.optionId) : CANCELLED;
  };

  const result = await Promise.race([chatAnswer, second(), cancelled]);
  settled = true;
  shownToast?.close();
  closer.cancel();
  closer.dispose();
  sub?.dispose();
  inChat?.close(result);
  return result;
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
