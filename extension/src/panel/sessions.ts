/**
 * The chat's session state and the ACP session methods behind it: new / load / list / prompt / cancel /
 * set_mode / set_config_option (the model picker). Transport-free: it talks to a `Connection` (the language client in the extension, a fake in
 * tests) and to a `View` (the webview).
 */
import * as vscode from 'vscode';
import {
  type ContentBlock,
  type ModeId,
  type SessionInfo,
  type SessionNotification,
  SessionCancel,
  SessionList,
  SessionLoad,
  SessionNew,
  SessionPrompt,
  SessionSetConfigOption,
  SessionSetMode,
  type SessionConfigOption,
  type SetConfigOptionParams,
  type SetConfigOptionResult,
  SessionsRewind,
  SessionsCompare,
  type CompareParams,
  type CompareResult,
  SessionsUndoRewind,
  type ModelRetryParams,
  type PromptResult,
  type StopReason,
} from '../protocol';
import type { NoticeLine, RestoreNotice, SessionUpdate } from '../shared/acp';
import type { ContextItem, PromptError, ToView } from '../shared/panelProtocol';
import { relativeTo } from '../shared/paths';
import type { Spend } from '../shared/spend';

/** ACP's "resource not found" (an unknown sessionId). */
export const RESOURCE_NOT_FOUND = -32002;

export interface Connection {
  sendRequest<P, R>(type: { method: string } & object, params: P): Promise<R>;
  sendNotification<P>(type: { method: string } & object, params: P): Promise<void>;
}

export interface View {
  post(message: ToView): void;
}

/**
 * The prompt's content blocks: the typed text, then each attached file, URL and git mention as a link (the
 * sidecar resolves URLs and git), the problems and terminal output as embedded text, a selection as text.
 * A chip that carries an error is not sent.
 */
export function promptBlocks(text: string, context: ContextItem[]): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (text.trim()) blocks.push({ type: 'text', text });
  for (const c of context) {
    if (c.error) continue;
    if (c.kind === 'file' || c.kind === 'url' || c.kind === 'git') {
      blocks.push({ type: 'resource_link', uri: c.uri, name: c.label });
    } else if (c.kind === 'problems' || c.kind === 'terminal') {
      blocks.push({ type: 'resource', resource: { uri: c.uri, text: c.text ?? '', mimeType: 'text/plain' } });
    } else if (c.kind === 'image') {
      if (c.data) blocks.push({ type: 'image', data: c.data, mimeType: c.mimeType ?? 'image/png' });
    } else {
      const where = c.startLine !== undefined ? `lines ${c.startLine + 1}-${(c.endLine ?? c.startLine) + 1} of ` : '';
      const fsPath = c.uri.startsWith('file:') ? vscode.Uri.parse(c.uri).fsPath : c.uri;
      blocks.push({
        type: 'text',
        text: `Selected ${where}${fsPath}:\n\`\`\`${c.languageId ?? ''}\n${c.text ?? ''}\n\`\`\``,
      });
    }
  }
  return blocks;
}

/** A failed prompt's error as the panel gets it: the JSON-RPC error's code, message and data. */
export function promptError(e: unknown): PromptError {
  if (e && typeof e === 'object' && 'message' in e) {
    const r = e as { code?: unknown; message: unknown; data?: unknown };
    return {
      message: String(r.message),
      ...(typeof r.code === 'number' ? { code: r.code } : {}),
      ...(r.data !== undefined && r.data !== null ? { data: r.data } : {}),
    };
  }
  return { message: String(e) };
}

export interface RewindResult {
  restored: string[];
  /** paths whose earlier text was handed back to the editor (an unsaved buffer), not written to disk */
  restoredInEditor?: string[];
  conflicts: { path: string; reason: string }[];
}

/**
 * What the user is told after a rewind: the files put back, and each one left alone with the reason (a
 * file changed since the agent wrote it is never overwritten). Null when there is nothing to say.
 */
