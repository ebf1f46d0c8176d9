/**
 * Drawing a `session/load` replay (~2,700 updates for 300 turns), which comes between a `clear` with
 * `replay: true` and a `replayDone` (sent when the load answered). Drawing each update as it came built
 * every turn's DOM and Markdown, oldest first, while the later batches waited behind that work, so the
 * turns the user looks at (the last ones) came last. The replay is held as it arrives (an array push
 * each), then drawn newest turns first: the panel state (usage, mode, commands, plan) as the replay leaves
 * it, the last turns at once, and the older ones in idle time, a few turns at a time, each piece drawn
 * apart and put above the transcript in one insertion (the view stays at the bottom, or where the user
 * scrolled to). The end is the DOM the replay drawn in order gives (replay.ts plans the pieces;
 * e2e/webview-replay.test.mjs checks).
 */
import type { SessionUpdate } from '../shared/acp';
import type { ToView } from '../shared/panelProtocol';
import type { Cards } from './cards';
import { el } from './dom';
import { OlderTurns, planReplay } from './replay';
import type { PanelState, Rendered } from './state';
import { renderMarkdown, type Transcript } from './transcript';
import type { Viewport } from './viewport';

/** Draws one update; `transcriptOnly` (a replay drawn out of order) skips the panel-state ones. */
export type DrawUpdate = (u: SessionUpdate, transcriptOnly?: boolean) => void;

/** While a replay is held, these go through; any other message draws the replay first (order kept). */
const BESIDE_REPLAY: ReadonlySet<ToView['type']> = new Set(['state', 'fileResults', 'addContext', 'update', 'replayDone', 'clear', 'visibility']);
/** These need every turn in the transcript (they find a message or card by its id). */
const WHOLE_TRANSCRIPT: ReadonlySet<ToView['type']> = new Set(['truncate', 'focusCard', 'approval', 'approvalDone', 'decided', 'reviewing']);

export class ReplayView {
  private readonly waitLine = el('div', 'replay-wait', 'Opening the conversation…');

  constructor(
    private readonly state: PanelState,
    private readonly viewport: Viewport,
    private readonly transcript: Transcript,
    private readonly cards: Cards,
    private readonly draw: DrawUpdate,
  ) {}

  /** Before a message is handled: what it needs of the replay is drawn first. */
  before(m: ToView): void {
    const s = this.state;
    if (s.replaying && !BESIDE_REPLAY.has(m.type)) this.finish();
    if (s.older && (WHOLE_TRANSCRIPT.has(m.type) || (m.type === 'update' && this.needsOlderCard(m.update)))) this.drain();
  }

  /** `clear`: a replay follows when `replay` is set (held until `replayDone`). */
  start(replay: boolean): void {
    const s = this.state;
    s.older?.cancel();
    s.older = null;
    s.replaying = replay ? [] : null;
    if (replay) s.transcript.appendChild(this.waitLine);
  }

  /** An update: held while a replay is received, else drawn. */
  update(u: SessionUpdate): void {
    if (this.state.replaying) this.state.replaying.push(u);
    else this.draw(u);
  }

  finish(): void {
    const s = this.state;
    const updates = s.replaying;
    s.replaying = null;
    this.waitLine.remove();
    if (!updates) return;
    const plan = planReplay(updates);
    for (const u of plan.state) this.draw(u);
    for (let i = plan.tailStart; i < updates.length; i++) this.draw(updates[i] as SessionUpdate, true);
    if (!plan.pieces.length) return;
    s.older = new OlderTurns<HTMLElement>(
      {
        draw: (start, end) => this.drawOlder(updates, start, end),
        prepend: (boxes) => this.prependOlder(boxes),
        idle: (run) => {
          if (typeof requestIdleCallback === 'function') requestIdleCallback((d) => run(d.didTimeout ? 8 : Math.min(20, Math.max(4, d.timeRemaining()))), { timeout: 100 });
          else setTimeout(() => run(8), 0);
        },
        now: () => performance.now(),
      },
      plan.pieces,
    );
    s.older.start();
  }

  /** Older replayed turns drawn into a detached box; what the live transcript tracks is left as it was. */
  private drawOlder(updates: SessionUpdate[], start: number, end: number): HTMLElement {
    const s = this.state;
    const box = el('div');
    const saved = { streaming: s.streaming, replayedUser: s.replayedUser };
    const retries = [...s.retryButtons];
    const echoes = [...s.liveEchoes];
    s.retryButtons.clear();
    s.liveEchoes.clear();
    s.streaming = null;
    s.replayedUser = null;
    s.target = box;
    const rendered = new Set<Rendered>();
    s.olderDirty = rendered;
    try {
      for (let i = start; i < end; i++) this.draw(updates[i] as SessionUpdate, true);
      this.transcript.endStream();
      for (const m of rendered) renderMarkdown(m.el, m.text);
      // The next prompt (drawn already, below) removed these, as it does in order.
      this.transcript.dropRetryButtons();
    } finally {
      s.olderDirty = null;
      s.target = s.transcript;
      s.streaming = saved.streaming;
      s.replayedUser = saved.replayedUser;
      for (const b of retries) s.retryButtons.add(b);
      for (const w of echoes) s.liveEchoes.add(w);
    }
    return box;
  }

  /** Puts drawn older turns above the transcript. */
  private prependOlder(boxes: HTMLElement[]): void {
    const piece = document.createDocumentFragment();
    for (const b of boxes) piece.append(...Array.from(b.childNodes));
    // The last piece: the replay's updates are let go.
    if (this.state.older?.done) this.state.older = null;
    this.viewport.prepend(piece);
  }

  /** A live update of a tool call whose card is in an older piece not drawn yet. */
  private needsOlderCard(u: SessionUpdate): boolean {
    return u.sessionUpdate === 'tool_call_update' && typeof u.toolCallId === 'string' && !this.cards.has(u.toolCallId);
  }

  /** The whole replay in the transcript now (the older turns too). */
  private drain(): void {
    if (this.state.replaying) this.finish();
    this.state.older?.drain();
    this.state.older = null;
  }
}
