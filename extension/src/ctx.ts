/**
 * One object owns the language client, the views and every disposable. The client is rebuilt on
 * restart; the handlers it serves are registered here, once per client.
 */
import * as vscode from 'vscode';
import type { CancellationToken } from 'vscode';
import { LanguageClient, type LanguageClientOptions, type ServerOptions, State } from 'vscode-languageclient/node';
import { askUser } from './handlers/askUser';
import { diagnostics, lspQuery } from './handlers/lspQuery';
import { requestPermission } from './handlers/permission';
import { PROPOSAL_SCHEME, ProposalFileSystem, ReviewManager } from './handlers/reviewEdit';
import { ChatView } from './panel/chatView';
import { type Connection, Sessions } from './panel/sessions';
import { Pending } from './pending';
import { TurnTokens } from './turnTokens';
import {
  type AgentCapabilities,
  AskUser,
  clientCapabilities,
  Diagnostics,
  LspQuery,
  ModelRetry,
  Notify,
  type NotifyParams,
  PanelVisibility,
  RequestPermission,
  ReviewEdit,
  SessionUpdateNotification,
  WorkspaceTrust,
} from './protocol';
import { PythonNotFound, resolvePython } from './python';
import { FileIndex } from './fileIndex';
import { READONLY_SCHEME, ReadonlyTexts } from './readonlyTexts';
import { StatusItem } from './statusItem';
import { readPythonPaths, readSettings, sidecarSettings } from './settings';

export const API_KEY_SECRET = 'sidecar.anthropicApiKey';
/** workspaceState: the session the panel showed last in this workspace (reopened after a reload). */
export const LAST_SESSION_KEY = 'sidecar.lastSessionId';
/** workspaceState and globalState: the interpreter that last started the agent. */
export const LAST_PYTHON_KEY = 'sidecar.lastPython';

