/**
 * The chat webview's script: wires the panel's parts and switches the host's messages (`ToView`,
 * shared/panelProtocol.ts) to them. The state between messages is one `PanelState` (state.ts); the
 * transcript's messages are transcript.ts's, tool cards cards.ts's, the footer and plan chrome.ts's,
 * scrolling viewport.ts's, a held `session/load` replay replayView.ts's.
 */
import type { AvailableCommand, SessionUpdate } from '../shared/acp';
import type { FromView, ToView } from '../shared/panelProtocol';
import { Cards } from './cards';
import { Chrome } from './chrome';
import { Composer } from './composer';
import { byId } from './dom';
import { MessageActions, truncateTranscript } from './messageActions';
import { errorView, noticeOf, PANEL_STATE_UPDATES, turnEndOf, turnEndView } from './replay';
import { ReplayView } from './replayView';
import { PanelState } from './state';
import { blockText, Transcript } from './transcript';
import { Viewport } from './viewport';

interface VsCodeApi {
  postMessage(message: FromView): void;
  getState(): unknown;
  setState(state: SavedState): void;
}

/** What the editor keeps for this webview across reloads: the slash commands, and the open session (an
 * editor tab's serializer reopens it: ctx.ts `openTab`). */
interface SavedState {
  commands: AvailableCommand[];
  sessionId?: string | null;
}

/** Updates the kept state with `change` (the rest stays as it was). */
function keep(change: Partial<SavedState>): void {
  const now = vscode.getState();
  const commands = savedCommands(now);
  const sessionId = isRecord(now) && typeof now.sessionId === 'string' ? now.sessionId : null;
  vscode.setState({ commands, sessionId, ...change });
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const post = (m: FromView): void => vscode.postMessage(m);

const state = new PanelState(byId('transcript', 'main'));
const stopBtn = byId('stop', 'button');
const viewport = new Viewport(state.transcript, byId('new-activity', 'button'));
const chrome = new Chrome(post);
const composer = new Composer({ post, isBusy: () => state.busy, onSend: () => viewport.jumpToBottom() });
const actions = new MessageActions({ post, isBusy: () => state.busy, refill: (text) => composer.refill(text) });
const transcript = new Transcript(state, viewport, actions, post);
const cards = new Cards({
  roots: () => state.roots,
  post,
  changed: () => viewport.contentChanged(),
  container: () => state.target,
  breakStream: () => transcript.endStream(),
});
const replay = new ReplayView(state, viewport, transcript, cards, onUpdate);

/** Updates that leave the transcript as it is (a model-retry line stays through them). */
const BESIDE_RETRY: ReadonlySet<string> = new Set(['available_commands_update', 'usage_update', 'current_mode_update', 'config_option_update']);

/** One update, live or replayed; `transcriptOnly` (a replay drawn out of order) skips the panel-state ones. */
function onUpdate(u: SessionUpdate, transcriptOnly = false): void {
  if (u.sessionUpdate !== 'user_message_chunk') state.replayedUser = null;
  if (transcriptOnly && PANEL_STATE_UPDATES.has(u.sessionUpdate)) return;
  if (!state.olderDirty && !BESIDE_RETRY.has(u.sessionUpdate)) transcript.clearRetryLine();
  switch (u.sessionUpdate) {
    case 'agent_message_chunk': {
      const end = turnEndOf(u);
      const notice = noticeOf(u);
      if (end) transcript.drawTurnEnd(turnEndView(end));
      else if (notice) transcript.notice({ ...notice, replayed: true });
      else transcript.appendChunk('agent', blockText(u.content));
      break;
    }
    case 'agent_thought_chunk':
      transcript.appendChunk('thought', blockText(u.content));
      break;
    case 'user_message_chunk':
      transcript.replayedChunk(u);
      break;
    case 'tool_call':
    case 'tool_call_update':
      cards.update(u);
      break;
    case 'plan':
      chrome.plan(u.entries ?? []);
      break;
    case 'usage_update':
      chrome.usage(u.used, u.size);
      chrome.sessionSpend(u._meta?.sidecar?.sessionSpend);
      break;
    case 'current_mode_update':
      if (typeof u.currentModeId === 'string') chrome.mode(u.currentModeId);
      break;
    case 'available_commands_update':
      composer.setCommands(u.availableCommands ?? []);
      // kept by the editor across reloads: the "/" menu works before the first session of the next window
      keep({ commands: u.availableCommands ?? [] });
      break;
    default:
      break;
  }
}

function setBusy(b: boolean): void {
  state.busy = b;
  stopBtn.hidden = !b;
  composer.setEnabled(!b && state.ready);
  actions.setBusy(b, state.transcript);
  transcript.setRetryEnabled(!b && state.ready);
  document.body.dataset.busy = String(b);
}

stopBtn.addEventListener('click', () => post({ type: 'cancel' }));
// Copy buttons inside rendered Markdown (code blocks).
state.transcript.addEventListener('click', (ev) => {
  const t = ev.target;
  if (t instanceof HTMLElement && t.classList.contains('copy-code')) {
    const code = t.closest('.code-block')?.querySelector('code');
    post({ type: 'copy', text: code?.textContent ?? '' });
    t.textContent = 'Copied';
    setTimeout(() => (t.textContent = 'Copy'), 1200);
  }
});
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && state.busy && !composer.menuOpen()) {
    ev.preventDefault();
    post({ type: 'cancel' });
  }
});