export function rewindReport(r: RewindResult, files: boolean, rel: (path: string) => string): { text: string; level: 'info' | 'warning' } | null {
  const restored = r.restored.map(rel);
  const inEditor = (r.restoredInEditor ?? []).map(rel);
  const done = [
    ...(restored.length ? [`Restored ${restored.join(', ')}.`] : []),
    ...(inEditor.length ? [`Put the earlier text of ${inEditor.join(', ')} back in the editor (not saved).`] : []),
  ].join(' ');
  if (r.conflicts.length) {
    const kept = r.conflicts.map((c) => `${rel(c.path)} (${c.reason})`).join('; ');
    return { text: `${done ? `${done} ` : ''}Not restored: ${kept}.`, level: 'warning' };
  }
  if (done) return { text: done, level: 'info' };
  return files ? { text: 'No file to restore: the turns after this message changed none.', level: 'info' } : null;
}

/** The line a tool call's Restore leaves (at the end of the chat). */
export function toolCallRestoreReport(r: RewindResult, rel: (path: string) => string): { text: string; level: 'info' | 'warning' } {
  // (files: false: "nothing restored" is worded for a tool call here, not for a message)
  return rewindReport(r, false, rel) ?? { text: 'No file to restore: that call and the later ones changed none.', level: 'info' };
}

/**
 * The line a replayed restore draws: the live one's words (rewindReport, toolCallRestoreReport, undoReport),
 * under its message for a files-only restore of a message and its undo; null where live drew none.
 */
export function restoreLine(r: RestoreNotice, rel: (path: string) => string): NoticeLine | null {
  const result = { restored: r.restored, restoredInEditor: r.restoredInEditor ?? [], conflicts: r.conflicts };
  const line = r.kind === 'undo' ? undoReport(result, rel) : r.toolCallId ? toolCallRestoreReport(result, rel) : rewindReport(result, r.files, rel);
  if (!line) return null;
  return !r.conversation && !r.toolCallId && r.toMessageId ? { ...line, messageId: r.toMessageId } : line;
}

function isRestoreNotice(v: unknown): v is RestoreNotice {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Partial<RestoreNotice>;
  return (r.kind === 'rewind' || r.kind === 'undo') && Array.isArray(r.restored) && Array.isArray(r.conflicts);
}

/** The line an undone restore leaves beside its message. */
export function undoReport(r: RewindResult, rel: (path: string) => string): { text: string; level: 'info' | 'warning' } {
  const back = r.restored.map(rel);
  const done = back.length ? `Undid the restore: ${back.join(', ')} ${back.length === 1 ? 'is' : 'are'} as before it.` : 'Undid the restore: no file was put back.';
  if (!r.conflicts.length) return { text: done, level: 'info' };
  return { text: `${done} Left as they are: ${r.conflicts.map((c) => `${rel(c.path)} (${c.reason})`).join('; ')}.`, level: 'warning' };
}

export class Sessions {
  sessionId: string | null = null;
  mode: string;
  /** The session's config options (model, effort) as the sidecar last stated them. */
  configOptions: SessionConfigOption[] = [];
  private readonly pendingConfig = new Map<string, string>();
  busy = false;
  ready = false;
  /** The agent could not be started (the panel says so instead of "Starting the agent…"). */
  failed = false;
  list: SessionInfo[] = [];
  /** "N waiting for you": worked out by whoever routes the requests (ctx.ts), at every state message. */
  waiting: () => number = () => 0;
  /**
   * Opening `sessionId` here: true when another chat shows it and took the focus instead (one session, one
   * chat); this chat then stays on its own session.
   */
  shownElsewhere: (sessionId: string) => boolean = () => false;
  private connection: Connection | undefined;
  /** Called when a turn of a session ends (whatever it still asks the user is then moot). */
  onTurnEnd: (sessionId: string) => void = () => undefined;
  /** Called on every state change (the status bar follows it). */
  onState: () => void = () => undefined;
  /** Called when the open session changes (remembered per workspace, reopened after a reload). */
  onSessionChanged: (sessionId: string | null) => void = () => undefined;
  /**
   * Called when this chat stops a turn it leaves (`stopTurn`: another session picked, a new one started, its
   * tab closed), once the cancel is sent: what the chat still asks of that turn is answered as cancelled,
   * since its cards go with the old transcript.
   */
  onStopTurn: () => void = () => undefined;
  /** The running prompt, if any (leaving its session waits for it to end). */
  private turn: Promise<unknown> | undefined;
  /** The workspace roots, for workspace-relative paths in the cards. */
  roots: () => string[] = () => [];
  private prompts = 0;
  /** Settles when the open session is loaded into the agent last attached (see attach). */
  private reopening: Promise<void> = Promise.resolve();

