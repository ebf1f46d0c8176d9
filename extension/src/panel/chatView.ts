/**
 * The chat panel: a webview view in the Sidecar side bar, or an editor tab ("Open in New Tab": a second
 * conversation, its own `Sessions`, on the same agent). Static script and style from dist/ and media/, a
 * Content-Security-Policy with a nonce, no remote resources. Messages are switched on `type`.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { ChatApprovals } from '../handlers/permission';
import type { CompareResult, PermissionOption, RequestPermissionParams, RequestPermissionResult } from '../protocol';
import type { ContextItem, FileResult, FromView, ToView } from '../shared/panelProtocol';
import type { RewindResult, Sessions, View } from './sessions';

/** What the chat view needs from the editor side (implemented in ctx.ts). */
export interface ChatCommands {
  mentionFile: () => Promise<void>;
  addSelection: () => Promise<void>;
  /** `@problems` / `@terminal`: the editor's state as a chip (with an error when there is none to read). */
  mention: (name: 'problems' | 'terminal') => ContextItem;
  openDiff: (path: string, oldText: string, newText: string) => Promise<void>;
  openText: (text: string, title: string) => Promise<void>;
  /** "Compare": the files a restore would change, now against the checkpoint; the chat's line when none. */
  openCompare: (result: CompareResult, title: string, rel: (p: string) => string) => Promise<string | null>;
  findFiles: (query: string) => Promise<FileResult[]>;
  /** A chat was shown, hidden or closed (the sidecar is told whether any chat is in view). */
  visibilityChanged: () => void;
  /** The diff of the proposal a card waits on, in front again. */
  showReview: (toolCallId: string) => void;
}

/** How long a message waits for others to travel with it to the webview. */
const BATCH_MS = 8;

/** Where a chat's webview lives: the side bar's view or an editor tab's panel. */
interface Surface {
  /** on the page as `body[data-surface]` (which chat this is, for tests and styles) */
  readonly kind: 'view' | 'tab';
  readonly webview: vscode.Webview;
  readonly visible: boolean;
  show(preserveFocus: boolean): void;
  setBadge(n: number): void;
  onDidChangeVisibility(listener: () => void): void;
  onDidDispose(listener: () => void): void;
}

function viewSurface(view: vscode.WebviewView): Surface {
  return {
    kind: 'view',
    webview: view.webview,
    get visible() {
      return view.visible;
    },
    show: (preserveFocus) => view.show(preserveFocus),
    // A zero badge is hidden; assigning `undefined` did not clear a shown badge in code-server 4.100.
    setBadge: (n) => (view.badge = { value: n, tooltip: n > 0 ? `${n} waiting for you` : '' }),
    onDidChangeVisibility: (listener) => view.onDidChangeVisibility(listener),
    onDidDispose: (listener) => view.onDidDispose(listener),
  };
}

function panelSurface(panel: vscode.WebviewPanel): Surface {
  return {
    kind: 'tab',
    webview: panel.webview,
    get visible() {
      return panel.visible;
    },
    show: (preserveFocus) => panel.reveal(undefined, preserveFocus),
    setBadge: () => undefined, // an editor tab has no badge: its status line says what waits in it
    // A panel's view state also changes when it only becomes active or inactive or moves column: only a
    // change of visibility is one (else a tab's chat, scrolled up, would be taken back to the bottom).
    onDidChangeVisibility: (listener) => {
      let shown = panel.visible;
      panel.onDidChangeViewState(() => {
        if (panel.visible === shown) return;
        shown = panel.visible;
        listener();
      });
    },
    onDidDispose: (listener) => panel.onDidDispose(listener),
  };
}

