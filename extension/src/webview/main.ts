/**
 * The chat webview's script: renders the transcript from `session/update`s and sends the user's actions
 * to the extension. Markdown through markdown-it with raw HTML off (the model's text is never HTML).
 */
import MarkdownIt from 'markdown-it';

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface ContextItem {
  kind: 'file' | 'selection';
  uri: string;
  label: string;
  text?: string;
  startLine?: number;
  endLine?: number;
}

interface SessionInfo {
  sessionId: string;
  title?: string | null;
  updatedAt?: string | null;
}

type Update = Record<string, unknown> & { sessionUpdate: string };

const vscode = acquireVsCodeApi();
const md = new MarkdownIt({ html: false, linkify: false, breaks: false });

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const transcript = $<HTMLElement>('transcript');
const promptBox = $<HTMLTextAreaElement>('prompt');
const sendBtn = $<HTMLButtonElement>('send');
const stopBtn = $<HTMLButtonElement>('stop');
const modeSel = $<HTMLSelectElement>('mode');
const sessionsSel = $<HTMLSelectElement>('sessions');
const statusEl = $<HTMLElement>('status');
const usageEl = $<HTMLElement>('usage');
const planEl = $<HTMLElement>('plan');
const contextEl = $<HTMLElement>('context');

let context: ContextItem[] = [];
let busy = false;
let ready = false;
/** The message element receiving streamed chunks, and its raw Markdown. */
let streaming: { el: HTMLElement; kind: string; text: string } | null = null;
const toolCards = new Map<string, HTMLElement>();

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function scrollDown(): void {
  transcript.scrollTop = transcript.scrollHeight;
}

function renderMarkdown(target: HTMLElement, text: string): void {
  target.innerHTML = md.render(text);
}

// Messages whose Markdown changed since the last frame. A message can stop being the streaming one (a tool
// card or the turn's end arrives) before its frame: it is still rendered, with its last chunk.
const dirty = new Set<{ el: HTMLElement; text: string }>();
let pendingRender = false;
function scheduleRender(): void {
  if (streaming) dirty.add(streaming);
  if (pendingRender) return;
  pendingRender = true;
  requestAnimationFrame(() => {
    pendingRender = false;
    for (const m of dirty) renderMarkdown(m.el, m.text);
    dirty.clear();
    scrollDown();
  });
}

function appendChunk(kind: 'agent' | 'thought' | 'user', text: string): void {
  if (!streaming || streaming.kind !== kind) {
    const wrap = el('div', `msg ${kind}`);
    if (kind === 'thought') wrap.appendChild(el('div', 'label', 'Thinking'));
    const body = el('div', 'body markdown');
    wrap.appendChild(body);
    transcript.appendChild(wrap);
    streaming = { el: body, kind, text: '' };
  }
  streaming.text += text;
  scheduleRender();
}

function blockText(content: unknown): string {
  const c = content as { type?: string; text?: string; uri?: string; name?: string } | undefined;
  if (!c) return '';
  if (c.type === 'text') return c.text ?? '';
  if (c.type === 'resource_link') return `[${c.name ?? c.uri}](${c.uri})`;
  return '';
}

const STATUS_LABEL: Record<string, string> = {
  pending: 'pending',
  in_progress: 'running',
  completed: 'done',
  failed: 'failed',
};

function toolCard(u: Update): void {
  const id = String(u.toolCallId ?? '');
  let card = toolCards.get(id);
  if (!card) {
    streaming = null;
    card = el('details', 'tool-card');
    card.dataset.toolCallId = id;
    const summary = el('summary');
    summary.appendChild(el('span', 'kind'));
    summary.appendChild(el('span', 'title'));
    summary.appendChild(el('span', 'tool-status'));
    card.appendChild(summary);
    card.appendChild(el('div', 'input'));
    card.appendChild(el('div', 'locations'));
    card.appendChild(el('div', 'output'));
    transcript.appendChild(card);
    toolCards.set(id, card);
  }
  if (typeof u.kind === 'string') (card.querySelector('.kind') as HTMLElement).textContent = u.kind;
  if (typeof u.title === 'string') (card.querySelector('.title') as HTMLElement).textContent = u.title;
  if (typeof u.status === 'string') {
    const s = card.querySelector('.tool-status') as HTMLElement;
    s.textContent = STATUS_LABEL[u.status] ?? u.status;
    card.dataset.status = u.status;
  }
  const raw = u.rawInput as Record<string, unknown> | undefined;
  if (raw && typeof raw === 'object') {
    const input = card.querySelector('.input') as HTMLElement;
    input.textContent = '';
    const cmd = typeof raw.command === 'string' ? raw.command : null;
    input.appendChild(el('pre', 'raw', cmd ?? JSON.stringify(raw, null, 2)));
  }
  const locs = u.locations as { path: string; line?: number | null }[] | undefined;
  if (Array.isArray(locs) && locs.length) {
    const box = card.querySelector('.locations') as HTMLElement;
    box.textContent = '';
    for (const l of locs.slice(0, 20)) {
      const a = el('a', 'location', l.line ? `${l.path}:${l.line}` : l.path);
      a.href = '#';
      a.addEventListener('click', (ev) => {
        ev.preventDefault();
        vscode.postMessage({ type: 'openLocation', path: l.path, line: l.line ?? undefined });
      });
      box.appendChild(a);
    }
  }
  const content = u.content as { type: string; content?: unknown; path?: string; newText?: string; oldText?: string | null }[] | undefined;
  if (Array.isArray(content)) {
    const out = card.querySelector('.output') as HTMLElement;
    out.textContent = '';
    for (const c of content) {
      if (c.type === 'content') {
        const text = blockText(c.content);
        if (text) out.appendChild(el('pre', 'text', text.length > 20000 ? text.slice(0, 20000) + '\n…' : text));
      } else if (c.type === 'diff') {
        const oldN = c.oldText ? c.oldText.split('\n').length : 0;
        const newN = c.newText ? c.newText.split('\n').length : 0;
        out.appendChild(el('div', 'diff', `${c.path ?? ''} (${oldN} → ${newN} lines)`));
      }
    }
  }
  scrollDown();
}

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