  constructor(
    private readonly view: View,
    private readonly cwd: () => string,
    initialMode: ModeId,
  ) {
    this.mode = initialMode;
  }

  /** A (re)started sidecar: reload the open session from its saved log, or start one. */
  async attach(connection: Connection | undefined): Promise<void> {
    this.connection = connection;
    this.ready = connection !== undefined;
    if (connection) this.failed = false;
    this.busy = false;
    this.pushState();
    if (!connection) return;
    // A prompt sent while the new agent still loads the open session waits for it: before session/load has
    // answered, the agent does not know that session ("Unknown session" after Set API Key or a trust grant).
    const reopened = this.reopen();
    this.reopening = reopened.catch(() => undefined);
    await reopened;
  }

  private async reopen(): Promise<void> {
    await this.refreshList();
    if (!this.sessionId) return;
    try {
      await this.load(this.sessionId);
    } catch (e) {
      // A session that is gone (deleted, another data dir) is forgotten; the panel starts empty.
      if ((e as { code?: unknown }).code === RESOURCE_NOT_FOUND) {
        this.sessionId = null;
        this.onSessionChanged(null);
        this.view.post({ type: 'clear' });
        this.pushState();
      } else {
        this.view.post({ type: 'error', message: `The last session could not be reopened: ${e instanceof Error ? e.message : String(e)}` });
      }
    }
  }

  /** The agent did not start: the status stops saying "Starting the agent…". */
  fail(): void {
    this.failed = true;
    this.ready = false;
    this.pushState();
  }

  pushState(): void {
    this.view.post({
      type: 'state',
      sessionId: this.sessionId,
      sessions: this.list,
      mode: this.mode,
      busy: this.busy,
      ready: this.ready,
      failed: this.failed,
      pending: this.waiting(),
      roots: this.roots(),
      configOptions: this.configOptions,
    });
    this.onState();
  }

  private conn(): Connection {
    if (!this.connection) throw new Error('The agent is not running (see "Sidecar: Show Log").');
    return this.connection;
  }

  async refreshList(): Promise<void> {
    try {
      const r = await this.conn().sendRequest<{ cwd: string }, { sessions: SessionInfo[] }>(SessionList, { cwd: this.cwd() });
      this.list = r?.sessions ?? [];
    } catch {
      this.list = [];
    }
    this.pushState();
  }

  async newSession(clear = true): Promise<string> {
    if (clear) await this.leaveRunning();
    const r = await this.conn().sendRequest<object, { sessionId: string; modes?: { currentModeId: string } | null; configOptions?: SessionConfigOption[] | null }>(SessionNew, {
      cwd: this.cwd(),
      mcpServers: [],
    });
    this.sessionId = r.sessionId;
    this.onSessionChanged(r.sessionId);
    if (clear) this.view.post({ type: 'clear' });
    const current = r.modes?.currentModeId;
    if (current && current !== this.mode) {
      await this.setMode(this.mode as ModeId);
    } else if (current) {
      this.mode = current;
    }
    this.setConfigOptions(r.configOptions);
    // Picks made while no session existed (the options of the previous one were shown) apply to this one.
    const picks = [...this.pendingConfig];
    this.pendingConfig.clear();
    for (const [configId, value] of picks) await this.setConfigOption(configId, value);
    this.pushState();
    void this.refreshList();
    return r.sessionId;
  }

