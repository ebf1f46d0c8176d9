/**
 * One object owns the language client, the views and every disposable. The client is rebuilt on
 * restart; the handlers it serves are registered here, once per client.
 */
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { CancellationToken } from 'vscode';
import { LanguageClient, type LanguageClientOptions, MessageType, type ServerOptions, ShowMessageNotification, State } from 'vscode-languageclient/node';
import { askUser } from './handlers/askUser';
import { diagnostics, lspQuery } from './handlers/lspQuery';
import { requestPermission } from './handlers/permission';
import { PROPOSAL_SCHEME, ProposalFileSystem, ReviewManager } from './handlers/reviewEdit';
import { ChatView } from './panel/chatView';
import { type Chat, Chats } from './panel/chats';
import { type Connection, Sessions } from './panel/sessions';
import type { ToView } from './shared/panelProtocol';
import { authNotice } from './authNotice';
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
import { AgentEnv, readBundle, SetupError } from './agentEnv';
import { AGENT_DIST, basePythonCandidates, cleanEnv, expandHome, expandVariables, findBasePython, identify, isInside, PythonNotFound, workspaceVenvWithAgent } from './python';
import { FileIndex } from './fileIndex';
import { problemsItem, TerminalLog } from './editorContext';
import { READONLY_SCHEME, ReadonlyTexts } from './readonlyTexts';
import { RestartQueue } from './restartQueue';
import { StatusItem } from './statusItem';
import { readSettings, readWorkspaceScoped, type Settings, sidecarSettings, sidecarWorkspaceSettings, type WorkspaceScoped } from './settings';

export const API_KEY_SECRET = 'sidecar.anthropicApiKey';
/** workspaceState: the session the panel showed last in this workspace (reopened after a reload). */
export const LAST_SESSION_KEY = 'sidecar.lastSessionId';

/** globalState: the User's sidecar.pythonPath as last seen (see withRememberedPython). */
const USER_PYTHON_KEY = 'sidecar.userPythonPath';

/** What a start reads; the restart queue compares it with what the running agent started with. */
interface StartInputs {
  settings: Settings;
  scoped: WorkspaceScoped;
  trusted: boolean;
}

/** The interpreter that runs the agent, where it came from, and the agent version it must report. */
interface AgentChoice {
  python: string;
  source: string;
  expectedVersion?: string;
}

