/**
 * The chat webview's script: renders the transcript from `session/update`s and sends the user's actions
 * to the extension. Markdown in markdown.ts, tool cards in cards.ts, the scroll rule in scroll.ts.
 */
import { Cards, type PermissionOptionView } from './cards';
import { Composer } from './composer';
import { pickerSelects, renderPicker } from './configPicker';
import { md } from './markdown';
import { MessageActions, truncateTranscript } from './messageActions';
import { errorView, type ErrorView, type ModelRetry, OlderTurns, PANEL_STATE_UPDATES, planReplay, RetryLine, sentPrompt, turnEndOf, type TurnEndView, turnEndView } from './replay';
import { ScrollFollower, atBottom } from './scroll';
import { tokenSize } from './summary';
import type { SessionConfigOption } from '../shared/configOptions';

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

export interface ContextItem {
  kind: 'file' | 'selection' | 'image';
  uri: string;
  label: string;
  text?: string;
  startLine?: number;
  endLine?: number;
  data?: string;
  mimeType?: string;
}

interface SessionInfo {
  sessionId: string;
  title?: string | null;
  updatedAt?: string | null;
}

type Update = Record<string, unknown> & { sessionUpdate: string };

const vscode = acquireVsCodeApi();

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const transcript = $<HTMLElement>('transcript');
const stopBtn = $<HTMLButtonElement>('stop');
const modeSel = $<HTMLSelectElement>('mode');
const configEl = $<HTMLElement>('config');
const sessionsSel = $<HTMLSelectElement>('sessions');
const statusEl = $<HTMLElement>('status');
const usageEl = $<HTMLElement>('usage');
const planEl = $<HTMLElement>('plan');
const pill = $<HTMLButtonElement>('new-activity');

let busy = false;
let ready = false;
let roots: string[] = [];
/** The message element receiving streamed chunks, and its raw Markdown. */
let streaming: { el: HTMLElement; kind: string; text: string; wrap: HTMLElement; started: number } | null = null;
/** Where messages, cards and turn ends are appended: the transcript, or a detached piece of older replayed turns. */
let target: HTMLElement = transcript;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// ------------------------------------------------------------------------------------ scrolling

const follower = new ScrollFollower();
// Where our own last scroll put the view. Its scroll event is not the user's (content may have grown
// since, so it would look like "scrolled up"); but a user scroll coalesced into the same event leaves the
// view elsewhere, so only an event that finds the view where we put it is ignored.
let programmaticTop: number | null = null;
transcript.addEventListener('scroll', () => {
  const ours = programmaticTop !== null && Math.abs(transcript.scrollTop - programmaticTop) <= 1;
  programmaticTop = null;
  if (ours) return;
  follower.onScroll(transcript);
  pill.hidden = !follower.unseen;
});

function scrollToBottom(): void {
  toBottom();
  settleAtBottom();
}

function toBottom(): void {
  const before = transcript.scrollTop;
  transcript.scrollTop = transcript.scrollHeight;
  if (Math.abs(transcript.scrollTop - before) > 1) programmaticTop = transcript.scrollTop;
}

// The transcript's messages are laid out only near the view (`content-visibility: auto` in chat.css: a
// 300-turn replay then lays out one screenful, not every turn); until shown, one that never was counts at
// an estimated height. A jump to the bottom lands where the estimates said and the messages it brings into
// view take their real height in the next frame, so while following, the view goes to the bottom again
// for a few frames (a user scroll meanwhile stops following, and this).
const SETTLE_FRAMES = 4;
let settleLeft = 0;
let settling = false;
function settleAtBottom(): void {
  settleLeft = SETTLE_FRAMES;
  if (settling) return;
  settling = true;
  const step = (): void => {
    if (!follower.following || settleLeft <= 0) {
      settling = false;
      return;
    }
    settleLeft -= 1;
    if (!atBottom(transcript, 1)) toBottom();
    requestAnimationFrame(step);
  };
  requestAnimationFrame(step);
}