  async load(sessionId: string): Promise<void> {
    if (sessionId !== this.sessionId && this.shownElsewhere(sessionId)) {
      this.pushState(); // the picker goes back to this chat's own session
      return;
    }
    if (sessionId !== this.sessionId) await this.leaveRunning();
    this.sessionId = sessionId;
    this.onSessionChanged(sessionId);
    // The replay's updates come before the answer; the panel holds them and draws the newest turns first.
    this.view.post({ type: 'clear', replay: true });
    this.pushState();
    let r: { modes?: { currentModeId: string } | null; configOptions?: SessionConfigOption[] | null } | null;
    try {
      r = await this.conn().sendRequest<object, typeof r>(SessionLoad, {
        sessionId,
        cwd: this.cwd(),
        mcpServers: [],
      });
    } finally {
      this.view.post({ type: 'replayDone' });
    }
    if (r?.modes?.currentModeId) this.mode = r.modes.currentModeId;
    this.pendingConfig.clear();
    this.setConfigOptions(r?.configOptions);
    this.pushState();
  }

  private setConfigOptions(options: SessionConfigOption[] | null | undefined): void {
    if (Array.isArray(options)) this.configOptions = options;
  }

  /**
   * The model picker (and effort): `session/set_config_option`, whose answer is every option's new state.
   * Without a session yet, the pick is shown at once and sent once `session/new` made one. A refused value
   * (the sidecar names the valid ones) is shown as an error and the selects go back to the session's state.
   */
  async setConfigOption(configId: string, value: string): Promise<void> {
    if (!this.sessionId || !this.connection) {
      this.pendingConfig.set(configId, value);
      this.configOptions = this.configOptions.map((o) => (o.id === configId ? { ...o, currentValue: value } : o));
      this.pushState();
      return;
    }
    try {
      const r = await this.conn().sendRequest<SetConfigOptionParams, SetConfigOptionResult>(SessionSetConfigOption, {
        sessionId: this.sessionId,
        configId,
        value,
      });
      this.setConfigOptions(r?.configOptions);
    } catch (e) {
      this.view.post({ type: 'error', message: promptError(e).message });
    }
    this.pushState();
  }

  async setMode(modeId: ModeId): Promise<void> {
    this.mode = modeId;
    if (this.sessionId && this.connection) {
      await this.conn().sendRequest(SessionSetMode, { sessionId: this.sessionId, modeId });
    }
    this.pushState();
  }

  /** `_sidecar/model_retry`: the panel shows a live line until the turn proceeds. */
  onRetry(p: ModelRetryParams): void {
    if (p.sessionId !== this.sessionId) return;
    this.view.post({ type: 'retry', retry: p });
  }

  onUpdate(n: SessionNotification): void {
    if (n.sessionId !== this.sessionId) return;
    if (n.update.sessionUpdate === 'current_mode_update' && typeof n.update.currentModeId === 'string') {
      this.mode = n.update.currentModeId;
      this.pushState();
    }
    if (n.update.sessionUpdate === 'config_option_update' && Array.isArray(n.update.configOptions)) {
      this.setConfigOptions(n.update.configOptions); // /model, or the agent's Config tool
      this.pushState();
    }
    this.view.post({ type: 'update', update: this.withRestoreLine(n.update) });
  }

  /** A replayed restore's record gets its line, worded here as the live one was (workspace-relative paths). */
  private withRestoreLine(u: SessionUpdate): SessionUpdate {
    if (u.sessionUpdate !== 'agent_message_chunk') return u;
    const record = u._meta?.sidecar?.restoreNotice;
    if (!isRestoreNotice(record)) return u;
    const line = restoreLine(record, (p) => this.relative(p));
    return line ? { ...u, _meta: { ...u._meta, sidecar: { ...u._meta?.sidecar, notice: line } } } : u;
  }