export class Ctx implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  readonly pending = new Pending();
  readonly turnTokens = new TurnTokens();
  readonly proposals = new ProposalFileSystem();
  readonly reviews: ReviewManager;
  readonly chat: ChatView;
  readonly sessions: Sessions;
  /** The side bar's chat and the conversations open in editor tabs ("Open in New Tab"), each with its own session. */
  readonly chats: Chats;
  /** Why the last start failed (a tab opened afterwards says so too); undefined once a start runs. */
  private startError: string | undefined;
  readonly status: StatusItem;
  readonly texts = new ReadonlyTexts();
  readonly files = new FileIndex();
  readonly terminals = new TerminalLog();
  client: LanguageClient | undefined;
  agentCapabilities: AgentCapabilities | undefined;
  private clientDisposables: vscode.Disposable[] = [];
  private readonly disposables: vscode.Disposable[] = [];

  constructor(readonly extCtx: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('Sidecar', { log: true });
    this.reviews = new ReviewManager(this.proposals);
    const sideBar = this.makeChat();
    ({ chat: this.chat, sessions: this.sessions } = sideBar);
    this.chats = new Chats(sideBar, this.pending);
    // The panel reopens where the user was: the last session of this workspace loads once the agent runs.
    this.sessions.sessionId = extCtx.workspaceState.get<string>(LAST_SESSION_KEY) ?? null;
    this.sessions.onSessionChanged = (id) => {
      void extCtx.workspaceState.update(LAST_SESSION_KEY, id ?? undefined);
      this.chats.showWaiting();
    };
    this.status = new StatusItem();
    this.disposables.push(
      this.output,
      this.pending,
      this.reviews,
      vscode.window.registerWebviewViewProvider(ChatView.viewId, this.chat, { webviewOptions: { retainContextWhenHidden: true } }),
      // A tab open at a reload comes back with its session (the webview keeps the id in its state).
      vscode.window.registerWebviewPanelSerializer(ChatView.tabViewType, {
        deserializeWebviewPanel: async (panel, state: unknown) => {
          const id = (state as { sessionId?: unknown } | undefined)?.sessionId;
          // Logged: once in a fresh-clone CI a restored tab stayed blank and the log said nothing of it.
          this.output.info(`restoring a chat tab (session ${typeof id === 'string' ? id : 'none'})`);
          this.openTab(panel, typeof id === 'string' ? id : null);
        },
      }),
      vscode.workspace.registerFileSystemProvider(PROPOSAL_SCHEME, this.proposals, { isCaseSensitive: true }),
      vscode.languages.registerCodeLensProvider({ scheme: PROPOSAL_SCHEME }, this.reviews),
      this.pending.onDidChange(() => this.chats.showWaiting()),
      this.status,
      this.texts,
      this.files,
      this.terminals,
      vscode.workspace.registerTextDocumentContentProvider(READONLY_SCHEME, this.texts),
      // Once, not per client: a grant that arrives while the agent restarts is not lost.
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.onTrustGranted()),
    );
  }

  /**
   * An interpreter or endpoint the workspace names may now be offered (asked first): start again so the
   * question is asked; otherwise the running agent is told. A start under way may have read the old trust:
   * the restart queue starts again only if it did.
   */
  private onTrustGranted(): void {
    const offers = this.workspaceOffers();
    this.output.info(`workspace trust granted${offers ? ' (the workspace names an interpreter or an endpoint)' : ''}`);
    const client = this.client;
    if (!offers && client?.isRunning()) {
      void client.sendNotification(WorkspaceTrust.method, { trusted: true }).catch(() => undefined);
      // The agent knows now: the settings change the grant also fires restarts it only for a setting it lacks.
      this.restarts.told((started) => ({ ...started, trusted: true }));
    } else {
      void this.restartIfChanged('workspace trust granted');
    }
  }

  cwd(): string {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
  }

  /** A chat (its webview's host and its session state): the side bar's, or an editor tab's. */
  private makeChat(): Chat {
    const chat = new ChatView(this.extCtx.extensionUri, {
      mentionFile: () => vscode.commands.executeCommand('sidecar.mentionFile') as Promise<void>,
      addSelection: () => vscode.commands.executeCommand('sidecar.addSelection') as Promise<void>,
      mention: (name) => (name === 'problems' ? problemsItem() : this.terminals.item()),
      openDiff: (path, oldText, newText) => this.texts.openDiff(path, oldText, newText),
      openText: (text, title) => this.texts.openText(text, title),
      openCompare: (result, title, rel) => this.texts.openCompare(result, title, rel),
      findFiles: (query) => this.files.find(query),
      visibilityChanged: () => this.panelVisibility(this.anyChatVisible()),
      showReview: (toolCallId) => this.reviews.reveal(toolCallId),
    });
    // The chat gets every message; a turn that failed for want of a key also raises a notification.
    const view = {
      post: (m: ToView): void => {
        if (m.type === 'turnEnd') this.onTurnError(m.error);
        chat.post(m);
      },
    };
    const sessions = new Sessions(view, () => this.cwd(), readSettings().initialMode);
    chat.sessions = sessions;
    sessions.onTurnEnd = (sessionId) => this.turnTokens.turnEnded(sessionId);
    sessions.onState = () => this.updateStatus();
    sessions.onStopTurn = () => chat.cancelApprovals();
    sessions.roots = () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const entry = { chat, sessions };
    // What waits in a chat depends on the sessions every chat shows: each change of one shows them all anew.
    sessions.waiting = () => this.chats.waitingIn(entry);
    sessions.onSessionChanged = () => this.chats.showWaiting();
    sessions.shownElsewhere = (sessionId) => this.chats.focusElsewhere(entry, sessionId);
    return entry;
  }

  /**
   * "Open in New Tab": a second conversation in an editor tab beside the side bar, its own session on the
   * same agent (both run at once, each with its own transcript and approvals). `panel` is a tab restored
   * after a reload, with the session it showed; one another chat shows already starts empty (one session
   * shows in one chat).
   */
  openTab(panel?: vscode.WebviewPanel, sessionId: string | null = null): void {
    const tab = this.makeChat();
    const p = panel ?? vscode.window.createWebviewPanel(ChatView.tabViewType, 'Sidecar Chat', { viewColumn: vscode.ViewColumn.Active }, tab.chat.webviewOptions());
    p.iconPath = vscode.Uri.joinPath(this.extCtx.extensionUri, 'media', 'sidecar.svg');
    tab.sessions.sessionId = sessionId && !this.chats.showing(sessionId) ? sessionId : null;
    tab.chat.attachPanel(p);
    this.chats.addTab(tab);
    p.onDidDispose(() => {
      // A closed tab's turn stops, and what it asked is answered as cancelled (else it would wait forever).
      this.chats.deleteTab(tab);
      void tab.sessions.stopTurn();
      this.chats.showWaiting();
      this.panelVisibility(this.anyChatVisible());
    });
    const running = this.client?.isRunning() ?? false;
    const shown = tab.sessions.sessionId;
    this.output.info(`chat tab opened${shown ? ` for session ${shown}` : ''}${sessionId && !shown ? ` (session ${sessionId} shows in another chat: not opened twice)` : ''}; agent ${running ? 'running: attaching' : 'not running yet: attached when it starts'}`);
    if (this.client && running) void tab.sessions.attach(this.connection(this.client));
    else if (this.startError !== undefined) {
      tab.sessions.fail();
      tab.chat.post({ type: 'error', message: this.startError });
    }
  }

  /** The chat showing `sessionId` (what it asks goes there), else the side bar's. */
  chatFor(sessionId: string | undefined): ChatView {
    return this.chats.chatFor(sessionId);
  }

  /** The status bar item: working while any chat's turn runs, and what waits anywhere. */
  private updateStatus(): void {
    this.status?.update(this.chats.all().some((c) => c.sessions.busy), this.pending.size);
  }

  private anyChatVisible(): boolean {
    return this.chats.all().some((c) => c.chat.visible);
  }

  /** Each chat's sessions follow the agent (started, stopped, restarted). */
  private async attachAll(connection: Connection | undefined): Promise<void> {
    await Promise.all(this.chats.all().map((c) => c.sessions.attach(connection)));
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

  /**
   * The User's `sidecar.pythonPath` as last seen. A remote window (code-server, Remote-SSH) sometimes starts
   * its extension host before the User value of this machine-overridable setting is visible; the value seen
   * before (only ever a User value, never a workspace's) is used then. A change of the setting updates it.
   */
  private withRememberedPython(s: Settings): Settings {
    if (s.pythonPath) {
      if (this.extCtx.globalState.get<string>(USER_PYTHON_KEY) !== s.pythonPath) void this.extCtx.globalState.update(USER_PYTHON_KEY, s.pythonPath);
      return s;
    }
    const last = this.extCtx.globalState.get<string>(USER_PYTHON_KEY);
    if (!last) return s;
    this.output.info(`sidecar.pythonPath is not visible in this window yet; using the User value seen before: ${last}`);
    return { ...s, pythonPath: last };
  }

  /**
   * After a change of `sidecar.pythonPath`: a User value is remembered. A value that is not visible is not
   * taken for a removal (such a window never shows it); setting it to "" in User settings clears it.
   */
  rememberUserPython(): void {
    const value = readSettings().pythonPath;
    if (value) void this.extCtx.globalState.update(USER_PYTHON_KEY, value);
    else if (vscode.workspace.getConfiguration('sidecar').inspect<string>('pythonPath')?.globalValue === '') void this.extCtx.globalState.update(USER_PYTHON_KEY, undefined);
  }

  /** The storage folder the agent runs in (outside every workspace) and its own environment lives in. */
  storageDir(): string {
    const dir = this.extCtx.globalStorageUri.fsPath;
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** What a start reads (compared by the restart queue: an unchanged one needs no restart). */
  private startInputs(): StartInputs {
    return { settings: readSettings(), scoped: readWorkspaceScoped(), trusted: vscode.workspace.isTrusted };
  }

  async start(): Promise<void> {
    this.startError = undefined;
    const inputs = this.startInputs();
    this.restarts.started(inputs);
    const settings = this.withRememberedPython(inputs.settings);
    const { scoped, trusted } = inputs;
    const remote = vscode.env.remoteName;
    const seen = vscode.workspace.getConfiguration('sidecar').inspect<string>('pythonPath');
    this.output.info(
      `workspace trust: ${trusted ? 'trusted' : 'Restricted Mode'}; remote: ${remote ?? 'no'}; sidecar.pythonPath (User): ${settings.pythonPath || 'not set'}` +
        ` (user ${JSON.stringify(seen?.globalValue ?? null)}, workspace ${JSON.stringify(seen?.workspaceValue ?? null)})`,
    );
    if (scoped.ignored.length) this.output.warn(`ignored from the workspace's settings (only User settings choose these): ${scoped.ignored.map((k) => `sidecar.${k}`).join(', ')}`);
    let agent: AgentChoice;
    try {
      agent = await this.chooseAgent(settings, scoped, trusted);
    } catch (e) {
      await this.startFailed(e);
      return;
    }
    const apiBaseUrl = await this.chooseEndpoint(settings, scoped, trusted);
    const env = cleanEnv(process.env);
    const key = await this.extCtx.secrets.get(API_KEY_SECRET);
    // The key only ever goes to an interpreter the user chose or the extension's own environment.
    if (key) env.ANTHROPIC_API_KEY = key;
    if (apiBaseUrl) env.ANTHROPIC_BASE_URL = apiBaseUrl;
    else if (process.env.ANTHROPIC_BASE_URL) env.ANTHROPIC_BASE_URL = process.env.ANTHROPIC_BASE_URL;
    if (settings.model) env.SIDECAR_MODEL = settings.model;
    if (settings.smallModel) env.SIDECAR_SMALL_MODEL = settings.smallModel;
    if (settings.effort) env.SIDECAR_EFFORT = settings.effort;
    await this.updateNeedsKey(apiBaseUrl, key);

    // Isolated: -I keeps the working directory and PYTHON* variables off sys.path, and the process starts in
    // the extension's storage, outside the workspace (the workspace reaches the agent as session cwd only).
    // No `transport` field: plain stdio, without languageclient appending `--stdio` to the arguments.
    const serverOptions: ServerOptions = {
      command: agent.python,
      args: ['-I', '-m', 'sidecar', 'serve'],
      options: { cwd: this.storageDir(), env },
    };
    const workspaceSettings = sidecarWorkspaceSettings(scoped);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      initializationOptions: {
        acp: { clientCapabilities: clientCapabilities() },
        settings: sidecarSettings(settings, apiBaseUrl),
        // Folder/workspace-scope rules: project scope in the sidecar, only restricting until trusted (contract 2).
        ...(workspaceSettings ? { workspaceSettings } : {}),
        // VS Code's Workspace Trust decides for the sidecar: in Restricted Mode nothing the repository
        // brings (hooks, .mcp.json servers, language servers, outside imports) runs (docs/protocol.md).
        workspaceTrust: trusted,
        client: { name: 'sidecar-vscode', version: this.extensionVersion(), expectedAgentVersion: agent.expectedVersion ?? null },
      },
    };
    this.output.info(`starting ${agent.python} -I -m sidecar serve (${agent.source}) in ${this.storageDir()}; endpoint: ${apiBaseUrl || 'the SDK default'}`);
    const client = new LanguageClient('sidecar', 'Sidecar', serverOptions, clientOptions);
    this.client = client;
    this.registerHandlers(client);
    try {
      await client.start();
    } catch (e) {
      const message = `The agent failed to start: ${e instanceof Error ? e.message : String(e)}`;
      this.output.error(message);
      this.startError = message;
      this.chats.post({ type: 'error', message });
      await this.attachAll(undefined);
      for (const c of this.chats.all()) c.sessions.fail();
      return;
    }
    const info = client.initializeResult?.serverInfo;
    this.output.info(`agent: ${info ? `${info.name} ${info.version ?? ''}` : 'no serverInfo'}`);
    if (agent.expectedVersion && info?.name === AGENT_DIST && info.version && info.version !== agent.expectedVersion) {
      // The extension's own environment must hold the agent this VSIX carries.
      this.output.error(`the agent reports ${info.version}, this extension carries ${agent.expectedVersion}`);
      void vscode.window
        .showErrorMessage(`Sidecar: the agent (${info.version}) is not the one this extension carries (${agent.expectedVersion}).`, 'Retry Setup')
        .then((c) => c && vscode.commands.executeCommand('sidecar.retrySetup'));
    }
    const experimental = client.initializeResult?.capabilities.experimental as { acp?: AgentCapabilities } | undefined;
    this.agentCapabilities = experimental?.acp;
    this.output.info(`agent capabilities: ${JSON.stringify(this.agentCapabilities ?? null)}`);
    this.panelVisible = undefined;
    this.panelVisibility(this.anyChatVisible());
    await this.attachAll(this.connection(client));
    // After the reopened session's replay (which clears the transcript), so the notices stay in view.
    this.attachedClient = client;
    for (const n of this.agentNotices.splice(0)) this.postToChats(n);
  }

  /** The client whose session is attached to the panel (notices of the agent wait for it). */
  private attachedClient: LanguageClient | undefined;
  private agentNotices: ToView[] = [];

  /**
   * `window/showMessage` from the agent (e.g. the extension's version does not fit it: docs/packaging.md):
   * a notification with "Show Log", the log, and a notice in the panel. Replaces languageclient's own toast.
   */
  private onShowMessage(client: LanguageClient, type: MessageType, message: string): void {
    const error = type === MessageType.Error;
    const warning = error || type === MessageType.Warning;
    if (error) this.output.error(message);
    else if (warning) this.output.warn(message);
    else this.output.info(message);
    const shown = error ? vscode.window.showErrorMessage(message, 'Show Log') : warning ? vscode.window.showWarningMessage(message, 'Show Log') : vscode.window.showInformationMessage(message, 'Show Log');
    void shown.then((c) => c && this.output.show());
    const notice: ToView = { type: 'notice', level: warning ? 'warning' : 'info', text: message };
    if (this.attachedClient === client) this.postToChats(notice);
    else this.agentNotices.push(notice);
  }

  private postToChats(m: ToView): void {
    this.chats.post(m);
  }

  /** An authentication failure: one notification naming the key and endpoint, with Set API Key. */
  private onTurnError(error: { code?: number; data?: unknown } | undefined): void {
    void this.extCtx.secrets.get(API_KEY_SECRET).then((key) => {
      const notice = authNotice(error, !!key);
      if (!notice) return;
      if (!key) void this.updateNeedsKey();
      void vscode.window.showWarningMessage(notice.text, ...notice.buttons).then((c) => {
        if (c === 'Set API Key') void vscode.commands.executeCommand('sidecar.setApiKey');
        if (c === 'Set a Custom Endpoint') void vscode.commands.executeCommand('workbench.action.openSettings', 'sidecar.apiBaseUrl');
      });
    });
  }

  /** Whether the workspace names an interpreter or endpoint that a trusted window would ask about. */
  private workspaceOffers(): boolean {
    const scoped = readWorkspaceScoped();
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    return !!scoped.apiBaseUrl || (!readSettings().pythonPath && (!!scoped.pythonPath || folders.some((f) => workspaceVenvWithAgent(f))));
  }

  extensionVersion(): string {
    return String((this.extCtx.extension.packageJSON as { version?: unknown }).version ?? '0.0.0');
  }

  /** The welcome view (viewsWelcome) shows while there is no key and no endpoint of the user's own. */
  async updateNeedsKey(apiBaseUrl?: string, key?: string): Promise<void> {
    const k = key ?? (await this.extCtx.secrets.get(API_KEY_SECRET));
    const base = apiBaseUrl ?? readSettings().apiBaseUrl;
    // An endpoint the user set in settings may want no key; one only in the environment still shows it.
    const needs = !k && !base && !process.env.ANTHROPIC_API_KEY && !process.env.ANTHROPIC_AUTH_TOKEN;
    await vscode.commands.executeCommand('setContext', 'sidecar.needsKey', needs);
  }

  private async startFailed(e: unknown): Promise<void> {
    const message = e instanceof Error ? e.message : String(e);
    this.output.error(message);
    this.startError = message;
    await this.attachAll(undefined);
    for (const c of this.chats.all()) c.sessions.fail();
    this.chats.post({ type: 'error', message });
    // One short message, and a button that does the thing.
    const buttons: { label: string; run: () => unknown }[] = [];
    const retry = { label: 'Retry Setup', run: () => vscode.commands.executeCommand('sidecar.retrySetup') };
    const log = { label: 'Show Log', run: () => this.output.show() };
    if (e instanceof PythonNotFound) {
      const setting = (e as PythonNotFound & { setting?: string }).setting ?? 'sidecar.setupPython';
      const command = vscode.env.remoteName ? 'workbench.action.openRemoteSettings' : 'workbench.action.openSettings';
      buttons.push({ label: 'Open Settings', run: () => vscode.commands.executeCommand(command, setting) }, retry);
    } else if (e instanceof SetupError) {
      buttons.push(retry, log);
    } else {
      buttons.push(log, retry);
    }
    void vscode.window.showErrorMessage(/^Sidecar\b/.test(message) ? message : `Sidecar: ${message}`, ...buttons.map((b) => b.label)).then((choice) => {
      buttons.find((b) => b.label === choice)?.run();
    });
  }

  /**
   * Which interpreter runs the agent: the user's `sidecar.pythonPath`; in a trusted window, a workspace's
   * interpreter the user said yes to (asked once per workspace, remembered in workspace state); else the
   * extension's own environment, made or upgraded here.
   */
  private async chooseAgent(settings: Settings, scoped: WorkspaceScoped, trusted: boolean): Promise<AgentChoice> {
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    if (settings.pythonPath) {
      const python = trusted ? expandVariables(settings.pythonPath, folders[0]) : expandHome(settings.pythonPath);
      if (!trusted && (python.includes('${workspaceFolder}') || isInside(python, folders))) {
        throw Object.assign(
          new PythonNotFound(`"sidecar.pythonPath" (${settings.pythonPath}) points into this workspace, which is not trusted: nothing of it runs in Restricted Mode. Trust the workspace, or point the setting elsewhere.`, [python]),
          { setting: 'sidecar.pythonPath' },
        );
      }
      await this.checkAgent(python, 'sidecar.pythonPath');
      return { python, source: 'sidecar.pythonPath (User settings)' };
    }
    if (trusted) {
      const offered: { python: string; what: string }[] = [];
      if (scoped.pythonPath) offered.push({ python: expandVariables(scoped.pythonPath, folders[0]), what: `this workspace's "sidecar.pythonPath"` });
      for (const f of folders) {
        const venv = workspaceVenvWithAgent(f);
        if (venv) offered.push({ python: venv, what: `this workspace's .venv` });
      }
      for (const o of offered) {
        if (await this.askWorkspacePython(o.python, o.what)) {
          await this.checkAgent(o.python, 'sidecar.pythonPath');
          return { python: o.python, source: `${o.what}, allowed by you` };
        }
      }
    } else if (scoped.pythonPath) {
      this.output.warn(`Restricted Mode: the workspace's sidecar.pythonPath (${scoped.pythonPath}) is not used`);
    }
    return this.ownEnvironment();
  }

  /** Proves `python` is this project's agent (isolated, from outside the workspace); a PythonNotFound if not. */
  private async checkAgent(python: string, setting: string): Promise<void> {
    let id;
    try {
      id = await identify(python, this.storageDir());
    } catch {
      throw Object.assign(new PythonNotFound(`"${setting}" is ${python}, which does not run.`, [python]), { setting });
    }
    if (!id.agentVersion) {
      throw Object.assign(
        new PythonNotFound(`${python} has no "${AGENT_DIST}" package. Install it there ("uv sync" in a sidecar checkout), or clear "${setting}" to use Sidecar's own environment.`, [python]),
        { setting },
      );
    }
    this.output.info(`${python}: ${AGENT_DIST} ${id.agentVersion}, Python ${id.python.join('.')}`);
  }

  /** Asked once per workspace and interpreter (workspace state, never the repository or global state). */
  private async askWorkspacePython(python: string, what: string): Promise<boolean> {
    const key = `sidecar.workspacePython:${python}`;
    const saved = this.extCtx.workspaceState.get<boolean>(key);
    if (saved !== undefined) return saved;
    const yes = 'Run It';
    const no = "Use Sidecar's Own";
    const choice = await vscode.window.showWarningMessage(
      `Run the agent with ${what}?`,
      { modal: true, detail: `${python} would run as the agent, with your API key. Say yes only if you know this interpreter. (Asked once for this workspace.)` },
      // The safe answer first: it is the default button.
      no,
      yes,
    );
    if (choice === undefined) return false;
    await this.extCtx.workspaceState.update(key, choice === yes);
    return choice === yes;
  }

  /** The extension's own environment, made from the VSIX on first start and after an upgrade. */
  private async ownEnvironment(): Promise<AgentChoice> {
    const bundle = readBundle(this.extCtx.extensionPath);
    if (!bundle) {
      throw Object.assign(
        new PythonNotFound('This build of the extension carries no agent (it was not packaged with "npm run package"). Set "sidecar.pythonPath" to a Python with the sidecar-agent package.', []),
        { setting: 'sidecar.pythonPath' },
      );
    }
    const env = new AgentEnv(this.storageDir(), bundle, this.extensionVersion(), (l) => this.output.info(`[setup] ${l}`));
    const need = env.need();
    if (!need) {
      this.output.info(`reusing the agent's environment ${env.envDir} (${bundle.agentVersion}, made by ${env.extensionVersion})`);
      return { python: env.python, source: "Sidecar's own environment", expectedVersion: bundle.agentVersion };
    }
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const base = await findBasePython(basePythonCandidates(readSettings().setupPython, process.env.PATH, folders), this.storageDir());
    const title = need === 'create' ? "Sidecar: setting up the agent (first start)" : `Sidecar: updating the agent to ${bundle.agentVersion}`;
    this.output.info(`${title}: ${base.python} (Python ${base.version.join('.')}) → ${env.envDir}`);
    this.chats.post({ type: 'notice', level: 'info', text: need === 'create' ? 'Setting up the agent (first start)…' : `Updating the agent to ${bundle.agentVersion}…` });
    const inPlace = need === 'upgrade' && env.upgradableInPlace();
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: false }, async (progress) => {
      const step = { report: (message: string) => progress.report({ message }) };
      // The same locked dependencies: only the agent's wheel changes (seconds, no index needed).
      if (inPlace) await env.upgradeWheel(step);
      else await env.create(base.python, base.version.join('.'), step);
    });
    this.output.info(`the agent's environment is ready: ${env.envDir}`);
    return { python: env.python, source: "Sidecar's own environment (new)", expectedVersion: bundle.agentVersion };
  }

  /**
   * Where the key goes: the user's `sidecar.apiBaseUrl` (or the SDK default). A workspace-named endpoint is
   * used only in a trusted window after the user said yes, asked once per workspace and host (workspace
   * state); until then nothing — not even the model look-up — reaches it.
   */
  private async chooseEndpoint(settings: Settings, scoped: WorkspaceScoped, trusted: boolean): Promise<string> {
    const theirs = scoped.apiBaseUrl;
    if (!theirs || theirs === settings.apiBaseUrl) return settings.apiBaseUrl;
    let host: string;
    try {
      host = new URL(theirs).host;
    } catch {
      this.output.warn(`the workspace's sidecar.apiBaseUrl is not a URL (${theirs}); not used`);
      return settings.apiBaseUrl;
    }
    if (!trusted) {
      this.output.warn(`Restricted Mode: the workspace's sidecar.apiBaseUrl (${host}) is not used`);
      return settings.apiBaseUrl;
    }
    const key = `sidecar.workspaceEndpoint:${host}`;
    let yes = this.extCtx.workspaceState.get<boolean>(key);
    if (yes === undefined) {
      const use = `Send to ${host}`;
      const keep = settings.apiBaseUrl ? 'Keep My Endpoint' : 'Keep Anthropic';
      const choice = await vscode.window.showWarningMessage(
        `This workspace's settings send your API key and prompts to ${host}. Use it?`,
        { modal: true, detail: `"sidecar.apiBaseUrl": "${theirs}" comes from this workspace's settings, not yours. (Asked once for this workspace and host.)` },
        // The safe answer first: it is the default button.
        keep,
        use,
      );
      yes = choice === use;
      if (choice !== undefined) await this.extCtx.workspaceState.update(key, yes);
    }
    this.output.info(`the workspace's endpoint ${host}: ${yes ? 'used (you allowed it)' : 'not used'}`);
    return yes ? theirs : settings.apiBaseUrl;
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
        if (a === 'Show') this.chatFor(p.sessionId).reveal();
      });
    };
    if (p.kind === 'waiting') {
      // An approval raises its own notification (with its buttons); the permission request follows this
      // notification at once, so look a moment later.
      setTimeout(() => {
        if (this.chats.all().every((c) => c.chat.openApprovals(p.sessionId) === 0)) show(`Sidecar: ${p.message}`);
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
      }, sessionId);
    let wasRunning = false;
    this.clientDisposables.push(
      // Each chat takes its own session's updates (Sessions.onUpdate drops the others).
      client.onNotification(SessionUpdateNotification.method, (n) => {
        for (const c of this.chats.all()) c.sessions.onUpdate(n);
      }),
      client.onRequest(RequestPermission.method, (p, token) =>
        track(p.sessionId, token, (t) => requestPermission(p, readSettings().approvalStyle, t, this.chatFor(p.sessionId))),
      ),
      client.onRequest(ReviewEdit.method, (p, token) =>
        track(p.sessionId, token, async (t) => {
          const chat = this.chatFor(p.sessionId);
          // The card says it waits for the user's review (with "Open diff"), not "running".
          chat.post({ type: 'reviewing', toolCallId: p.toolCallId, waiting: true });
          const r = await this.reviews.review(p, t).finally(() => chat.post({ type: 'reviewing', toolCallId: p.toolCallId, waiting: false }));
          // The card shows the user's decision as such, not as the tool's failure.
          if (r.outcome === 'rejected') chat.post({ type: 'decided', toolCallId: p.toolCallId, outcome: 'rejected', ...(r.feedback ? { feedback: r.feedback } : {}) });
          return r;
        }),
      ),
      client.onNotification(Notify.method, (p) => this.onNotify(p)),
      client.onNotification(ShowMessageNotification.type, (p) => this.onShowMessage(client, p.type, p.message)),
      client.onNotification(ModelRetry.method, (p) => {
        for (const c of this.chats.all()) c.sessions.onRetry(p);
      }),
      client.onRequest(AskUser.method, (p, token) => track(p.sessionId, token, (t) => askUser(p, t))),
      client.onRequest(LspQuery.method, (p, token) => lspQuery(p, token)),
      client.onRequest(Diagnostics.method, (p) => diagnostics(p)),
      client.onDidChangeState((e) => {
        if (e.newState === State.Stopped) {
          this.reviews.cancelAll();
          if (wasRunning) void this.attachAll(undefined);
        } else if (e.newState === State.Running) {
          // A restart after a crash: the open session reloads from its saved log.
          if (wasRunning) void this.attachAll(this.connection(client));
          wasRunning = true;
        }
      }),
    );
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.attachedClient = undefined;
    this.agentNotices = [];
    for (const d of this.clientDisposables) d.dispose();
    this.clientDisposables = [];
    this.reviews.cancelAll();
    await this.attachAll(undefined);
    if (client) {
      try {
        await client.stop(5000);
      } catch (e) {
        this.output.warn(`stopping the agent: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  private readonly restarts = new RestartQueue<StartInputs>(
    async () => {
      await this.stop();
      await this.start();
    },
    () => this.startInputs(),
    (line) => this.output.info(line),
  );

  /** Stops and starts the agent, after any restart under way (a user's request: always runs). */
  restart(): Promise<void> {
    return this.restarts.restart();
  }

  /** A settings change or a trust grant: restarts only if what the agent starts with changed. */
  restartIfChanged(why: string): Promise<void> {
    return this.restarts.restartIfChanged(why);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
