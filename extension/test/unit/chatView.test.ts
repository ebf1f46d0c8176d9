import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { requestPermission } from '../../src/handlers/permission';
import { ChatView, type ChatCommands } from '../../src/panel/chatView';
import type { RequestPermissionParams } from '../../src/protocol';
import { resetMock } from '../mocks/vscode';

const params: RequestPermissionParams = {
  sessionId: 's1',
  toolCall: { toolCallId: 't1', title: 'Create a marker', kind: 'execute', rawInput: { command: 'touch a.txt' } },
  options: [
    { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
    { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
  ],
};

const unused = (): never => {
  throw new Error('not used here');
};
const commands: ChatCommands = {
  mentionFile: unused, addSelection: unused, mention: unused, openDiff: unused, openText: unused,
  openCompare: unused, findFiles: unused, visibilityChanged: () => undefined, showReview: unused,
};

beforeEach(() => resetMock());

describe('a chat that goes away (its editor tab closed)', () => {
  it('answers what it still offers as cancelled, so the request does not wait forever', async () => {
    const chat = new ChatView(vscode.Uri.file('/ext'), commands);
    const asked = requestPermission(params, 'notification', undefined, chat);
    await new Promise((r) => setTimeout(r, 0));
    expect(chat.openApprovals('s1')).toBe(1);
    chat.cancelApprovals();
    expect(await asked).toEqual({ outcome: { outcome: 'cancelled' } });
    expect(chat.openApprovals('s1')).toBe(0);
  });
});
