/**
 * The words of a turn's end and of the model retries, and a replayed prompt turned back into what the user
 * sent. Pure (no DOM): main.ts draws them, the unit tests check them.
 *
 * `session/load` replays each prompt as `user_message_chunk`s sharing a `messageId` (with
 * `_meta.sidecar.userMessageId`, the rewind id), and each turn's end as an `agent_message_chunk` with
 * `_meta.sidecar.turnEnd = {stopReason, error?}` (docs/protocol.md "Replay"). The panel draws both exactly
 * as it drew them live: a user message with its checkpoint actions, and the "Stopped." line / the error line
 * / the turn marker, never as agent text.
 */
import type { ContentBlock, NoticeLine, SessionUpdate, TurnEnd } from '../shared/acp';
import type { ModelRetryParams } from '../shared/modelRetry';
import type { ContextItem } from '../shared/panelProtocol';
import { PROBLEMS_URI, problemsLabel, TERMINAL_URI, terminalLabel } from '../shared/mentions';
import { turnSpendText } from '../shared/spend';

export type { TurnEnd };

/** The `turnEnd` of a replayed `agent_message_chunk`, when it is one (older logs may carry anything there). */
export function turnEndOf(update: { sessionUpdate: string; _meta?: { sidecar?: { turnEnd?: unknown } } | null }): TurnEnd | undefined {
  const end = update._meta?.sidecar?.turnEnd;
  return isTurnEnd(end) ? end : undefined;
}

/** The line of a replayed restore (`_meta.sidecar.notice`, worded by the host), when it is one. */
export function noticeOf(update: { sessionUpdate: string; _meta?: { sidecar?: { notice?: unknown } } | null }): NoticeLine | undefined {
  const n = update._meta?.sidecar?.notice;
  if (typeof n !== 'object' || n === null) return undefined;
  const line = n as Partial<NoticeLine>;
  if (typeof line.text !== 'string' || (line.level !== 'info' && line.level !== 'warning')) return undefined;
  return { text: line.text, level: line.level, ...(typeof line.messageId === 'string' ? { messageId: line.messageId } : {}) };
}

function isTurnEnd(v: unknown): v is TurnEnd {
  return typeof v === 'object' && v !== null && 'stopReason' in v && typeof v.stopReason === 'string';
}

/** How a turn's end is drawn: an optional note ("Stopped."), an optional error line, and the marker's reason. */
export interface TurnEndView {
  reason: string;
  note?: string;
  error?: ErrorView;
  /** the turn footer: its tokens and cost (docs/model.md, "Cost") */
  cost?: string;
}

export interface ErrorView {
  message: string;
  /** The failure may pass if the prompt is sent again: the line offers Retry. */
  retry: boolean;
  /** What to do instead, when sending it again cannot pass (an HTTP 400: the conversation itself is refused). */
  hint?: string;
}

export function turnEndView(end: TurnEnd): TurnEndView {
  if (end.error || end.stopReason === 'error') {
    return { reason: 'error', error: errorView(end.error?.message, end.error?.data ?? undefined) };
  }
  const reason = end.stopReason;
  const text = turnSpendText(end.spend);
  const cost = text ? { cost: text } : {};
  if (reason === 'end_turn') return { reason, ...cost };
  return { reason, note: reason === 'cancelled' ? 'Stopped.' : `Turn ended: ${reason.replace(/_/g, ' ')}`, ...cost };
}

/** The hint under a request the provider refused as malformed or too large (sending it again cannot pass). */
export const REFUSED_HINT = 'Sending it again will fail the same way: use "Restore conversation" on an earlier message to go back before what the model API refused.';

/**
 * An error as the user reads it: the sidecar's message when it is a sentence, never a Python repr or a
 * JSON dump (those become a plain sentence naming the log). Retry is offered only when the sidecar says the
 * failure may pass (`retryable`; a sidecar too old to say is taken at its `model_unavailable` kind); a
 * refused request (HTTP 400 or 413) gets a hint to restore the conversation instead.
 */