export class Ctx implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  readonly pending = new Pending();
  readonly turnTokens = new TurnTokens();
  readonly proposals = new ProposalFileSystem();
  readonly reviews: ReviewManager;
  readonly chat: ChatView;
  readonly sessions: Sessions;
  readonly status: StatusItem;
  readonly texts = new ReadonlyTexts();
  readonly files = new FileIndex();
  client: LanguageClient | undefined;
  agentCapabilities: AgentCapabilities | undefined;
  private clientDisposables: vscode.Disposable[] = [];
  private readonly disposables: vscode.Disposable[] = [];

  constructor(readonly extCtx: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('Sidecar', { log: true });
    this.reviews = new ReviewManager(this.proposals);
    this.chat = new ChatView(extCtx.extensionUri, {
      mentionFile: () => vscode.commands.executeCommand('sidecar.mentionFile') as Promise<void>,
      addSelection: () => vscode.commands.executeCommand('sidecar.addSelection') as Promise<void>,
      openDiff: (path, oldText, newText) => this.texts.openDiff(path, oldText, newText),
      openText: (text, title) => this.texts.openText(text, title),
      findFiles: (query) => this.files.find(query),
      visibilityChanged: (visible) => this.panelVisibility(visible),
      showReview: (toolCallId) => this.reviews.reveal(toolCallId),
    });
    this.sessions = new Sessions(this.chat, () => this.cwd(), readSettings().initialMode);
    this.chat.sessions = this.sessions;
    // The panel reopens where the user was: the last session of this workspace loads once the agent runs.
    this.sessions.sessionId = extCtx.workspaceState.get<string>(LAST_SESSION_KEY) ?? null;
    this.sessions.onSessionChanged = (id) => void extCtx.workspaceState.update(LAST_SESSION_KEY, id ?? undefined);
    this.sessions.onTurnEnd = (sessionId) => this.turnTokens.turnEnded(sessionId);
    this.sessions.roots = () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    this.status = new StatusItem();
    this.sessions.onState = () => this.status.update(this.sessions.busy, this.pending.size);
    this.disposables.push(
      this.output,
      this.pending,
      this.reviews,
      vscode.window.registerWebviewViewProvider(ChatView.viewId, this.chat, { webviewOptions: { retainContextWhenHidden: true } }),
      vscode.workspace.registerFileSystemProvider(PROPOSAL_SCHEME, this.proposals, { isCaseSensitive: true }),
      vscode.languages.registerCodeLensProvider({ scheme: PROPOSAL_SCHEME }, this.reviews),
      this.pending.onDidChange((n) => this.sessions.setPending(n)),
      this.status,
      this.texts,
      this.files,
      vscode.workspace.registerTextDocumentContentProvider(READONLY_SCHEME, this.texts),
    );
  }

  cwd(): string {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
  }

  registerCommand(name: string, factory: (ctx: Ctx) => (...args: never[]) => unknown): void {
    this.disposables.push(vscode.commands.registerCommand(`sidecar.${name}`, factory(this)));
  }

  private connection(client: LanguageClient): Connection {
    return {
      sendRequest: (type, params) => client.sendRequest(type.method, params),
      sendNotification: (type, params) => client.sendNotification(type.method, params),
    };
  }

  async start(): Promise<void> {
    const settings = readSettings();
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const state = this.extCtx;
    const remembered = state.workspaceState.get<string>(LAST_PYTHON_KEY) ?? state.globalState.get<string>(LAST_PYTHON_KEY);
    const remote = vscode.env.remoteName;
    let python: string;
    try {
      const paths = readPythonPaths();
      this.output.info(`sidecar.pythonPath: ${paths.map((p) => `${p.value} (${p.scope})`).join(', ') || 'not set'}; last used: ${remembered ?? 'none'}; remote: ${remote ?? 'no'}`);
      python = await resolvePython({ settings: paths.map((p) => p.value), remembered, folders, extensionPath: this.extCtx.extensionPath }, remote);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      this.output.error(message);
      await this.sessions.attach(undefined);
      this.sessions.fail();
      this.chat.post({ type: 'error', message });
      if (e instanceof PythonNotFound) {
        const button = remote ? 'Open Remote Settings' : 'Open User Settings';
        void vscode.window.showErrorMessage(message, button).then((choice) => {
          if (!choice) return;
          const command = remote ? 'workbench.action.openRemoteSettings' : 'workbench.action.openSettings';
          void vscode.commands.executeCommand(command, 'sidecar.pythonPath');
        });
      }
      return;
    }
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    const key = await this.extCtx.secrets.get(API_KEY_SECRET);
    if (key) env.ANTHROPIC_API_KEY = key;
    if (settings.apiBaseUrl) env.ANTHROPIC_BASE_URL = settings.apiBaseUrl;
    if (settings.model) env.SIDECAR_MODEL = settings.model;
    if (settings.smallModel) env.SIDECAR_SMALL_MODEL = settings.smallModel;
    if (settings.effort) env.SIDECAR_EFFORT = settings.effort;

    // No `transport` field: plain stdio, without languageclient appending `--stdio` to the arguments.
    const serverOptions: ServerOptions = {
      command: python,
      args: ['-m', 'sidecar', 'serve'],
      options: { cwd: this.cwd(), env },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      initializationOptions: {
        acp: { clientCapabilities: clientCapabilities() },
        settings: sidecarSettings(settings),
        // VS Code's Workspace Trust decides for the sidecar: in Restricted Mode nothing the repository
        // brings (hooks, .mcp.json servers, language servers, outside imports) runs (docs/protocol.md).
        workspaceTrust: vscode.workspace.isTrusted,
      },
    };
    this.output.info(`starting ${python} -m sidecar serve in ${this.cwd()}`);
    const client = new LanguageClient('sidecar', 'Sidecar', serverOptions, clientOptions);
    this.client = client;
    this.registerHandlers(client);
    try {
      await client.start();
    } catch (e) {
      const message = `The agent failed to start: ${e instanceof Error ? e.message : String(e)}`;
      this.output.error(message);
      this.chat.post({ type: 'error', message });
      await this.sessions.attach(undefined);
      this.sessions.fail();
      return;
    }
    // It worked: remembered for the next start (a remote window may not see the User value again).
    void state.workspaceState.update(LAST_PYTHON_KEY, python);
    void state.globalState.update(LAST_PYTHON_KEY, python);
    const experimental = client.initializeResult?.capabilities.experimental as { acp?: AgentCapabilities } | undefined;
    this.agentCapabilities = experimental?.acp;
    this.output.info(`agent capabilities: ${JSON.stringify(this.agentCapabilities ?? null)}`);
    this.panelVisible = undefined;
    this.panelVisibility(this.chat.visible);
    await this.sessions.attach(this.connection(client));
  }

  private panelVisible: boolean | undefined;

  /** `_sidecar/panel_visibility`: while the chat is hidden the sidecar sends `_sidecar/notify`. */
  panelVisibility(visible: boolean): void {
    if (visible === this.panelVisible || !this.client?.isRunning()) return;
    this.panelVisible = visible;
    void this.client.sendNotification(PanelVisibility.method, { visible }).catch(() => undefined);
  }

  /** `_sidecar/notify` (only sent while the panel is hidden): a notification with "Show". */
  private onNotify(p: NotifyParams): void {
    const show = (text: string): void => {
      void vscode.window.showInformationMessage(text, 'Show').then((a) => {
        if (a === 'Show') this.chat.reveal();
      });
    };
    if (p.kind === 'waiting') {
      // An approval raises its own notification (with its buttons); the permission request follows this
      // notification at once, so look a moment later.
      setTimeout(() => {
        if (this.chat.openApprovals(p.sessionId) === 0) show(`Sidecar: ${p.message}`);
      }, 400);
      return;
    }
    if (p.kind === 'turn_ended') {
      const stop = /\((\w+)\)$/.exec(p.message)?.[1];
      show(stop && stop !== 'end_turn' ? `Sidecar: the agent stopped (${stop}).` : 'Sidecar: the agent finished its turn.');
      return;
    }
    show(`Sidecar: ${p.message}`);
  }

  private registerHandlers(client: LanguageClient): void {
    // Counted for the badge, and cancelled by the sidecar or by the end of the session's turn.
    const track = <T>(sessionId: string | undefined, token: CancellationToken, work: (t: CancellationToken) => Promise<T>): Promise<T> =>
      this.pending.track(async () => {
        const linked = this.turnTokens.link(sessionId, token);
        try {
          return await work(linked.token);
        } finally {
          linked.dispose();
        }
      });
    let wasRunning = false;
    this.clientDisposables.push(
      client.onNotification(SessionUpdateNotification.method, (n) => this.sessions.onUpdate(n)),
      client.onRequest(RequestPermission.method, (p, token) =>
        track(p.sessionId, token, (t) => requestPermission(p, readSettings().approvalStyle, t, this.chat)),
      ),
      client.onRequest(ReviewEdit.method, (p, token) =>
        track(p.sessionId, token, async (t) => {
          // The card says it waits for the user's review (with "Open diff"), not "running".
          this.chat.post({ type: 'reviewing', toolCallId: p.toolCallId, waiting: true });
          const r = await this.reviews.review(p, t).finally(() => this.chat.post({ type: 'reviewing', toolCallId: p.toolCallId, waiting: false }));
          // The card shows the user's decision as such, not as the tool's failure.
          if (r.outcome === 'rejected') this.chat.post({ type: 'decided', toolCallId: p.toolCallId, outcome: 'rejected', ...(r.feedback ? { feedback: r.feedback } : {}) });
          return r;
        }),
      ),
      client.onNotification(Notify.method, (p) => this.onNotify(p)),
      client.onNotification(ModelRetry.method, (p) => this.sessions.onRetry(p)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        void client.sendNotification(WorkspaceTrust.method, { trusted: true });
      }),
      client.onRequest(AskUser.method, (p, token) => track(p.sessionId, token, (t) => askUser(p, t))),
      client.onRequest(LspQuery.method, (p, token) => lspQuery(p, token)),
      client.onRequest(Diagnostics.method, (p) => diagnostics(p)),
      client.onDidChangeState((e) => {
        if (e.newState === State.Stopped) {
          this.reviews.cancelAll();
          if (wasRunning) void this.sessions.attach(undefined);
        } else if (e.newState === State.Running) {
          // A restart after a crash: the open session reloads from its saved log.
          if (wasRunning) void this.sessions.attach(this.connection(client));
          wasRunning = true;
        }
      }),
    );
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const d of this.clientDisposables) d.dispose();
    this.clientDisposables = [];
    this.reviews.cancelAll();
    await this.sessions.attach(undefined);
    if (client) {
      try {
        await client.stop(5000);
      } catch (e) {
        this.output.warn(`stopping the agent: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