/** Content grew: follow when at the bottom, else show the pill. Reads the layout (scrollHeight). */
function followContent(): void {
  if (follower.onContent() === 'scroll') scrollToBottom();
  pill.hidden = !follower.unseen;
  document.body.dataset.following = String(follower.following);
}

// Content changes are followed once per animation frame, not once per update: reading scrollHeight after
// each change forced a layout of the whole transcript per `session/update` (a 300-turn replay is ~2,700 of
// them, each laying out a transcript that keeps growing).
let followPending = false;
function contentChanged(): void {
  if (followPending) return;
  followPending = true;
  requestAnimationFrame(() => {
    followPending = false;
    followContent();
  });
}

function jumpToBottom(): void {
  follower.jump();
  pill.hidden = true;
  scrollToBottom();
}
pill.addEventListener('click', jumpToBottom);

// ------------------------------------------------------------------------------------ messages

function renderMarkdown(target: HTMLElement, text: string): void {
  target.innerHTML = md.render(text);
}

// Messages whose Markdown changed since the last frame. A message can stop being the streaming one (a tool
// card or the turn's end arrives) before its frame: it is still rendered, with its last chunk.
const dirty = new Set<{ el: HTMLElement; text: string }>();
let pendingRender = false;
function scheduleRender(): void {
  if (olderDirty) {
    // drawing older replayed turns apart: rendered when the piece is done, before it is shown
    if (streaming) olderDirty.add(streaming);
    return;
  }
  if (streaming) dirty.add(streaming);
  if (pendingRender) return;
  pendingRender = true;
  requestAnimationFrame(() => {
    pendingRender = false;
    for (const m of dirty) renderMarkdown(m.el, m.text);
    dirty.clear();
    followContent();
  });
}

function endStream(): void {
  if (streaming?.kind === 'thought') finishThought(streaming);
  streaming = null;
}

function finishThought(s: { wrap: HTMLElement; started: number }): void {
  const label = s.wrap.querySelector('summary .thought-label');
  const secs = Math.max(1, Math.round((performance.now() - s.started) / 1000));
  if (label && s.wrap.dataset.live === 'true') label.textContent = `Thought for ${secs} s`;
  s.wrap.dataset.live = 'false';
}

function copyButton(getText: () => string, cls = 'copy-msg'): HTMLButtonElement {
  const b = el('button', `${cls} secondary`, 'Copy');
  b.title = 'Copy';
  b.addEventListener('click', (ev) => {
    ev.stopPropagation();
    vscode.postMessage({ type: 'copy', text: getText() });
    b.textContent = 'Copied';
    setTimeout(() => (b.textContent = 'Copy'), 1200);
  });
  return b;
}

function appendChunk(kind: 'agent' | 'thought' | 'user', text: string, live = true): void {
  if (!streaming || streaming.kind !== kind) {
    endStream();
    const body = el('div', 'body markdown');
    let wrap: HTMLElement;
    if (kind === 'thought') {
      // Collapsed to one line ("Thought for 4 s"); expands on click.
      wrap = el('details', 'msg thought');
      wrap.dataset.live = String(live);
      const sum = el('summary');
      sum.appendChild(el('span', 'thought-label', live ? 'Thinking…' : 'Thought'));
      wrap.append(sum, body);
    } else {
      wrap = el('div', `msg ${kind}`);
      wrap.appendChild(body);
    }
    const s = { el: body, kind, text: '', wrap, started: performance.now() };
    if (kind === 'agent') wrap.appendChild(copyButton(() => s.text));
    target.appendChild(wrap);
    streaming = s;
  }
  streaming.text += text;
  scheduleRender();
}

function blockText(content: unknown): string {
  const c = content as { type?: string; text?: string; uri?: string; name?: string } | undefined;
  if (!c) return '';
  if (c.type === 'text') return c.text ?? '';
  if (c.type === 'resource_link') return `[${c.name ?? c.uri}](${c.uri})`;
  if (c.type === 'image') return '[image]';
  return '';
}