export function errorView(message: string | undefined, data?: Record<string, unknown> | null): ErrorView {
  const retry = data?.retryable === true || (data?.retryable === undefined && data?.kind === 'model_unavailable');
  const status = typeof data?.status === 'number' ? data.status : undefined;
  const refused = data?.kind === 'model_unavailable' && !retry && (status === 400 || status === 413);
  return { message: readable(message), retry, ...(refused ? { hint: REFUSED_HINT } : {}) };
}

const REPRISH = /^\s*[[{(]|\{'|': |\bTraceback\b|<[a-zA-Z_.]+ object at 0x/;

export function readable(message: string | undefined): string {
  const m = (message ?? '').trim();
  if (!m) return 'The turn failed (see "Sidecar: Show Log").';
  if (REPRISH.test(m)) return 'The turn failed with an unexpected error (the details are in "Sidecar: Show Log").';
  return m;
}

// ------------------------------------------------------------------------------------ retries

/** `_sidecar/model_retry` as the panel uses it (the session is already chosen by the extension host). */
export type ModelRetry = Omit<ModelRetryParams, 'sessionId'>;

const ERROR_WORDS: Record<string, string> = {
  overloaded_error: 'overloaded',
  api_error: 'server error',
  rate_limit_error: 'rate limited',
  connection_error: 'connection failed',
  timeout: 'timed out',
};

function what(r: ModelRetry): string {
  const type = r.errorType ? (ERROR_WORDS[r.errorType] ?? r.errorType.replace(/_/g, ' ')) : '';
  if (r.status) return type ? `HTTP ${r.status} ${type}` : `HTTP ${r.status}`;
  return type || 'the request failed';
}

/**
 * The live status line while the sidecar waits before the next attempt:
 * "Retrying… attempt 2 of 7 in 4 s: HTTP 529 overloaded". `remainingMs` counts down to the next attempt;
 * at zero the line says the attempt is under way.
 */
export function retryLineText(r: ModelRetry, remainingMs: number): string {
  const next = r.attempt + 1;
  const who = r.agent ? ` (${r.agent})` : '';
  const secs = Math.ceil(Math.max(0, remainingMs) / 1000);
  const when = secs > 0 ? ` in ${secs} s` : ' now';
  return `Retrying${who}… attempt ${next} of ${r.maxAttempts}${when}: ${what(r)}`;
}

/**
 * The retry line's state: shown from a `_sidecar/model_retry` until the turn proceeds (any update of the
 * session, the turn's end, or a new prompt). `now` is injected so the tests need no clock.
 */
export class RetryLine {
  private current: { retry: ModelRetry; until: number } | null = null;

  constructor(private readonly now: () => number = () => performance.now()) {}

  get visible(): boolean {
    return this.current !== null;
  }

  show(retry: ModelRetry): void {
    this.current = { retry, until: this.now() + Math.max(0, retry.delayMs) };
  }

  /** The turn moved on (text, a tool call, its end): the line goes. Returns whether it was shown. */
  clear(): boolean {
    const was = this.current !== null;
    this.current = null;
    return was;
  }

  text(): string {
    if (!this.current) return '';
    return retryLineText(this.current.retry, this.current.until - this.now());
  }
}

// ------------------------------------------------------------------------------------ replayed prompts

export interface SentPrompt {
  text: string;
  context: ContextItem[];
}

function relative(p: string, roots: string[]): string {
  for (const root of roots) {
    const base = root.endsWith('/') ? root : `${root}/`;
    if (p.startsWith(base)) return p.slice(base.length);
  }
  return p;
}

function uriPath(uri: string): string {
  if (!uri.startsWith('file://')) return uri;
  try {
    return decodeURIComponent(new URL(uri).pathname);
  } catch {
    return uri;
  }
}

const SELECTION = /^Selected (?:lines (\d+)-(\d+) of )?(.+?):\n```[^\n]*\n([^]*)\n```$/;

/**
 * A replayed prompt's content blocks back as the panel's message: the typed text, and each mention, image
 * and selection as the chip the user saw when sending (the inverse of `promptBlocks`).
 */
export function sentPrompt(blocks: readonly ContentBlock[], roots: string[]): SentPrompt {
  const texts: string[] = [];
  const context: ContextItem[] = [];
  let images = 0;
  for (const b of blocks) {
    if (b.type === 'text' && typeof b.text === 'string') {
      const sel = SELECTION.exec(b.text);
      if (sel && (texts.length > 0 || context.length > 0 || blocks.length > 1)) {
        const file = relative(sel[3], roots);
        const label = sel[1] ? `${file}:${sel[1]}-${sel[2]}` : file;
        context.push({ kind: 'selection', uri: sel[3], label, text: sel[4] });
      } else {
        texts.push(b.text);
      }
    } else if (b.type === 'resource_link' && typeof b.uri === 'string') {
      const name = typeof b.name === 'string' && b.name ? b.name : relative(uriPath(b.uri), roots);
      const kind = /^https?:\/\//i.test(b.uri) ? 'url' : b.uri.startsWith('sidecar://git/') ? 'git' : 'file';
      context.push({ kind, uri: b.uri, label: name });
    } else if (b.type === 'resource') {
      const uri = b.resource?.uri ?? '';
      const text = b.resource?.text ?? '';
      if (uri === PROBLEMS_URI) context.push({ kind: 'problems', uri, label: problemsLabel(text), text });
      else if (uri === TERMINAL_URI) context.push({ kind: 'terminal', uri, label: terminalLabel(text), text });
      else context.push({ kind: 'file', uri, label: relative(uriPath(uri), roots) });
    } else if (b.type === 'image' && typeof b.data === 'string') {
      images += 1;
      context.push({ kind: 'image', uri: '', label: `image ${images}`, data: b.data, mimeType: typeof b.mimeType === 'string' ? b.mimeType : 'image/png' });
    }
  }
  return { text: texts.join('\n\n'), context };
}

// ------------------------------------------------------------------------------------ a long replay, newest turns first

/** What the replay planning reads of an update (a `SessionUpdate`; the tests give plain objects). */
export interface ReplayUpdate {
  sessionUpdate: string;
  toolCallId?: unknown;
  messageId?: unknown;
  used?: unknown;
  currentModeId?: unknown;
}

/** Updates that set the panel's state around the transcript (the usage meter, the mode, the slash commands, the plan). */
export const PANEL_STATE_UPDATES: ReadonlySet<string> = new Set(['usage_update', 'current_mode_update', 'available_commands_update', 'config_option_update', 'plan']);

/**
 * How the panel draws a `session/load` replay it has received whole: the panel-state updates that show in
 * the end, the newest turns drawn at once (`tailStart` to the end), then the older ones as `pieces`
 * (`[start, end)` ranges of updates, newest first), each put above what is drawn already, in idle time.
 * Drawn so, the transcript ends as the replay drawn in order would be.
 */
export interface ReplayPlan<U extends ReplayUpdate = SessionUpdate> {
  state: U[];
  tailStart: number;
  pieces: [number, number][];
}

/** A tool call's id, for the updates that carry one. */
function toolCallIdOf(u: ReplayUpdate): string | undefined {
  return (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') && typeof u.toolCallId === 'string' ? u.toolCallId : undefined;
}

/**
 * Where a replay can be cut into pieces drawn apart: where a prompt (a new user message) begins, and only
 * where nothing after the cut refers to a tool call that began before it (a card is made by its first
 * update and found by the later ones). Ascending; always 0 first.
 */
export function replayCuts(updates: readonly ReplayUpdate[]): number[] {
  const starts: number[] = [0];
  const span = new Map<string, [number, number]>();
  let prevUser: string | null = null;
  for (let i = 0; i < updates.length; i++) {
    const u = updates[i] as ReplayUpdate;
    if (u.sessionUpdate === 'user_message_chunk') {
      const key = typeof u.messageId === 'string' ? u.messageId : '';
      if (prevUser !== key && i > 0) starts.push(i);
      prevUser = key;
    } else {
      prevUser = null;
    }
    const id = toolCallIdOf(u);
    if (id !== undefined) {
      const s = span.get(id);
      if (s) s[1] = i;
      else span.set(id, [i, i]);
    }
  }
  // A cut at c is out when a tool call began before c and has an update at or after it: c in (first, last].
  const inside = new Int32Array(updates.length + 2);
  for (const [from, to] of span.values()) {
    if (to === from) continue;
    inside[from + 1] = (inside[from + 1] as number) + 1;
    inside[to + 1] = (inside[to + 1] as number) - 1;
  }
  const cuts: number[] = [];
  let open = 0;
  let k = 0;
  for (const c of starts) {
    for (; k <= c; k++) open += inside[k] as number;
    if (open === 0) cuts.push(c);
  }
  return cuts;
}

/** The last update of each panel-state kind that changes what shows, in replay order. */
export function replayState<U extends ReplayUpdate>(updates: readonly U[]): U[] {
  const last = new Map<string, number>();
  updates.forEach((u, i) => {
    if (!PANEL_STATE_UPDATES.has(u.sessionUpdate)) return;
    // A usage update without a count, or a mode update without a mode, changes nothing.
    if (u.sessionUpdate === 'usage_update' && typeof u.used !== 'number') return;
    if (u.sessionUpdate === 'current_mode_update' && typeof u.currentModeId !== 'string') return;
    last.set(u.sessionUpdate, i);
  });
  return [...last.values()].sort((a, b) => a - b).map((i) => updates[i] as U);
}

/**
 * The plan for drawing a replay: the tail is the newest turns up to `tailTurns` of them or `tailUpdates`
 * updates (at least one turn: what the user looks at first, drawn at once); the older turns are cut into
 * pieces of at most `pieceTurns` turns.
 */
export function planReplay<U extends ReplayUpdate>(updates: readonly U[], opts: { tailTurns?: number; tailUpdates?: number; pieceTurns?: number } = {}): ReplayPlan<U> {
  const tailTurns = opts.tailTurns ?? 20;
  const tailUpdates = opts.tailUpdates ?? 400;
  const pieceTurns = Math.max(1, opts.pieceTurns ?? 4);
  const cuts = replayCuts(updates);
  const n = updates.length;
  let t = cuts.length - 1;
  while (t > 0 && cuts.length - t < tailTurns && n - (cuts[t - 1] as number) <= tailUpdates) t--;
  const tailStart = cuts[t] as number;
  const pieces: [number, number][] = [];
  for (let end = t; end > 0; end -= pieceTurns) {
    const start = Math.max(0, end - pieceTurns);
    pieces.push([cuts[start] as number, cuts[end] as number]);
  }
  return { state: replayState(updates), tailStart, pieces };
}

/** What drawing the older turns of a replay needs from the panel (main.ts; the unit tests fake it). */
export interface OlderTurnsHost<P> {
  /** Draws updates `[start, end)` apart from the transcript (nothing shown changes) and returns them. */
  draw(start: number, end: number): P;
  /** Puts drawn pieces, oldest first, above everything in the transcript. */
  prepend(pieces: P[]): void;
  /** Calls `run` when the panel is idle, with the time it may take (ms). */
  idle(run: (budgetMs: number) => void): void;
  now(): number;
}

/**
 * The older turns of a replay, drawn in idle time above the newest ones, newest piece first: each idle
 * call draws pieces until its budget is spent (at least one) and puts them in the transcript at once.
 */
export class OlderTurns<P> {
  private next = 0;
  private cancelled = false;
  private scheduled = false;

  constructor(
    private readonly host: OlderTurnsHost<P>,
    private readonly pieces: readonly [number, number][],
  ) {}

  get done(): boolean {
    return this.cancelled || this.next >= this.pieces.length;
  }

  start(): void {
    if (this.done || this.scheduled) return;
    this.scheduled = true;
    this.host.idle((budget) => {
      this.scheduled = false;
      if (this.done) return;
      this.run(budget);
      this.start();
    });
  }

  /** Everything left, now: something needs the whole transcript (a rewind, a card to show). */
  drain(): void {
    if (!this.done) this.run(Infinity);
  }

  /** The transcript was cleared: nothing more is drawn. */
  cancel(): void {
    this.cancelled = true;
  }

  private run(budgetMs: number): void {
    const began = this.host.now();
    const drawn: P[] = [];
    do {
      const [start, end] = this.pieces[this.next++] as [number, number];
      drawn.unshift(this.host.draw(start, end));
    } while (!this.done && this.host.now() - began < budgetMs);
    this.host.prepend(drawn);
  }
}
