/**
 * The chat panel: a webview view in the Sidecar side bar. Static script and style from dist/ and media/,
 * a Content-Security-Policy with a nonce, no remote resources. Messages are switched on `type`.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { ModeId } from '../protocol';
import type { ContextItem, Sessions, ToView, View } from './sessions';

export type FromView =
  | { type: 'ready' }
  | { type: 'prompt'; text: string; context: ContextItem[] }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'loadSession'; sessionId: string }
  | { type: 'setMode'; modeId: ModeId }
  | { type: 'mentionFile' }
  | { type: 'addSelection' }
  | { type: 'refreshSessions' }
  | { type: 'openLocation'; path: string; line?: number };

export class ChatView implements vscode.WebviewViewProvider, View {
  static readonly viewId = 'sidecar.chat';
  private view: vscode.WebviewView | undefined;
  private queue: ToView[] = [];
  private viewReady = false;
  sessions: Sessions | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly commands: {
      mentionFile: () => Promise<void>;
      addSelection: () => Promise<void>;
    },
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.viewReady = false;
    view.webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
    };
    view.webview.html = this.html(view.webview);
    view.webview.onDidReceiveMessage((m: FromView) => void this.onMessage(m));
    view.onDidDispose(() => {
      this.view = undefined;
      this.viewReady = false;
    });
  }

  /** Messages wait until the webview script says it is ready; the transcript lives in the webview. */
  post(message: ToView): void {
    if (message.type === 'state') this.setBadge(message.pending);
    if (this.view && this.viewReady) void this.view.webview.postMessage(message);
    else this.queue.push(message);
  }

  reveal(): void {
    if (this.view) this.view.show(true);
    else void vscode.commands.executeCommand(`${ChatView.viewId}.focus`);
  }

  private setBadge(n: number): void {
    // A zero badge is hidden; assigning `undefined` did not clear a shown badge in code-server 4.100.
    if (this.view) this.view.badge = { value: n, tooltip: n > 0 ? `${n} waiting for you` : '' };
  }

  private async onMessage(m: FromView): Promise<void> {
    const s = this.sessions;
    try {
      switch (m.type) {
        case 'ready': {
          this.viewReady = true;
          const queued = this.queue;
          this.queue = [];
          for (const q of queued) void this.view?.webview.postMessage(q);
          s?.pushState();
          break;
        }
        case 'prompt':
          await s?.prompt(m.text, m.context);
          break;
        case 'cancel':
          await s?.cancel();
          break;
        case 'newSession':
          await s?.newSession();
          break;
        case 'loadSession':
          await s?.load(m.sessionId);
          break;
        case 'setMode':
          await s?.setMode(m.modeId);
          break;
        case 'mentionFile':
          await this.commands.mentionFile();
          break;
        case 'addSelection':
          await this.commands.addSelection();
          break;
        case 'refreshSessions':
          await s?.refreshList();
          break;
        case 'openLocation': {
          const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(m.path));
          const line = Math.max(0, (m.line ?? 1) - 1);
          await vscode.window.showTextDocument(doc, { selection: new vscode.Range(line, 0, line, 0), preview: true });
          break;
        }
      }
    } catch (e) {
      this.post({ type: 'error', message: e instanceof Error ? e.message : String(e) });
    }
  }

  private html(webview: vscode.Webview): string {
    const nonce = randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'chat.css'));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${style}" rel="stylesheet">
<title>Sidecar</title>
</head>
<body>
<header class="toolbar">
  <select id="sessions" title="Sessions" aria-label="Sessions"></select>
  <button id="new-session" class="secondary" title="New session">New</button>
</header>
<div id="status" class="status" role="status"></div>
<main id="transcript" aria-live="polite"></main>
<section id="plan" class="plan" hidden></section>
<footer class="composer">
  <div id="context" class="context"></div>
  <textarea id="prompt" rows="3" placeholder="Ask the agent… (Enter sends, Shift+Enter: new line)" aria-label="Prompt"></textarea>
  <div class="row">
    <select id="mode" title="Permission mode" aria-label="Permission mode">
      <option value="default">Ask before edits</option>
      <option value="acceptEdits">Accept edits</option>
      <option value="plan">Plan only</option>
      <option value="bypassPermissions">Bypass permissions</option>
    </select>
    <button id="mention" class="secondary" title="Mention a file">@</button>
    <button id="selection" class="secondary" title="Add the editor selection">Sel</button>
    <span class="grow"></span>
    <span id="usage" class="usage" title="Context tokens"></span>
    <button id="stop" class="secondary" title="Stop the turn" hidden>Stop</button>
    <button id="send" title="Send">Send</button>
  </div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}