const cards = new Cards({
  roots: () => roots,
  post: (m) => vscode.postMessage(m),
  changed: contentChanged,
  container: () => target,
  breakStream: endStream,
});

function plan(entries: { content: string; status: string }[]): void {
  planEl.hidden = entries.length === 0;
  planEl.textContent = '';
  planEl.appendChild(el('div', 'label', 'Plan'));
  const ul = el('ul');
  for (const e of entries) {
    const li = el('li', `plan-entry ${e.status}`);
    const box = el('input') as HTMLInputElement;
    box.type = 'checkbox';
    box.disabled = true;
    box.checked = e.status === 'completed';
    li.appendChild(box);
    li.appendChild(el('span', '', e.content));
    ul.appendChild(li);
  }
  planEl.appendChild(ul);
}

const numbers = new Intl.NumberFormat();

function usage(u: Update): void {
  const used = typeof u.used === 'number' ? u.used : undefined;
  const size = typeof u.size === 'number' ? u.size : undefined;
  if (used === undefined) return;
  usageEl.textContent = size ? `${Math.round((used / size) * 100)}% of ${tokenSize(size)}` : `${numbers.format(used)} tokens`;
  usageEl.title = size ? `Context: ${numbers.format(used)} of ${numbers.format(size)} tokens used` : `Context: ${numbers.format(used)} tokens`;
  usageEl.dataset.used = String(used);
  const bar = usageEl.parentElement?.querySelector('.usage-bar-fill') as HTMLElement | null;
  if (bar && size) bar.style.width = `${Math.min(100, (used / size) * 100)}%`;
}

/** One update, live or replayed; `transcriptOnly` (a replay drawn out of order) skips the panel-state ones. */
function onUpdate(u: Update, transcriptOnly = false): void {
  if (u.sessionUpdate !== 'user_message_chunk') replayedUser = null;
  if (transcriptOnly && PANEL_STATE_UPDATES.has(u.sessionUpdate)) return;
  if (!olderDirty && u.sessionUpdate !== 'available_commands_update' && u.sessionUpdate !== 'usage_update' && u.sessionUpdate !== 'current_mode_update' && u.sessionUpdate !== 'config_option_update') clearRetryLine();
  switch (u.sessionUpdate) {
    case 'agent_message_chunk': {
      const end = turnEndOf(u);
      if (end) drawTurnEnd(turnEndView(end));
      else appendChunk('agent', blockText(u.content));
      break;
    }
    case 'agent_thought_chunk':
      appendChunk('thought', blockText(u.content));
      break;
    case 'user_message_chunk':
      replayedChunk(u);
      break;
    case 'tool_call':
    case 'tool_call_update':
      cards.update(u);
      break;
    case 'plan':
      plan((u.entries as { content: string; status: string }[]) ?? []);
      break;
    case 'usage_update':
      usage(u);
      break;
    case 'current_mode_update':
      if (typeof u.currentModeId === 'string') modeSel.value = u.currentModeId;
      break;
    case 'available_commands_update':
      composer.setCommands((u.availableCommands as { name: string; description: string; input?: { hint?: string } | null }[]) ?? []);
      break;
    default:
      break;
  }
}

function setBusy(b: boolean): void {
  busy = b;
  stopBtn.hidden = !b;
  composer.setEnabled(!b && ready);
  actions.setBusy(b, transcript);
  for (const r of retryButtons) r.disabled = b || !ready;
  document.body.dataset.busy = String(b);
}

const composer = new Composer({
  post: (m) => vscode.postMessage(m),
  isBusy: () => busy,
  onSend: () => jumpToBottom(),
});

const actions = new MessageActions({
  post: (m) => vscode.postMessage(m),
  isBusy: () => busy,
  refill: (text) => composer.refill(text),
});

