/**
 * The transcript's own elements: streamed agent text and thinking (Markdown rendered once per frame), user
 * messages (live echoes and replayed prompts, with their chips and checkpoint actions), turn ends, error
 * lines with Retry, and the live model-retry line. Tool cards are cards.ts's.
 */
import type { ContentBlock, SessionUpdate } from '../shared/acp';
import type { ContextItem, PostToHost } from '../shared/panelProtocol';
import { namedInText } from '../shared/mentions';
import { hasMention } from './composer';
import { el } from './dom';
import { md } from './markdown';
import type { MessageActions } from './messageActions';
import { type ErrorView, type ModelRetry, RetryLine, sentPrompt, type TurnEndView } from './replay';
import type { PanelState, Rendered, Streaming } from './state';
import type { Viewport } from './viewport';

type UserChunk = Extract<SessionUpdate, { sessionUpdate: 'user_message_chunk' }>;

export function blockText(c: ContentBlock | undefined): string {
  if (!c) return '';
  if (c.type === 'text') return c.text ?? '';
  if (c.type === 'resource_link') return `[${c.name ?? c.uri}](${c.uri})`;
  if (c.type === 'image') return '[image]';
  return '';
}

export function renderMarkdown(target: HTMLElement, text: string): void {
  target.innerHTML = md.render(text);
}

/** A Copy button that posts `getText()` to the host (the clipboard is the editor's). */
export function copyButton(post: PostToHost, getText: () => string, cls = 'copy-msg'): HTMLButtonElement {
  const b = el('button', `${cls} secondary`, 'Copy');
  b.title = 'Copy';
  b.addEventListener('click', (ev) => {
    ev.stopPropagation();
    post({ type: 'copy', text: getText() });
    b.textContent = 'Copied';
    setTimeout(() => (b.textContent = 'Copy'), 1200);
  });
  return b;
}