function usage(u: Update): void {
  const used = typeof u.used === 'number' ? u.used : undefined;
  const size = typeof u.size === 'number' ? u.size : undefined;
  if (used === undefined) return;
  usageEl.textContent = size ? `${used.toLocaleString()} / ${size.toLocaleString()} tokens` : `${used.toLocaleString()} tokens`;
  usageEl.dataset.used = String(used);
}

function onUpdate(u: Update): void {
  switch (u.sessionUpdate) {
    case 'agent_message_chunk':
      appendChunk('agent', blockText(u.content));
      break;
    case 'agent_thought_chunk':
      appendChunk('thought', blockText(u.content));
      break;
    case 'user_message_chunk':
      appendChunk('user', blockText(u.content));
      break;
    case 'tool_call':
    case 'tool_call_update':
      toolCard(u);
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
    default:
      break;
  }
}

function renderContext(): void {
  contextEl.textContent = '';
  context.forEach((c, i) => {
    const chip = el('span', 'chip', c.kind === 'file' ? `@${c.label}` : c.label);
    const x = el('button', 'chip-remove', '×');
    x.title = 'Remove';
    x.addEventListener('click', () => {
      context.splice(i, 1);
      renderContext();
    });
    chip.appendChild(x);
    contextEl.appendChild(chip);
  });
}

function setBusy(b: boolean): void {
  busy = b;
  stopBtn.hidden = !b;
  sendBtn.disabled = b || !ready;
  document.body.dataset.busy = String(b);
}

function send(): void {
  const text = promptBox.value;
  if (busy || (!text.trim() && context.length === 0)) return;
  vscode.postMessage({ type: 'prompt', text, context });
  promptBox.value = '';
  context = [];
  renderContext();
}

sendBtn.addEventListener('click', send);
promptBox.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    send();
  }
});
stopBtn.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
$('new-session').addEventListener('click', () => vscode.postMessage({ type: 'newSession' }));
$('mention').addEventListener('click', () => vscode.postMessage({ type: 'mentionFile' }));
$('selection').addEventListener('click', () => vscode.postMessage({ type: 'addSelection' }));
modeSel.addEventListener('change', () => vscode.postMessage({ type: 'setMode', modeId: modeSel.value }));
sessionsSel.addEventListener('change', () => {
  if (sessionsSel.value) vscode.postMessage({ type: 'loadSession', sessionId: sessionsSel.value });
});

function sessionLabel(s: SessionInfo): string {
  const when = s.updatedAt ? ` · ${s.updatedAt.replace('T', ' ').slice(0, 16)}` : '';
  return `${s.title || s.sessionId.slice(0, 8)}${when}`;
}

function state(m: { sessionId: string | null; sessions: SessionInfo[]; mode: string; busy: boolean; ready: boolean; pending: number }): void {
  ready = m.ready;
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
  statusEl.textContent = !m.ready ? 'Starting the agent…' : m.pending > 0 ? `${m.pending} waiting for you` : '';
  document.body.dataset.ready = String(m.ready);
  document.body.dataset.sessionId = m.sessionId ?? '';
  setBusy(m.busy);
}

window.addEventListener('message', (ev: MessageEvent) => {
  const m = ev.data as { type: string } & Record<string, unknown>;
  switch (m.type) {
    case 'state':
      state(m as unknown as Parameters<typeof state>[0]);
      break;
    case 'clear':
      transcript.textContent = '';
      toolCards.clear();
      streaming = null;
      plan([]);
      usageEl.textContent = '';
      break;
    case 'update':
      onUpdate(m.update as Update);
      break;
    case 'userPrompt': {
      streaming = null;
      const wrap = el('div', 'msg user');
      wrap.appendChild(el('div', 'body', String(m.text)));
      for (const c of (m.context as ContextItem[]) ?? []) wrap.appendChild(el('span', 'chip', c.kind === 'file' ? `@${c.label}` : c.label));
      transcript.appendChild(wrap);
      scrollDown();
      break;
    }
    case 'turnEnd': {
      streaming = null;
      const reason = String(m.stopReason);
      if (reason !== 'end_turn') transcript.appendChild(el('div', `turn-end ${reason}`, reason === 'cancelled' ? 'Stopped.' : `Turn ended: ${reason}`));
      const end = el('div', 'turn-marker');
      end.dataset.stopReason = reason;
      transcript.appendChild(end);
      scrollDown();
      break;
    }
    case 'addContext':
      context.push(m.item as ContextItem);
      renderContext();
      promptBox.focus();
      break;
    case 'error':
      transcript.appendChild(el('div', 'error', String(m.message)));
      scrollDown();
      break;
  }
});

vscode.postMessage({ type: 'ready' });