  /**
   * Before this chat shows another session: a turn still running in the current one is stopped, its open
   * questions answered as cancelled, and its end awaited, so its last lines land in its own transcript
   * and no card of it is left that nobody can see (the agent keeps the session; reopening it shows the
   * stopped turn).
   */
  private async leaveRunning(): Promise<void> {
    if (!this.busy || !this.turn) return;
    await this.stopTurn();
    await this.turn.catch(() => undefined);
  }

  /**
   * The chat lets go of its turn (it leaves the session, or its tab closed): `session/cancel` first, when a
   * turn runs, then what the chat asks of it answered as cancelled (`onStopTurn`). ACP's order: an
   * approval answered "cancelled" before the cancel reads to the agent as that one call refused, and the
   * turn would go on to another model request.
   */
  async stopTurn(): Promise<void> {
    if (this.busy) await this.cancel().catch(() => undefined);
    this.onStopTurn();
  }

  prompt(text: string, context: ContextItem[]): Promise<StopReason | 'error'> {
    const turn = this.runPrompt(text, context);
    this.turn = turn;
    return turn;
  }

  private async runPrompt(text: string, context: ContextItem[]): Promise<StopReason | 'error'> {
    const blocks = promptBlocks(text, context);
    if (blocks.length === 0) return 'end_turn';
    // After a restart, the open session is loaded first (its replay clears the transcript; see attach).
    await this.reopening;
    // Echoed at once, before a first session exists (session/new takes a second or two).
    const promptId = `p${++this.prompts}`;
    this.view.post({ type: 'userPrompt', text, context, promptId });
    this.busy = true;
    this.pushState();
    let stop: StopReason | 'error' = 'error';
    let error: PromptError | undefined;
    let spend: Spend | undefined;
    let sessionId = this.sessionId;
    try {
      if (!sessionId) sessionId = await this.newSession(false);
      this.busy = true;
      const r = await this.conn().sendRequest<object, PromptResult>(SessionPrompt, { sessionId, prompt: blocks });
      stop = r.stopReason;
      spend = r._meta?.sidecar?.spend;
      const messageId = r._meta?.sidecar?.userMessageId;
      if (messageId) this.view.post({ type: 'userMessageId', promptId, messageId });
    } catch (e) {
      // Said once, as the turn's end (the panel draws the error line, with Retry when it may pass).
      error = promptError(e);
      const failedId = (error.data as { userMessageId?: unknown } | undefined)?.userMessageId;
      if (typeof failedId === 'string') this.view.post({ type: 'userMessageId', promptId, messageId: failedId });
    } finally {
      this.busy = false;
      if (sessionId) this.onTurnEnd(sessionId);
      this.view.post({ type: 'turnEnd', stopReason: stop, ...(error ? { error } : {}), ...(spend ? { spend } : {}) });
      this.pushState();
      void this.refreshList();
    }
    return stop;
  }

  /**
   * Back to before a user message: files (checkpoints), conversation, or both, through
   * `_sidecar/sessions/rewind`. When the conversation goes back, the transcript drops that message and
   * everything after it (no reload needed: the transcript already matches what a replay would show).
   */
  async rewind(messageId: string, files: boolean, conversation: boolean): Promise<RewindResult> {
    if (!this.sessionId) throw new Error('No session to rewind.');
    if (this.busy) throw new Error('A turn is running: stop it before restoring.');
    const r = (await this.conn().sendRequest(SessionsRewind, { sessionId: this.sessionId, toMessageId: messageId, files, conversation })) as {
      restored?: string[];
      restoredInEditor?: string[];
      conflicts?: { path: string; reason: string }[];
      undoId?: string;
    } | null;
    if (conversation) this.view.post({ type: 'truncate', messageId });
    const result = { restored: r?.restored ?? [], restoredInEditor: r?.restoredInEditor ?? [], conflicts: r?.conflicts ?? [] };
    const report = rewindReport(result, files, (p) => this.relative(p));
    // Beside the message when it stays (files only), with "Undo restore" when the sidecar can put them back;
    // where it was, at the end, when the conversation went back.
    const undo = !conversation && typeof r?.undoId === 'string' ? { undoId: r.undoId } : {};
    if (report) this.view.post({ type: 'notice', ...report, ...(conversation ? {} : { messageId }), ...undo, restored: true });
    return result;
  }

