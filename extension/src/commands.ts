/** Each command is a small factory over the Ctx. */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { API_KEY_SECRET, type Ctx } from './ctx';
import { answerToast } from './handlers/permission';
import type { ContextItem } from './shared/panelProtocol';

type Cmd = (...args: never[]) => unknown;

export function newSession(ctx: Ctx): Cmd {
  return async () => {
    ctx.chat.reveal();
    await ctx.sessions.newSession();
  };
}

export function resumeSession(ctx: Ctx): Cmd {
  return async () => {
    await ctx.sessions.refreshList();
    const items = ctx.sessions.list.map((s) => ({
      label: s.title || s.sessionId,
      description: s.updatedAt ?? '',
      sessionId: s.sessionId,
    }));
    if (items.length === 0) {
      void vscode.window.showInformationMessage('Sidecar: no saved sessions for this workspace.');
      return;
    }
    const choice = await vscode.window.showQuickPick(items, { title: 'Resume a Sidecar session' });
    if (!choice) return;
    ctx.chat.reveal();
    await ctx.sessions.load(choice.sessionId);
  };
}

/** "Open in New Tab": another conversation in an editor tab, beside the side bar's (issue 30). */
export function openInNewTab(ctx: Ctx): Cmd {
  return () => ctx.openTab();
}

export function focusChat(ctx: Ctx): Cmd {
  return () => ctx.chat.focusPrompt();
}

/** The links of an approval notification (handlers/permission.ts `toast`); not in the palette. */
export function answerApproval(): Cmd {
  return (id: unknown, choice: unknown) => answerToast(id, choice);
}

export function cancel(ctx: Ctx): Cmd {
  return () => ctx.sessions.cancel();
}

export function setApiKey(ctx: Ctx): Cmd {
  return async () => {
    const key = await vscode.window.showInputBox({
      title: 'Anthropic API key',
      prompt: 'Stored in the editor\'s secret storage and passed to the agent as ANTHROPIC_API_KEY.',
      password: true,
      ignoreFocusOut: true,
    });
    if (!key) return;
    await ctx.extCtx.secrets.store(API_KEY_SECRET, key.trim());
    await ctx.updateNeedsKey();
    await ctx.restart();
  };
}

export function clearApiKey(ctx: Ctx): Cmd {
  return async () => {
    await ctx.extCtx.secrets.delete(API_KEY_SECRET);
    await ctx.updateNeedsKey();
    await ctx.restart();
  };
}

export function restart(ctx: Ctx): Cmd {
  return () => ctx.restart();
}

/** After a failed setup (no Python, no index, an install that failed): try again from the start. */
export function retrySetup(ctx: Ctx): Cmd {
  return () => ctx.restart();
}

export function showLog(ctx: Ctx): Cmd {
  return () => ctx.output.show();
}

function relative(uri: vscode.Uri): string {
  return vscode.workspace.asRelativePath(uri, false);
}

export function mentionFile(ctx: Ctx): Cmd {
  return async () => {
    const files = await vscode.workspace.findFiles('**/*', '**/{node_modules,.git,.venv}/**', 5000);
    const items = files
      .map((uri) => ({ label: path.basename(uri.fsPath), description: relative(uri), uri }))
      .sort((a, b) => a.description.localeCompare(b.description));
    const choice = await vscode.window.showQuickPick(items, { title: 'Mention a file', matchOnDescription: true });
    if (!choice) return;
    const item: ContextItem = { kind: 'file', uri: choice.uri.toString(), label: choice.description };
    ctx.chat.reveal();
    ctx.chat.post({ type: 'addContext', item });
  };
}

export function addSelection(ctx: Ctx): Cmd {
  return () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.selection.isEmpty) {
      void vscode.window.showInformationMessage('Sidecar: select some text in an editor first.');
      return;
    }
    const sel = editor.selection;
    const endLine = sel.end.character === 0 && sel.end.line > sel.start.line ? sel.end.line - 1 : sel.end.line;
    const item: ContextItem = {
      kind: 'selection',
      uri: editor.document.uri.toString(),
      label: `${relative(editor.document.uri)}:${sel.start.line + 1}-${endLine + 1}`,
      text: editor.document.getText(sel),
      startLine: sel.start.line,
      endLine,
      languageId: editor.document.languageId,
    };
    ctx.chat.reveal();
    ctx.chat.post({ type: 'addContext', item });
  };
}

export function reviewAccept(ctx: Ctx): Cmd {
  return (uri?: vscode.Uri) => ctx.reviews.accept(uri instanceof vscode.Uri ? uri : undefined);
}

export function reviewReject(ctx: Ctx): Cmd {
  return (uri?: vscode.Uri) => ctx.reviews.reject(uri instanceof vscode.Uri ? uri : undefined);
}

export function acceptHunk(ctx: Ctx): Cmd {
  return (uri: string, index: number) => ctx.reviews.decideHunk(uri, index, 'accepted');
}

export function rejectHunk(ctx: Ctx): Cmd {
  return (uri: string, index: number) => ctx.reviews.decideHunk(uri, index, 'rejected');
}

export function undoHunk(ctx: Ctx): Cmd {
  return (uri: string, index: number) => ctx.reviews.decideHunk(uri, index, undefined);
}
