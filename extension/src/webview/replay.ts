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
import type { ModelRetryParams } from '../shared/modelRetry';

export interface TurnEnd {
  stopReason: string;
  error?: { code?: number; message?: string; data?: Record<string, unknown> | null };
}

/** The `turnEnd` of a replayed `agent_message_chunk`, when it is one. */
export function turnEndOf(update: Record<string, unknown>): TurnEnd | undefined {
  const meta = (update._meta as { sidecar?: { turnEnd?: unknown } } | undefined)?.sidecar;
  const end = meta?.turnEnd as TurnEnd | undefined;
  if (!end || typeof end !== 'object' || typeof end.stopReason !== 'string') return undefined;
  return end;
}

/** How a turn's end is drawn: an optional note ("Stopped."), an optional error line, and the marker's reason. */
export interface TurnEndView {
  reason: string;
  note?: string;
  error?: ErrorView;
}

export interface ErrorView {
  message: string;
  /** The failure may pass if the prompt is sent again: the line offers Retry. */
  retry: boolean;
}

export function turnEndView(end: TurnEnd): TurnEndView {
  if (end.error || end.stopReason === 'error') {
    return { reason: 'error', error: errorView(end.error?.message, end.error?.data ?? undefined) };
  }
  const reason = end.stopReason;
  if (reason === 'end_turn') return { reason };
  return { reason, note: reason === 'cancelled' ? 'Stopped.' : `Turn ended: ${reason.replace(/_/g, ' ')}` };
}

/**
 * An error as the user reads it: the sidecar's message when it is a sentence, never a Python repr or a
 * JSON dump (those become a plain sentence naming the log). Retry is offered for retryable agent errors.
 */
export function errorView(message: string | undefined, data?: Record<string, unknown> | null): ErrorView {
  const retry = data?.retryable === true || data?.kind === 'model_unavailable';
  return { message: readable(message), retry };
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

export interface SentItem {
  kind: 'file' | 'selection' | 'image';
  uri: string;
  label: string;
  text?: string;
  data?: string;
  mimeType?: string;
}

export interface SentPrompt {
  text: string;
  context: SentItem[];
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
export function sentPrompt(blocks: Record<string, unknown>[], roots: string[]): SentPrompt {
  const texts: string[] = [];
  const context: SentItem[] = [];
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
      context.push({ kind: 'file', uri: b.uri, label: name });
    } else if (b.type === 'resource') {
      const r = (b.resource ?? {}) as { uri?: string };
      const uri = r.uri ?? '';
      context.push({ kind: 'file', uri, label: relative(uriPath(uri), roots) });
    } else if (b.type === 'image' && typeof b.data === 'string') {
      images += 1;
      context.push({ kind: 'image', uri: '', label: `image ${images}`, data: b.data, mimeType: typeof b.mimeType === 'string' ? b.mimeType : 'image/png' });
    }
  }
  return { text: texts.join('\n\n'), context };
}