stopBtn.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
$('new-session').addEventListener('click', () => vscode.postMessage({ type: 'newSession' }));
modeSel.addEventListener('change', () => vscode.postMessage({ type: 'setMode', modeId: modeSel.value }));
sessionsSel.addEventListener('change', () => {
  if (sessionsSel.value) vscode.postMessage({ type: 'loadSession', sessionId: sessionsSel.value });
});
// Copy buttons inside rendered Markdown (code blocks).
transcript.addEventListener('click', (ev) => {
  const t = ev.target as HTMLElement;
  if (t.classList.contains('copy-code')) {
    const code = t.closest('.code-block')?.querySelector('code');
    vscode.postMessage({ type: 'copy', text: code?.textContent ?? '' });
    t.textContent = 'Copied';
    setTimeout(() => (t.textContent = 'Copy'), 1200);
  }
});
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && busy && !composer.menuOpen()) {
    ev.preventDefault();
    vscode.postMessage({ type: 'cancel' });
  }
});

function sessionLabel(s: SessionInfo): string {
  const when = s.updatedAt ? ` · ${s.updatedAt.replace('T', ' ').slice(0, 16)}` : '';
  return `${s.title || s.sessionId.slice(0, 8)}${when}`;
}

function state(m: { sessionId: string | null; sessions: SessionInfo[]; mode: string; busy: boolean; ready: boolean; failed?: boolean; pending: number; roots?: string[]; configOptions?: SessionConfigOption[] }): void {
  ready = m.ready;
  if (m.roots) roots = m.roots;
  sessionsSel.textContent = '';
  const current = el('option', '', m.sessionId ? 'Current session' : 'No session yet') as HTMLOptionElement;
  current.value = '';
  sessionsSel.appendChild(current);
  for (const s of m.sessions) {
    const o = el('option', '', sessionLabel(s)) as HTMLOptionElement;
    o.value = s.sessionId;
    sessionsSel.appendChild(o);
  }
  sessionsSel.value = m.sessionId && m.sessions.some((s) => s.sessionId === m.sessionId) ? m.sessionId : '';
  modeSel.value = m.mode;
  renderPicker(configEl, pickerSelects(m.configOptions), (configId, value) => vscode.postMessage({ type: 'setConfigOption', configId, value }));
  statusEl.textContent = !m.ready ? (m.failed ? 'The agent is not running (see the error below).' : 'Starting the agent…') : m.pending > 0 ? `${m.pending} waiting for you` : '';
  document.body.dataset.failed = String(Boolean(m.failed));
  document.body.dataset.ready = String(m.ready);
  document.body.dataset.sessionId = m.sessionId ?? '';
  setBusy(m.busy);
}

/** A user message as the panel draws it, live or replayed: the text, then a chip or thumbnail per item. */
function fillUser(wrap: HTMLElement, text: string, context: ContextItem[]): void {
  wrap.textContent = '';
  wrap.appendChild(el('div', 'body', text));
  for (const c of context) {
    if (c.kind === 'image' && c.data) {
      const img = el('img', 'thumb');
      img.src = `data:${c.mimeType};base64,${c.data}`;
      img.alt = c.label;
      wrap.appendChild(img);
    } else {
      wrap.appendChild(el('span', 'chip', c.kind === 'file' ? `@${c.label}` : c.label));
    }
  }
  actions.remember(wrap, text, context);
}

function userMessage(text: string, context: ContextItem[], promptId?: string): void {
  endStream();
  replayedUser = null;
  dropRetryButtons();
  const wrap = el('div', 'msg user');
  if (promptId) {
    wrap.dataset.promptId = promptId;
    liveEchoes.add(wrap);
  }
  fillUser(wrap, text, context);
  transcript.appendChild(wrap);
  jumpToBottom();
}

/** Live echoes still carrying their local prompt id (dropped at the turn's end). */
const liveEchoes = new Set<HTMLElement>();

/** The replayed prompt being rebuilt: its chunks share one `messageId` (one prompt is one message). */
let replayedUser: { key: string; blocks: Record<string, unknown>[]; wrap: HTMLElement } | null = null;