// The extension host sends what piled up in one tick as one `batch` (a session/load replay is thousands of
// updates; one message each cost a trip through the editor's webview channel apiece).
window.addEventListener('message', (ev: MessageEvent<ToView>) => handle(ev.data));

function handle(m: ToView): void {
  if (m.type === 'batch') {
    for (const x of m.messages) handle(x);
    return;
  }
  replay.before(m);
  switch (m.type) {
    case 'state':
      if (m.sessionId !== (vscode.getState() as { sessionId?: unknown } | undefined)?.sessionId) keep({ sessionId: m.sessionId });
      state.ready = m.ready;
      if (m.roots) state.roots = m.roots;
      chrome.state(m);
      setBusy(m.busy);
      break;
    case 'clear':
      transcript.clear();
      cards.clear();
      chrome.plan([]);
      chrome.clearUsage();
      viewport.reset();
      replay.start(m.replay === true);
      break;
    case 'update':
      replay.update(m.update);
      break;
    case 'replayDone':
      replay.finish();
      chrome.turnEnded();
      break;
    case 'userPrompt':
      chrome.promptStarted();
      transcript.userMessage(m.text, m.context ?? [], m.promptId);
      break;
    case 'userMessageId':
      transcript.attachMessageId(m.promptId, m.messageId);
      break;
    case 'truncate':
      transcript.endStream();
      truncateTranscript(state.transcript, m.messageId);
      transcript.dropUndo(); // a rewind of the conversation leaves the sidecar nothing to undo
      viewport.contentChanged();
      break;
    case 'notice':
      transcript.notice(m);
      break;
    case 'turnEnd': {
      const e = m.error;
      const error = e ? { ...(e.code !== undefined ? { code: e.code } : {}), message: e.message, data: isRecord(e.data) ? e.data : null } : undefined;
      transcript.drawTurnEnd(turnEndView({ stopReason: m.stopReason, ...(error ? { error } : {}), ...(m.spend ? { spend: m.spend } : {}) }));
      chrome.sessionSpend(m.spend?.session);
      chrome.turnEnded();
      break;
    }
    case 'retry':
      transcript.showRetry(m.retry);
      break;
    case 'approval':
      cards.offer(m.key, m.toolCall, m.options);
      break;
    case 'approvalDone':
      cards.approvalDone(m.key, m.toolCallId, m.label ?? '', m.outcome, m.feedback);
      break;
    case 'decided':
      cards.decided(m.toolCallId, m.outcome, m.feedback);
      break;
    case 'focusCard':
      cards.focus(m.toolCallId);
      break;
    case 'reviewing':
      cards.reviewing(m.toolCallId, m.waiting);
      break;
    case 'visibility':
      viewport.visible(m.visible);
      break;
    case 'focusPrompt':
      // The webview's frame gets the focus a moment after the view is shown.
      composer.focus();
      requestAnimationFrame(() => composer.focus());
      break;
    case 'addContext':
      composer.addContext(m.item);
      break;
    case 'fileResults':
      composer.fileResults(m.requestId, m.items);
      break;
    case 'error':
      transcript.error(errorView(m.message ?? '', null));
      break;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The commands the last session offered, as the editor kept them for this view (`setState`). */
function savedCommands(state: unknown): AvailableCommand[] {
  if (!isRecord(state) || !Array.isArray(state.commands)) return [];
  return state.commands.filter((c): c is AvailableCommand => isRecord(c) && typeof c.name === 'string' && typeof c.description === 'string');
}
composer.setCommands(savedCommands(vscode.getState()));

post({ type: 'ready' });
