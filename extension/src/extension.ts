/** Activation only wires things: the Ctx owns the client and views, commands.ts has the commands. */
import * as vscode from 'vscode';
import * as commands from './commands';
import { Ctx } from './ctx';
import { RESTART_KEYS } from './settings';

let ctx: Ctx | undefined;

export async function activate(extCtx: vscode.ExtensionContext): Promise<void> {
  ctx = new Ctx(extCtx);
  extCtx.subscriptions.push(ctx);
  ctx.registerCommand('focusChat', commands.focusChat);
  ctx.registerCommand('newSession', commands.newSession);
  ctx.registerCommand('openInNewTab', commands.openInNewTab);
  ctx.registerCommand('resumeSession', commands.resumeSession);
  ctx.registerCommand('cancel', commands.cancel);
  ctx.registerCommand('setApiKey', commands.setApiKey);
  ctx.registerCommand('clearApiKey', commands.clearApiKey);
  ctx.registerCommand('restart', commands.restart);
  ctx.registerCommand('retrySetup', commands.retrySetup);
  ctx.registerCommand('showLog', commands.showLog);
  ctx.registerCommand('mentionFile', commands.mentionFile);
  ctx.registerCommand('addSelection', commands.addSelection);
  ctx.registerCommand('review.accept', commands.reviewAccept);
  ctx.registerCommand('review.reject', commands.reviewReject);
  ctx.registerCommand('review.acceptHunk', commands.acceptHunk);
  ctx.registerCommand('review.rejectHunk', commands.rejectHunk);
  ctx.registerCommand('review.undoHunk', commands.undoHunk);
  ctx.registerCommand('answerApproval', commands.answerApproval);
  // The welcome view (viewsWelcome in package.json) is an empty tree: its content is the welcome.
  extCtx.subscriptions.push(vscode.window.registerTreeDataProvider('sidecar.welcome', { getChildren: () => [], getTreeItem: (e: vscode.TreeItem) => e }));
  await ctx.updateNeedsKey();
  const current = ctx;
  extCtx.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('sidecar.pythonPath')) current.rememberUserPython();
      if (RESTART_KEYS.some((k) => e.affectsConfiguration(k))) void current.restartIfChanged('settings changed');
    }),
  );
  // Not awaited: a first start may spend minutes making the agent's environment (with its own progress).
  // Through the restart queue, so a restart asked meanwhile (Set API Key) waits for it.
  void ctx.restart();
}

export async function deactivate(): Promise<void> {
  await ctx?.stop();
  ctx = undefined;
}
