/**
 * What the webview knows between messages, in one object (it used to be a dozen module-level `let`s in
 * main.ts): the host's state (busy, ready, roots), where drawing goes, the message being streamed, the
 * replayed prompt being rebuilt, the replay held or being drawn, and the live elements later messages
 * change (echoes waiting for their id, Retry buttons).
 */
import type { SessionUpdate } from '../shared/acp';
import type { OlderTurns } from './replay';

/** A message whose Markdown is rendered from `text` into `el`. */
export interface Rendered {
  el: HTMLElement;
  text: string;
}

/** The message receiving streamed chunks. */
export interface Streaming extends Rendered {
  kind: 'agent' | 'thought' | 'user';
  wrap: HTMLElement;
  started: number;
}

/** A replayed prompt being rebuilt: its chunks share one `messageId` (one prompt is one message). */
export interface ReplayedUser {
  key: string;
  blocks: NonNullable<Extract<SessionUpdate, { sessionUpdate: 'user_message_chunk' }>['content']>[];
  wrap: HTMLElement;
}

export class PanelState {
  busy = false;
  ready = false;
  roots: string[] = [];
  /** Where messages, cards and turn ends are appended: the transcript, or a detached piece of older replayed turns. */
  target: HTMLElement;
  streaming: Streaming | null = null;
  replayedUser: ReplayedUser | null = null;
  /** A `session/load` replay being received (held until `replayDone`), or null. */
  replaying: SessionUpdate[] | null = null;
  /** The older turns of a replay still to draw. */
  older: OlderTurns<HTMLElement> | null = null;
  /** While an older piece is drawn: its messages, rendered before the piece is shown. */
  olderDirty: Set<Rendered> | null = null;
  /** Live echoes still carrying their local prompt id (dropped at the turn's end). */
  readonly liveEchoes = new Set<HTMLElement>();
  /** The Retry buttons in the transcript (only the last failure keeps one). */
  readonly retryButtons = new Set<HTMLButtonElement>();

  constructor(readonly transcript: HTMLElement) {
    this.target = transcript;
  }
}