export class Transcript {
  /** Messages whose Markdown changed since the last frame (a message can stop streaming before its frame). */
  private readonly dirty = new Set<Rendered>();
  private pendingRender = false;
  private readonly retryLine = new RetryLine();
  private retryEl: HTMLElement | null = null;
  private retryTimer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly state: PanelState,
    private readonly viewport: Viewport,
    private readonly actions: MessageActions,
    private readonly post: PostToHost,
  ) {}

  // ---------------------------------------------------------------------------------- streamed messages

  private scheduleRender(): void {
    const s = this.state;
    if (s.olderDirty) {
      // drawing older replayed turns apart: rendered when the piece is done, before it is shown
      if (s.streaming) s.olderDirty.add(s.streaming);
      return;
    }
    if (s.streaming) this.dirty.add(s.streaming);
    if (this.pendingRender) return;
    this.pendingRender = true;
    requestAnimationFrame(() => {
      this.pendingRender = false;
      for (const m of this.dirty) renderMarkdown(m.el, m.text);
      this.dirty.clear();
      this.viewport.followContent();
    });
  }

  endStream(): void {
    const s = this.state.streaming;
    if (s?.kind === 'thought') finishThought(s);
    this.state.streaming = null;
  }

  appendChunk(kind: Streaming['kind'], text: string, live = true): void {
    const state = this.state;
    if (!state.streaming || state.streaming.kind !== kind) {
      this.endStream();
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
      const s: Streaming = { el: body, kind, text: '', wrap, started: performance.now() };
      // Floated at the top right before the text, so the text flows around it and never under it.
      if (kind === 'agent') wrap.prepend(copyButton(this.post, () => s.text));
      state.target.appendChild(wrap);
      state.streaming = s;
    }
    state.streaming.text += text;
    this.scheduleRender();
  }

  // ---------------------------------------------------------------------------------- user messages

  /** A user message as the panel draws it, live or replayed: the text, then a chip or thumbnail per item. */
  private fillUser(wrap: HTMLElement, text: string, context: ContextItem[]): void {
    wrap.textContent = '';
    wrap.appendChild(el('div', 'body', text));
    for (const c of context) {
      if (c.kind === 'image' && c.data) {
        const img = el('img', 'thumb');
        img.src = `data:${c.mimeType};base64,${c.data}`;
        img.alt = c.label;
        wrap.appendChild(img);
      } else if (!(c.kind === 'file' && hasMention(text, c.label)) && !namedInText(text, c)) {
        // a file the text names as `@path`, a URL or commit as `@url …` / `@git <sha>`: shown once, in the text
        wrap.appendChild(el('span', 'chip', c.kind === 'file' ? `@${c.label}` : c.label));
      }
    }
    this.actions.remember(wrap, text, context);
  }

  /** The live echo of a prompt the user sent (before any session exists). */
  userMessage(text: string, context: ContextItem[], promptId?: string): void {
    this.endStream();
    this.state.replayedUser = null;
    this.dropRetryButtons();
    this.dropUndo();
    const wrap = el('div', 'msg user');
    if (promptId) {
      wrap.dataset.promptId = promptId;
      this.state.liveEchoes.add(wrap);
    }
    this.fillUser(wrap, text, context);
    this.state.transcript.appendChild(wrap);
    this.viewport.jumpToBottom();
  }

  /** A replayed prompt's chunk: the chunks of one `messageId` build one message. */
  replayedChunk(u: UserChunk): void {
    const state = this.state;
    const key = typeof u.messageId === 'string' ? u.messageId : '';
    if (!state.replayedUser || state.replayedUser.key !== key) {
      this.endStream();
      this.dropRetryButtons();
      const wrap = el('div', 'msg user');
      state.target.appendChild(wrap);
      state.replayedUser = { key, blocks: [], wrap };
    }
    const r = state.replayedUser;
    if (u.content) r.blocks.push(u.content);
    const sent = sentPrompt(r.blocks, state.roots);
    this.fillUser(r.wrap, sent.text, sent.context);
    const id = u._meta?.sidecar?.userMessageId;
    if (typeof id === 'string') this.actions.attach(r.wrap, id);
    this.viewport.contentChanged();
  }

  /** The live echo `promptId` got its sidecar id: it can be rewound to. */
  attachMessageId(promptId: string, messageId: string): void {
    const w = this.state.transcript.querySelector<HTMLElement>(`.msg.user[data-prompt-id="${promptId}"]`);
    if (w) this.actions.attach(w, messageId);
  }

  // ---------------------------------------------------------------------------------- turn ends, errors

  /** An error line; a retryable one offers Retry, which sends the user message before it again. */
  errorLine(v: ErrorView): HTMLElement {
    const state = this.state;
    const line = el('div', 'error');
    line.appendChild(el('span', 'error-text', v.message));
    if (v.hint) line.appendChild(el('div', 'error-hint', v.hint));
    if (v.retry) {
      const b = el('button', 'retry-btn', 'Retry');
      state.retryButtons.add(b);
      b.title = 'Send the last message again';
      b.disabled = state.busy || !state.ready;
      b.addEventListener('click', () => {
        if (state.busy || !state.ready) return;
        let prev = line.previousElementSibling;
        while (prev && !prev.classList.contains('user')) prev = prev.previousElementSibling;
        const sent = prev instanceof HTMLElement ? this.actions.sentOf(prev) : undefined;
        if (!sent) return;
        b.remove();
        state.retryButtons.delete(b);
        this.post({ type: 'prompt', text: sent.text, context: sent.context });
      });
      line.appendChild(b);
    }
    return line;
  }

  /** An error outside a turn (a failed request of the panel's own). */
  error(v: ErrorView): void {
    this.state.transcript.appendChild(this.errorLine(v));
    this.viewport.contentChanged();
  }

  /** A line in the chat; `replayed`: drawn from a `session/load` (where the replay draws: older turns apart). */
  notice(m: { text: string; level?: string; messageId?: string | undefined; undoId?: string | undefined; restored?: true | undefined; replayed?: true }): void {
    const { text, messageId, undoId } = m;
    const line = el('div', `notice ${m.level ?? 'info'}`, text);
    const where = m.replayed ? this.state.target : this.state.transcript;
    const at = messageId ? where.querySelector<HTMLElement>(`.msg.user[data-message-id="${CSS.escape(messageId)}"]`) : null;
    // Only the last restore can be undone, and only until a turn starts (the sidecar keeps one): a restore's
    // or an undo's line takes the earlier buttons away; any other line (Compare's) leaves them.
    if (m.restored) this.dropUndo();
    if (undoId) {
      const undo = el('button', 'link-btn undo-restore', 'Undo restore');
      undo.title = 'Put the files back as they were before this restore';
      undo.addEventListener('click', () => {
        undo.remove();
        this.post({ type: 'undoRestore', undoId, ...(messageId ? { messageId } : {}) });
      });
      line.append(' ', undo);
    }
    if (at) {
      // After the message and the lines earlier actions on it left, in the order they came.
      let last: Element = at;
      while (last.nextElementSibling?.classList.contains('notice')) last = last.nextElementSibling;
      last.after(line);
      if (!m.replayed) line.scrollIntoView({ block: 'nearest' });
    } else {
      where.appendChild(line);
    }
    this.viewport.contentChanged();
  }

  dropUndo(): void {
    for (const b of this.state.transcript.querySelectorAll('.undo-restore')) b.remove();
  }

  dropRetryButtons(): void {
    for (const b of this.state.retryButtons) b.remove();
    this.state.retryButtons.clear();
  }

  setRetryEnabled(on: boolean): void {
    for (const r of this.state.retryButtons) r.disabled = !on;
  }

  /** The end of a turn, live or replayed: the note ("Stopped."), the error line, then the marker. */
  drawTurnEnd(v: TurnEndView): void {
    const state = this.state;
    this.endStream();
    state.replayedUser = null;
    if (!state.olderDirty) this.clearRetryLine();
    if (v.note) state.target.appendChild(el('div', `turn-end ${v.reason}`, v.note));
    if (v.error) state.target.appendChild(this.errorLine(v.error));
    if (v.cost) state.target.appendChild(el('div', 'turn-cost', v.cost));
    const end = el('div', 'turn-marker');
    end.dataset.stopReason = v.reason;
    state.target.appendChild(end);
    // The live echo's local id has served (the message has its sidecar id by now): live and replayed match.
    for (const w of state.liveEchoes) delete w.dataset.promptId;
    state.liveEchoes.clear();
    this.viewport.contentChanged();
  }

  // ---------------------------------------------------------------------------------- model retries

  /** `_sidecar/model_retry`: a live line at the bottom of the transcript, counting down to the next attempt. */
  showRetry(r: ModelRetry): void {
    this.endStream();
    this.retryLine.show(r);
    if (!this.retryEl) {
      this.retryEl = el('div', 'retry-line');
      this.retryEl.setAttribute('role', 'status');
    }
    this.state.transcript.appendChild(this.retryEl);
    this.retryEl.textContent = this.retryLine.text();
    if (r.message) this.retryEl.title = r.message;
    if (this.retryTimer === undefined) {
      this.retryTimer = setInterval(() => {
        if (this.retryEl) this.retryEl.textContent = this.retryLine.text();
      }, 500);
    }
    this.viewport.contentChanged();
  }

  clearRetryLine(): void {
    this.retryLine.clear();
    if (this.retryTimer !== undefined) clearInterval(this.retryTimer);
    this.retryTimer = undefined;
    this.retryEl?.remove();
    this.retryEl = null;
  }

  /** The transcript was cleared (a session switch or a replay to come). */
  clear(): void {
    this.clearRetryLine();
    const s = this.state;
    s.replayedUser = null;
    s.liveEchoes.clear();
    s.retryButtons.clear();
    s.streaming = null;
    s.transcript.textContent = '';
  }
}

function finishThought(s: Streaming): void {
  const label = s.wrap.querySelector('summary .thought-label');
  const secs = Math.max(1, Math.round((performance.now() - s.started) / 1000));
  if (label && s.wrap.dataset.live === 'true') label.textContent = `Thought for ${secs} s`;
  s.wrap.dataset.live = 'false';
}
