import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { describe as describeRequest, requestPermission } from '../../src/handlers/permission';
import type { RequestPermissionParams } from '../../src/protocol';
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

beforeEach(() => resetMock());

describe('session/request_permission', () => {
  it('shows the command in a warning notification with one button per option, allow first', async () => {
    ui.messageAnswers.push('Allow once');
    const r = await requestPermission(params, 'notification');
    expect(r).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_once' } });
    expect(ui.messages[0]).toEqual({
      level: 'warning',
      message: 'Sidecar: Run `touch a.txt` — Create a marker?',
      options: ['Allow once', 'Always allow Bash(touch *) in this project', 'Reject'],
    });
  });

  it('the always-allow button answers its own option id (the rule is in its name)', async () => {
    ui.messageAnswers.push('Always allow Bash(touch *) in this project');
    expect(await requestPermission(params, 'notification')).toEqual({ outcome: { outcome: 'selected', optionId: 'allow_always' } });
  });

  it('a dismissed notification is cancelled', async () => {
    ui.messageAnswers.push(undefined);
    expect(await requestPermission(params, 'notification')).toEqual({ outcome: { outcome: 'cancelled' } });
  });

  it('a cancel from the sidecar answers cancelled while the notification still waits', async () => {
    ui.messageAnswers.push(new Promise<string | undefined>(() => undefined)); // never clicked
    const src = new vscode.CancellationTokenSource();
    const p = requestPermission(params, 'notification', src.token as unknown as vscode.CancellationToken);
    src.cancel();
    expect(await p).toEqual({ outcome: { outcome: 'cancelled' } });
  });

  it('modal style passes modal: true', async () => {
    ui.messageAnswers.push('Reject');
    expect(await requestPermission(params, 'modal')).toEqual({ outcome: { outcome: 'selected', optionId: 'reject_once' } });
    expect(ui.messages[0].options[0]).toMatchObject({ modal: true });
  });

  it('quickPick style: picking answers; a cancel from the sidecar hides the pick', async () => {
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
  });

  it('describes non-command tools by their title and fetches by URL', () => {
    expect(describeRequest({ ...params, toolCall: { toolCallId: 't', title: 'Write notes.txt', rawInput: { file_path: '/x' } } })).toBe('Allow: Write notes.txt?');
    expect(describeRequest({ ...params, toolCall: { toolCallId: 't', title: 'Fetch', rawInput: { url: 'https://example.com' } } })).toBe('Fetch: fetch https://example.com?');
  });
});