export class ChatView implements vscode.WebviewViewProvider, View, ChatApprovals {
  static readonly viewId = 'sidecar.chat';
  /** The editor tabs' webview panels (restored after a reload by a WebviewPanelSerializer). */
  static readonly tabViewType = 'sidecar.chatTab';
  private view: Surface | undefined;
  private queue: ToView[] = [];
  /** Posted in this tick, sent together at its end (see `post`). */
  private outbox: ToView[] = [];
  private viewReady = false;
  sessions: Sessions | undefined;
  private readonly approvals = new Map<string, (r: RequestPermissionResult) => void>();
  private approvalCount = 0;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly commands: ChatCommands,
  ) {}

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  /** Approvals open in the chat, per session (a "waiting" notification is not doubled for those). */
  openApprovals(sessionId: string): number {
    let n = 0;
    for (const k of this.approvals.keys()) if (k.startsWith(`${sessionId}/`)) n++;
    return n;
  }

  offer(params: RequestPermissionParams, options: PermissionOption[]): { answer: Promise<RequestPermissionResult>; close(result: RequestPermissionResult): void } {
    const key = `${params.sessionId}/${params.toolCall.toolCallId}/${++this.approvalCount}`;
    const answer = new Promise<RequestPermissionResult>((resolve) => this.approvals.set(key, resolve));
    this.post({ type: 'approval', key, toolCall: params.toolCall, options });
    return {
      answer,
      close: (result) => {
        this.approvals.delete(key);
        const o = result.outcome;
        const option = o.outcome === 'selected' ? options.find((x) => x.optionId === o.optionId) : undefined;
        const outcome = !option ? 'cancelled' : option.kind.startsWith('allow') ? 'allowed' : 'rejected';
        const feedback = o.outcome === 'selected' ? o._meta?.feedback : undefined;
        this.post({ type: 'approvalDone', key, toolCallId: params.toolCall.toolCallId, label: option?.name ?? '', outcome, ...(feedback ? { feedback } : {}) });
      },
    };
  }

  /** The chat let go of its turn (`Sessions.stopTurn`: its tab closed, another session shown), after the
   * cancel: each approval it still offers is answered as cancelled, so no request waits on a card nobody
   * can see. */
  cancelApprovals(): void {
    const open = [...this.approvals.values()];
    this.approvals.clear();
    for (const resolve of open) resolve({ outcome: { outcome: 'cancelled' } });
  }

  show(toolCallId: string): void {
    this.reveal();
    this.post({ type: 'focusCard', toolCallId });
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.attach(viewSurface(view));
  }

  /** An editor tab's panel (new, or restored after a reload) shows this chat. */
  attachPanel(panel: vscode.WebviewPanel): void {
    this.attach(panelSurface(panel));
  }

  /** What a tab's panel is created with (the same script and style as the side bar's view). */
  webviewOptions(): vscode.WebviewOptions & vscode.WebviewPanelOptions {
    return { ...this.scriptOptions(), retainContextWhenHidden: true };
  }

  private scriptOptions(): vscode.WebviewOptions {
    return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')] };
  }

  private attach(view: Surface): void {
    this.view = view;
    this.viewReady = false;
    view.webview.options = this.scriptOptions();
    view.webview.html = this.html(view.webview, view.kind);
    view.webview.onDidReceiveMessage((m: FromView) => void this.onMessage(m));
    view.onDidChangeVisibility(() => {
      this.commands.visibilityChanged();
      // the webview cannot tell by itself (a hidden frame keeps running, without layout or frames)
      this.post({ type: 'visibility', visible: view.visible });
    });
    this.commands.visibilityChanged();
    view.onDidDispose(() => {
      this.view = undefined;
      this.viewReady = false;
      this.outbox = [];
      this.commands.visibilityChanged();
    });
  }

  /**
   * Messages wait until the webview script says it is ready; the transcript lives in the webview. Those
   * posted within `BATCH_MS` go as one `batch`, in order: a `session/load` replay is thousands of updates
   * read from the sidecar in a few chunks, and each webview message is a trip through the editor (in
   * code-server, over its websocket) and a task in the webview.
   */
  post(message: ToView): void {
    if (message.type === 'state') this.setBadge(message.pending);
    if (!this.view || !this.viewReady) {
      this.queue.push(message);
      return;
    }
    this.outbox.push(message);
    // The end of a replay goes at once (with what came before it): the panel starts drawing on it.
    if (message.type === 'replayDone') return this.flush();
    // Not setImmediate: vscode-jsonrpc hands over one incoming message per setImmediate, so that flushed
    // after every update. A few ms gathers what the sidecar sent together; its text is coalesced per 20 ms.
    if (this.outbox.length === 1) setTimeout(() => this.flush(), BATCH_MS);
  }

  private flush(): void {
    const messages = this.outbox;
    this.outbox = [];
    if (!messages.length) return;
    if (!this.view || !this.viewReady) {
      this.queue.push(...messages);
      return;
    }
    void this.view.webview.postMessage(messages.length === 1 ? messages[0] : { type: 'batch', messages });
  }

  reveal(): void {
    if (this.view) this.view.show(true);
    else void vscode.commands.executeCommand(`${ChatView.viewId}.focus`);
  }

  /** "Focus the Chat": the view takes the keyboard and the webview puts it in the prompt box. */
  focusPrompt(): void {
    if (this.view) this.view.show(false);
    else void vscode.commands.executeCommand(`${ChatView.viewId}.focus`);
    this.post({ type: 'focusPrompt' });
  }

  private setBadge(n: number): void {
    this.view?.setBadge(n);
  }

  private async onMessage(m: FromView): Promise<void> {
    const s = this.sessions;
    try {
      switch (m.type) {
        case 'ready': {
          this.viewReady = true;
          this.outbox = this.queue;
          this.queue = [];
          this.flush();
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
        case 'setConfigOption':
          await s?.setConfigOption(m.configId, m.value);
          break;
        case 'mentionFile':
          await this.commands.mentionFile();
          break;
        case 'addSelection':
          await this.commands.addSelection();
          break;
        case 'addMention':
          this.post({ type: 'addContext', item: this.commands.mention(m.mention) });
          break;
        case 'refreshSessions':
          await s?.refreshList();
          break;
        case 'approve': {
          const resolve = this.approvals.get(m.key);
          if (resolve) {
            resolve({ outcome: { outcome: 'selected', optionId: m.optionId, ...(m.feedback ? { _meta: { feedback: m.feedback } } : {}) } });
          }
          break;
        }
        case 'openDiff':
          await this.commands.openDiff(m.path, m.oldText, m.newText);
          break;
        case 'openText':
          await this.commands.openText(m.text, m.title);
          break;
        case 'showReview':
          this.commands.showReview(m.toolCallId);
          break;
        case 'copy':
          await vscode.env.clipboard.writeText(m.text);
          break;
        case 'findFiles': {
          const items = await this.commands.findFiles(m.query);
          this.post({ type: 'fileResults', requestId: m.requestId, items });
          break;
        }
        case 'rewind': {
          const r = await s?.rewind(m.messageId, m.files, m.conversation);
          if (r) this.reportConflicts(r);
          break;
        }
        case 'compare': {
          if (!s) break;
          const r = await s.compare(m);
          const title = m.toolCallId ? 'before that tool call' : 'before this message';
          const line = await this.commands.openCompare(r, title, (p) => s.relativePath(p));
          if (line) this.post({ type: 'notice', level: 'info', text: line, ...(m.messageId && !m.toolCallId ? { messageId: m.messageId } : {}) });
          break;
        }
        case 'restoreToolCall': {
          const r = await s?.restoreToolCall(m.toolCallId);
          if (r) this.reportConflicts(r);
          break;
        }
        case 'undoRestore': {
          const r = await s?.undoRestore(m.undoId, m.messageId);
          if (r) this.reportConflicts(r);
          break;
        }
        case 'editResend': {
          const r = await s?.editResend(m.messageId, m.text, m.context ?? []);
          if (r) this.reportConflicts(r);
          break;
        }
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

  /** The chat shows every rewind's outcome; files left alone are also a warning, so they are not missed. */
  private reportConflicts(r: RewindResult): void {
    if (!r.conflicts.length) return;
    const list = r.conflicts.map((c) => `${vscode.workspace.asRelativePath(c.path, false)} (${c.reason})`).join('; ');
    void vscode.window.showWarningMessage(`Sidecar: not restored: ${list}`);
  }

  private html(webview: vscode.Webview, kind: Surface['kind']): string {
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
<body data-surface="${kind}">
<header class="toolbar">
  <select id="sessions" title="Sessions" aria-label="Sessions"></select>
  <button id="new-session" class="secondary" title="New session">New</button>
</header>
<div class="transcript-wrap">
  <main id="transcript" aria-live="polite"></main>
  <button id="status" class="status" role="status" title="Show what waits for you" hidden></button>
  <button id="new-activity" class="pill" hidden title="Scroll to the newest activity">↓ New activity</button>
</div>
<section id="plan" class="plan" hidden></section>
<footer class="composer">
  <div id="menu" class="menu" role="listbox" hidden></div>
  <div id="context" class="context"></div>
  <textarea id="prompt" rows="3" placeholder="Ask the agent… @ mentions a file, @problems, @terminal, @git or @url; / runs a command (Enter sends, Shift+Enter: new line)" aria-label="Prompt"></textarea>
  <div class="row controls">
    <select id="mode" title="Permission mode (Shift+Tab cycles)" aria-label="Permission mode">
      <option value="default">Ask before edits</option>
      <option value="acceptEdits">Accept edits</option>
      <option value="plan">Plan only</option>
      <option value="bypassPermissions">Bypass permissions</option>
    </select>
    <span id="config" class="config-picker"></span>
    <span class="grow"></span>
    <span id="session-cost" class="session-cost" aria-label="Session cost"></span>
    <span class="usage-wrap"><span id="usage" class="usage"></span><span class="usage-bar"><span class="usage-bar-fill"></span></span></span>
  </div>
  <div class="row actions">
    <button id="mention" class="secondary" title="Mention a file, folder, problems, terminal, git changes or a URL (or type @)">@</button>
    <button id="selection" class="secondary" title="Add the editor selection to the prompt">Selection</button>
    <span class="send-group">
      <button id="stop" class="secondary" title="Stop the turn (Esc)" hidden>Stop</button>
      <button id="send" title="Send (Enter)">Send</button>
    </span>
  </div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}