  /**
   * "Undo restore": the files the restore changed put back as they were before it
   * (`_sidecar/sessions/undo_rewind`); the line goes beside `messageId` (a message's restore), else at the end.
   */
  async undoRestore(undoId: string, messageId?: string): Promise<RewindResult> {
    if (!this.sessionId) throw new Error('No session to undo a restore in.');
    if (this.busy) throw new Error('A turn is running: stop it before undoing the restore.');
    const r = (await this.conn().sendRequest(SessionsUndoRewind, { sessionId: this.sessionId, undoId })) as RewindResult | null;
    const result = { restored: r?.restored ?? [], conflicts: r?.conflicts ?? [] };
    this.view.post({ type: 'notice', ...undoReport(result, (p) => this.relative(p)), ...(messageId ? { messageId } : {}), restored: true });
    return result;
  }

  /**
   * "Compare": what restoring the files to before a user message, or to before one writing tool call,
   * would change (`_sidecar/sessions/compare`; nothing is written).
   */
  async compare(target: { messageId?: string; toolCallId?: string }): Promise<CompareResult> {
    if (!this.sessionId) throw new Error('No session to compare.');
    const params: CompareParams = {
      sessionId: this.sessionId,
      ...(target.messageId ? { toMessageId: target.messageId } : {}),
      ...(target.toolCallId ? { toolCallId: target.toolCallId } : {}),
    };
    const r = await this.conn().sendRequest<CompareParams, CompareResult | null>(SessionsCompare, params);
    return { files: r?.files ?? [], conflicts: r?.conflicts ?? [] };
  }

  /** "Restore" on a tool card: the files back to before that call; the conversation stays as it is. */
  async restoreToolCall(toolCallId: string): Promise<RewindResult> {
    if (!this.sessionId) throw new Error('No session to restore.');
    if (this.busy) throw new Error('A turn is running: stop it before restoring.');
    const r = (await this.conn().sendRequest(SessionsRewind, { sessionId: this.sessionId, toolCallId, files: true, conversation: false })) as {
      restored?: string[];
      restoredInEditor?: string[];
      conflicts?: { path: string; reason: string }[];
      undoId?: string;
    } | null;
    const result = { restored: r?.restored ?? [], restoredInEditor: r?.restoredInEditor ?? [], conflicts: r?.conflicts ?? [] };
    const report = toolCallRestoreReport(result, (p) => this.relative(p));
    // The conversation stays, so the sidecar can put the files back: "Undo restore" as after a message's restore.
    const undo = typeof r?.undoId === 'string' ? { undoId: r.undoId } : {};
    this.view.post({ type: 'notice', ...report, ...undo, restored: true });
    return result;
  }

  relativePath(p: string): string {
    return this.relative(p);
  }

  /** "Edit & resend": the turn goes (files and conversation), the edited message is sent in its place. */
  async editResend(messageId: string, text: string, context: ContextItem[]): Promise<RewindResult> {
    const r = await this.rewind(messageId, true, true);
    void this.prompt(text, context);
    return r;
  }

  private relative(p: string): string {
    return relativeTo(p, this.roots()) || p;
  }

  async cancel(): Promise<void> {
    if (this.sessionId && this.connection) await this.conn().sendNotification(SessionCancel, { sessionId: this.sessionId });
  }
}