function replayedChunk(u: Update): void {
  const key = typeof u.messageId === 'string' ? u.messageId : '';
  const block = (u.content ?? {}) as Record<string, unknown>;
  if (!replayedUser || replayedUser.key !== key) {
    endStream();
    dropRetryButtons();
    const wrap = el('div', 'msg user');
    target.appendChild(wrap);
    replayedUser = { key, blocks: [], wrap };
  }
  replayedUser.blocks.push(block);
  const sent = sentPrompt(replayedUser.blocks, roots);
  fillUser(replayedUser.wrap, sent.text, sent.context as ContextItem[]);
  const meta = (u._meta as { sidecar?: { userMessageId?: unknown } } | undefined)?.sidecar;
  if (typeof meta?.userMessageId === 'string') actions.attach(replayedUser.wrap, meta.userMessageId);
  contentChanged();
}

// ------------------------------------------------------------------------------------ turn ends, errors, retries

/** The Retry buttons in the transcript (only the last failure keeps one); kept here, not queried per update. */
const retryButtons = new Set<HTMLButtonElement>();

/** An error line; a retryable one offers Retry, which sends the user message before it again. */
function errorLine(v: ErrorView): HTMLElement {
  const line = el('div', 'error');
  line.appendChild(el('span', 'error-text', v.message));
  if (v.retry) {
    const b = el('button', 'retry-btn', 'Retry');
    retryButtons.add(b);
    b.title = 'Send the last message again';
    b.disabled = busy || !ready;
    b.addEventListener('click', () => {
      if (busy || !ready) return;
      let prev = line.previousElementSibling;
      while (prev && !(prev as HTMLElement).classList.contains('user')) prev = prev.previousElementSibling;
      const sent = prev ? actions.sentOf(prev as HTMLElement) : undefined;
      if (!sent) return;
      b.remove();
      retryButtons.delete(b);
      vscode.postMessage({ type: 'prompt', text: sent.text, context: sent.context });
    });
    line.appendChild(b);
  }
  return line;
}

function dropRetryButtons(): void {
  for (const b of retryButtons) b.remove();
  retryButtons.clear();
}

/** The end of a turn, live or replayed: the note ("Stopped."), the error line, then the marker. */
function drawTurnEnd(v: TurnEndView): void {
  endStream();
  replayedUser = null;
  if (!olderDirty) clearRetryLine();
  if (v.note) target.appendChild(el('div', `turn-end ${v.reason}`, v.note));
  if (v.error) target.appendChild(errorLine(v.error));
  const end = el('div', 'turn-marker');
  end.dataset.stopReason = v.reason;
  target.appendChild(end);
  // The live echo's local id has served (the message has its sidecar id by now): live and replayed match.
  for (const w of liveEchoes) delete w.dataset.promptId;
  liveEchoes.clear();
  contentChanged();
}

const retryLine = new RetryLine();
let retryEl: HTMLElement | null = null;
let retryTimer: ReturnType<typeof setInterval> | undefined;

/** `_sidecar/model_retry`: a live line at the bottom of the transcript, counting down to the next attempt. */
function showRetry(r: ModelRetry): void {
  endStream();
  retryLine.show(r);
  if (!retryEl) {
    retryEl = el('div', 'retry-line');
    retryEl.setAttribute('role', 'status');
  }
  transcript.appendChild(retryEl);
  retryEl.textContent = retryLine.text();
  if (r.message) retryEl.title = r.message;
  if (retryTimer === undefined) {
    retryTimer = setInterval(() => {
      if (retryEl) retryEl.textContent = retryLine.text();
    }, 500);
  }
  contentChanged();
}

function clearRetryLine(): void {
  retryLine.clear();
  if (retryTimer !== undefined) clearInterval(retryTimer);
  retryTimer = undefined;
  retryEl?.remove();
  retryEl = null;
}

// ------------------------------------------------------------------------------------ session/load replays

