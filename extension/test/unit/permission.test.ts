import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { ANSWER_COMMAND, answerToast, type ChatApprovals, describe as describeRequest, requestPermission, shortLabels } from '../../src/handlers/permission';
import type { PermissionOption, RequestPermissionParams, RequestPermissionResult } from '../../src/protocol';
import { type FakeQuickPick, ui, resetMock } from '../mocks/vscode';

const params: RequestPermissionParams = {
  sessionId: 's1',
  toolCall: { toolCallId: 't1', title: 'Create a marker', kind: 'execute', rawInput: { command: 'touch a.txt', description: 'Create a marker' } },
  options: [
    { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
    { optionId: 'allow_always', name: 'Always allow Bash(touch *) in this project', kind: 'allow_always' },
    { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
  ],
};

/** The chat side, answered by the test. */
class FakeChat implements ChatApprovals {
  offered: { options: PermissionOption[]; closed?: RequestPermissionResult }[] = [];
  shown: string[] = [];
  private resolve: ((r: RequestPermissionResult) => void) | undefined;
  offer(_p: RequestPermissionParams, options: PermissionOption[]) {
    const entry: { options: PermissionOption[]; closed?: RequestPermissionResult } = { options };
    this.offered.push(entry);
    return {
      answer: new Promise<RequestPermissionResult>((r) => (this.resolve = r)),
      close: (r: RequestPermissionResult) => (entry.closed = r),
    };
  }
  show(id: string): void {
    this.shown.push(id);
  }
  answer(optionId: string, feedback?: string): void {
    this.resolve?.({ outcome: { outcome: 'selected', optionId, ...(feedback ? { _meta: { feedback } } : {}) } });
  }
}

const tick = () => new Promise((r) => setTimeout(r, 0));

beforeEach(() => resetMock());

describe('session/request_permission', () => {
  it('the notification has short labels (allow first) and names the rule "Always allow" saves', async () => {
    ui.messageAnswers.push('Allow');
    const r = await requestPermission(params, 'notification');
    expect(r).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_once' } });
    expect(ui.messages[0]).toEqual({
      level: 'warning',
      message: 'Sidecar: Run `touch a.txt` — Create a marker? ("Always allow" saves Bash(touch *) in this project)',
      options: ['Allow', 'Always allow', 'Reject'],
    });
  });

  it('the always-allow button answers its own option id', async () => {
    ui.messageAnswers.push('Always allow');
    expect(await requestPermission(params, 'notification')).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_always' } });
  });

  it('custom options (ExitPlanMode) keep their names on the buttons', () => {
    const custom: PermissionOption[] = [
      { optionId: 'acceptEdits', name: 'Yes, and auto-accept edits', kind: 'allow_always' },
      { optionId: 'plan', name: 'No, keep planning', kind: 'reject_once' },
    ];
    expect(shortLabels(custom)).toEqual(['Yes, and auto-accept edits', 'No, keep planning']);
  });

  it('without the chat, a dismissed notification is cancelled', async () => {
    ui.messageAnswers.push(undefined);
    expect(await requestPermission(params, 'notification')).toEqual({ outcome: { outcome: 'cancelled' } });
  });

  /** The links of the last approval notification: label → [toastId, choice] (what a click runs). */
  function toastLinks(): Map<string, [string, string]> {
    const p = ui.progress.at(-1);
    const links = new Map<string, [string, string]>();
    for (const m of (p?.title ?? '').matchAll(/\[([^\]]+)\]\(command:([\w.]+)\?([^)]+)\)/g)) {
      expect(m[2]).toBe(ANSWER_COMMAND);
      links.set(m[1] as string, JSON.parse(decodeURIComponent(m[3] as string)));
    }
    return links;
  }

  it('with the chat, the notification is one that closes: links for each answer and Show; the chat answers and it closes', async () => {
    const chat = new FakeChat();
    const p = requestPermission(params, 'notification', undefined, chat);
    await tick();
    expect(ui.messages).toEqual([]);
    // the answers right after the question (a toast without buttons shows one line), then the description and the rule
    expect(ui.progress[0]?.title).toMatch(/^Sidecar: Run `touch a\.txt`\? \[Allow\]\(command:[^)]+\) · \[Always allow\]\(command:[^)]+\) · \[Reject\]\(command:[^)]+\) · \[Show\]\(command:[^)]+\) — Create a marker\. "Always allow" saves Bash\(touch \*\) in this project\.$/);
    expect([...toastLinks().keys()]).toEqual(['Allow', 'Always allow', 'Reject', 'Show']);
    expect(ui.progress[0]?.closed).toBe(false);
    expect(chat.offered[0]?.options.map((o) => o.name)).toEqual(['Allow once', 'Always allow Bash(touch *) in this project', 'Reject']);
    chat.answer('reject_once', 'use mkdir instead');
    const expected = { outcome: { outcome: 'selected', optionId: 'reject_once', _meta: { feedback: 'use mkdir instead' } } };
    expect(await p).toEqual(expected);
    expect(chat.offered[0]?.closed).toEqual(expected);
    await tick();
    expect(ui.progress[0]?.closed).toBe(true);
    // a click on a link of the closed notification does nothing
    const [id, choice] = toastLinks().get('Allow') as [string, string];
    answerToast(id, choice);
  });

  it('"Show" reveals the card and closes the notification; "Always allow" in the notification answers allow_always', async () => {
    const chat = new FakeChat();
    const p = requestPermission(params, 'notification', undefined, chat);
    await tick();
    answerToast(...(toastLinks().get('Show') as [string, string]));
    await tick();
    expect(chat.shown).toEqual(['t1']);
    expect(ui.progress[0]?.closed).toBe(true);
    chat.answer('allow_once');
    expect(await p).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_once' } });

    const chat2 = new FakeChat();
    const p2 = requestPermission(params, 'notification', undefined, chat2);
    await tick();
    answerToast(...(toastLinks().get('Always allow') as [string, string]));
    expect(await p2).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_always' } });
    expect(chat2.offered[0]?.closed).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_always' } });
    await tick();
    expect(ui.progress[1]?.closed).toBe(true);
  });

  it('a cancel from the sidecar answers cancelled while the notification still waits, and closes both', async () => {
    const src = new vscode.CancellationTokenSource();
    const chat = new FakeChat();
    const p = requestPermission(params, 'notification', src.token as unknown as vscode.CancellationToken, chat);
    await tick();
    src.cancel();
    expect(await p).toEqual({ outcome: { outcome: 'cancelled' } });
    expect(chat.offered[0]?.closed).toEqual({ outcome: { outcome: 'cancelled' } });
    await tick();
    expect(ui.progress[0]?.closed).toBe(true);
  });

  it('modal style passes modal: true', async () => {
    ui.messageAnswers.push('Reject');
    expect(await requestPermission(params, 'modal')).toEqual({ outcome: { outcome: 'selected', optionId: 'reject_once' } });
    expect(ui.messages[0]?.options[0]).toMatchObject({ modal: true });
  });

  it('quickPick style: picking answers; a cancel from the sidecar or an answer in the chat hides the pick', async () => {
    ui.onQuickPick = (qp: FakeQuickPick) => qp.accept(['Always allow Bash(touch *) in this project']);
    expect(await requestPermission(params, 'quickPick')).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_always' } });

    ui.onQuickPick = undefined;
    const src = new vscode.CancellationTokenSource();
    const p = requestPermission(params, 'quickPick', src.token as unknown as vscode.CancellationToken);
    await Promise.resolve();
    const qp = ui.quickPicks.at(-1) as FakeQuickPick;
    expect(qp.visible).toBe(true);
    src.cancel();
    expect(await p).toEqual({ outcome: { outcome: 'cancelled' } });
    expect(qp.visible).toBe(false);

    const chat = new FakeChat();
    const p2 = requestPermission(params, 'quickPick', undefined, chat);
    await Promise.resolve();
    const qp2 = ui.quickPicks.at(-1) as FakeQuickPick;
    chat.answer('allow_once');
    expect(await p2).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_once' } });
    expect(qp2.visible).toBe(false);
  });

  it('describes non-command tools by their title and fetches by URL', () => {
    expect(describeRequest({ ...params, toolCall: { toolCallId: 't', title: 'Write notes.txt', rawInput: { file_path: '/x' } } })).toBe('Allow: Write notes.txt?');
    expect(describeRequest({ ...params, toolCall: { toolCallId: 't', title: 'Fetch', rawInput: { url: 'https://example.com' } } })).toBe('Fetch: fetch https://example.com?');
  });
});