// A `session/load` replay (~2,700 updates for 300 turns) comes between a `clear` with `replay: true` and a
// `replayDone` (sent when the load answered). Drawing each update as it came built every turn's DOM and
// Markdown, oldest first, while the later batches waited behind that work, so the turns the user looks at
// (the last ones) came last. The replay is now held as it arrives (an array push each), then drawn newest
// turns first: the panel state (usage, mode, commands, plan) as the replay leaves it, the last turns at
// once, and the older ones in idle time, a few turns at a time, each piece drawn apart and put above the
// transcript in one insertion (the view stays at the bottom, or where the user scrolled to). The end is
// the DOM the replay drawn in order gives (replay.ts plans the pieces; e2e/webview-replay.test.mjs checks).

/** The replay being received, or null. */
let replaying: Update[] | null = null;
/** The older turns still to draw. */
let older: OlderTurns<HTMLElement> | null = null;
/** While an older piece is drawn: its messages whose Markdown is rendered before it is shown. */
let olderDirty: Set<{ el: HTMLElement; text: string }> | null = null;
const waitLine = el('div', 'replay-wait', 'Opening the conversation…');

function finishReplay(): void {
  const updates = replaying;
  replaying = null;
  waitLine.remove();
  if (!updates) return;
  const plan = planReplay(updates);
  for (const u of plan.state) onUpdate(u);
  for (let i = plan.tailStart; i < updates.length; i++) onUpdate(updates[i] as Update, true);
  if (!plan.pieces.length) return;
  older = new OlderTurns<HTMLElement>(
    {
      draw: (start, end) => drawOlder(updates, start, end),
      prepend: prependOlder,
      idle: (run) => {
        if (typeof requestIdleCallback === 'function') requestIdleCallback((d) => run(d.didTimeout ? 8 : Math.min(20, Math.max(4, d.timeRemaining()))), { timeout: 100 });
        else setTimeout(() => run(8), 0);
      },
      now: () => performance.now(),
    },
    plan.pieces,
  );
  older.start();
}

/** Older replayed turns drawn into a detached box; what the live transcript tracks is left as it was. */
function drawOlder(updates: Update[], start: number, end: number): HTMLElement {
  const box = el('div');
  const saved = { streaming, replayedUser };
  const retries = [...retryButtons];
  const echoes = [...liveEchoes];
  retryButtons.clear();
  liveEchoes.clear();
  streaming = null;
  replayedUser = null;
  target = box;
  const rendered = new Set<{ el: HTMLElement; text: string }>();
  olderDirty = rendered;
  try {
    for (let i = start; i < end; i++) onUpdate(updates[i] as Update, true);
    endStream();
    for (const m of rendered) renderMarkdown(m.el, m.text);
    // The next prompt (drawn already, below) removed these, as it does in order.
    dropRetryButtons();
  } finally {
    olderDirty = null;
    target = transcript;
    ({ streaming, replayedUser } = saved);
    for (const b of retries) retryButtons.add(b);
    for (const w of echoes) liveEchoes.add(w);
  }
  return box;
}

/** Puts drawn older turns above the transcript; the view keeps to the bottom, or to what the user looks at. */
function prependOlder(boxes: HTMLElement[]): void {
  const piece = document.createDocumentFragment();
  for (const b of boxes) piece.append(...Array.from(b.childNodes));
  const fromBottom = follower.following ? null : transcript.scrollHeight - transcript.scrollTop;
  transcript.prepend(piece);
  // The last piece: the replay's updates are let go.
  if (older?.done) older = null;
  if (fromBottom === null) {
    scrollToBottom();
  } else {
    transcript.scrollTop = transcript.scrollHeight - fromBottom;
    programmaticTop = transcript.scrollTop;
  }
}

/** The whole replay in the transcript now (the older turns too). */
/** A live update of a tool call whose card is in an older piece not drawn yet. */
function needsOlderCard(u: Update): boolean {
  return u.sessionUpdate === 'tool_call_update' && typeof u.toolCallId === 'string' && !cards.has(u.toolCallId);
}

function drainReplay(): void {
  if (replaying) finishReplay();
  older?.drain();
  older = null;
}

/** While a replay is held, these go through; any other message draws the replay first (order kept). */
const BESIDE_REPLAY = new Set(['state', 'fileResults', 'addContext', 'update', 'replayDone', 'clear']);
/** These need every turn in the transcript (they find a message or card by its id). */
const WHOLE_TRANSCRIPT = new Set(['truncate', 'focusCard', 'approval', 'approvalDone', 'decided']);

type Message = { type: string } & Record<string, unknown>;

// The extension host sends what piled up in one tick as one `batch` (a session/load replay is thousands of
// updates; one message each cost a trip through the editor's webview channel apiece).
window.addEventListener('message', (ev: MessageEvent) => {
  const m = ev.data as Message;
  if (m.type === 'batch') for (const x of m.messages as Message[]) handle(x);
  else handle(m);
});

function handle(m: Message): void {
  if (replaying && !BESIDE_REPLAY.has(m.type)) finishReplay();
  if (older && (WHOLE_TRANSCRIPT.has(m.type) || (m.type === 'update' && needsOlderCard(m.update as Update)))) drainReplay();
  switch (m.type) {
    case 'state':
      state(m as unknown as Parameters<typeof state>[0]);
      break;
    case 'clear':
      older?.cancel();
      older = null;
      replaying = m.replay === true ? [] : null;
      clearRetryLine();
      replayedUser = null;
      liveEchoes.clear();
      retryButtons.clear();
      transcript.textContent = '';
      cards.clear();
      streaming = null;
      plan([]);
      usageEl.textContent = '';
      follower.jump();
      pill.hidden = true;
      if (replaying) transcript.appendChild(waitLine);
      break;
    case 'update':
      if (replaying) replaying.push(m.update as Update);
      else onUpdate(m.update as Update);
      break;
    case 'replayDone':
      finishReplay();
      break;
    case 'userPrompt':
      userMessage(String(m.text), (m.context as ContextItem[]) ?? [], m.promptId as string | undefined);
      break;
    case 'userMessageId': {
      const w = transcript.querySelector(`.msg.user[data-prompt-id="${String(m.promptId)}"]`) as HTMLElement | null;
      if (w) actions.attach(w, String(m.messageId));
      break;
    }
    case 'truncate':
      endStream();
      truncateTranscript(transcript, String(m.messageId));
      contentChanged();
      break;
    case 'notice':
      transcript.appendChild(el('div', `notice ${String(m.level ?? 'info')}`, String(m.text)));
      contentChanged();
      break;
    case 'turnEnd': {
      const error = m.error as { message?: string; data?: Record<string, unknown> | null } | undefined;
      drawTurnEnd(turnEndView({ stopReason: String(m.stopReason), ...(error ? { error } : {}) }));
      break;
    }
    case 'retry':
      showRetry(m.retry as ModelRetry);
      break;
    case 'approval':
      cards.offer(String(m.key), m.toolCall as Record<string, unknown>, m.options as PermissionOptionView[]);
      break;
    case 'approvalDone':
      cards.approvalDone(String(m.key), String(m.toolCallId), String(m.label ?? ''), String(m.outcome), m.feedback as string | undefined);
      break;
    case 'decided':
      cards.decided(String(m.toolCallId), m.outcome as 'rejected' | 'cancelled', m.feedback as string | undefined);
      break;
    case 'focusCard':
      cards.focus(String(m.toolCallId));
      break;
    case 'addContext':
      composer.addContext(m.item as ContextItem);
      break;
    case 'fileResults':
      composer.fileResults(Number(m.requestId), m.items as { path: string; isFolder: boolean }[]);
      break;
    case 'error':
      transcript.appendChild(errorLine(errorView(String(m.message ?? ''), null)));
      contentChanged();
      break;
  }
}

vscode.postMessage({ type: 'ready' });
