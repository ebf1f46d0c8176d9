/**
 * The chat panel's messages, declared once for both sides (Cline's `ExtensionMessage.ts` /
 * `WebviewMessage.ts` shape): `ToView` is what the extension host posts to the webview, `FromView` what the
 * webview posts back. Types only: the host (panel/chatView.ts, panel/sessions.ts) and the webview
 * (webview/*.ts) both `import type` them, so neither side casts a message and neither bundle carries them.
 */
import type { ModeId, PermissionOption, PermissionToolCall, SessionInfo, SessionUpdate, StopReason } from './acp';
import type { SessionConfigOption } from './configOptions';
import type { ModelRetryParams } from './modelRetry';
import type { Spend } from './spend';

/**
 * A piece of context the user attached to the next prompt (a chip in the composer). `problems` and
 * `terminal` carry their text (composed in the host); `git` and `url` are links the sidecar resolves
 * (shared/mentions.ts).
 */
export interface ContextItem {
  kind: 'file' | 'selection' | 'image' | 'problems' | 'terminal' | 'git' | 'url';
  uri: string;
  label: string;
  /** selection, problems and terminal: the text sent */
  text?: string;
  /** A mention that could not be made (no terminal, no shell integration): shown as an error chip, never sent. */
  error?: string;
  startLine?: number;
  endLine?: number;
  languageId?: string;
  /** image only: base64 data and its MIME type */
  data?: string;
  mimeType?: string;
}

/** One row of the `@` completion. */
export interface FileResult {
  path: string;
  isFolder: boolean;
  uri?: string;
}

/** A failed prompt's error as the panel gets it: the JSON-RPC error's code, message and data. */
export interface PromptError {
  code?: number;
  message: string;
  data?: unknown;
}

/** The panel's state around the transcript (sessions, mode, busy, what waits), sent whole on each change. */
export interface StateMessage {
  type: 'state';
  sessionId: string | null;
  sessions: SessionInfo[];
  mode: string;
  busy: boolean;
  ready: boolean;
  failed: boolean;
  pending: number;
  roots: string[];
  configOptions: SessionConfigOption[];
}

/** The extension host → the webview. */
export type ToView =
  | StateMessage
  | { type: 'clear'; replay?: boolean }
  /** The `session/load` that `clear` with `replay: true` announced has answered: the replay is whole. */
  | { type: 'replayDone' }
  | { type: 'update'; update: SessionUpdate }
  | { type: 'userPrompt'; text: string; context: ContextItem[]; promptId: string }
  | { type: 'userMessageId'; promptId: string; messageId: string }
  | { type: 'approval'; key: string; toolCall: PermissionToolCall; options: PermissionOption[] }
  | { type: 'approvalDone'; key: string; toolCallId: string; label: string; outcome: 'allowed' | 'rejected' | 'cancelled'; feedback?: string }
  | { type: 'decided'; toolCallId: string; outcome: 'rejected' | 'cancelled'; feedback?: string }
  | { type: 'focusCard'; toolCallId: string }
  /** A proposed edit of this call waits for the user's review (`_sidecar/review_edit`), or no longer does. */
  | { type: 'reviewing'; toolCallId: string; waiting: boolean }
  /** The view was hidden or shown again (another view in front of it, the side bar closed). */
  | { type: 'visibility'; visible: boolean }
  /** "Focus the Chat" (Ctrl/Cmd+Esc): the keyboard goes to the prompt box. */
  | { type: 'focusPrompt' }
  | { type: 'fileResults'; requestId: number; items: FileResult[] }
  | { type: 'turnEnd'; stopReason: StopReason | 'error'; error?: PromptError; spend?: Spend }
  | { type: 'retry'; retry: ModelRetryParams }
  | { type: 'addContext'; item: ContextItem }
  | { type: 'truncate'; messageId: string }
  /**
   * A line in the transcript; with `messageId`, right after that user message (a rewind's outcome); with
   * `undoId`, an "Undo restore" button on it. `restored`: the line tells what a restore or an undo did;
   * the sidecar keeps the undo of the newest restore only, so every earlier "Undo restore" button goes.
   */
  | { type: 'notice'; text: string; level: 'info' | 'warning'; messageId?: string; undoId?: string; restored?: true }
  | { type: 'error'; message: string }
  /** Messages posted within a few ms of each other, in order (chatView.ts `post`). */
  | { type: 'batch'; messages: ToView[] };

/** The webview → the extension host. */
export type FromView =
  | { type: 'ready' }
  | { type: 'prompt'; text: string; context: ContextItem[] }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'loadSession'; sessionId: string }
  | { type: 'setMode'; modeId: ModeId }
  | { type: 'setConfigOption'; configId: string; value: string }
  | { type: 'mentionFile' }
  | { type: 'addSelection' }
  /** An `@problems` / `@terminal` picked in the completion: the host answers with `addContext`. */
  | { type: 'addMention'; mention: 'problems' | 'terminal' }
  | { type: 'refreshSessions' }
  | { type: 'openLocation'; path: string; line?: number }
  | { type: 'approve'; key: string; optionId: string; feedback?: string }
  | { type: 'openDiff'; path: string; oldText: string; newText: string }
  | { type: 'openText'; text: string; title: string }
  /** "Open diff" on a card waiting for review. */
  | { type: 'showReview'; toolCallId: string }
  | { type: 'copy'; text: string }
  | { type: 'findFiles'; query: string; requestId: number }
  | { type: 'rewind'; messageId: string; files: boolean; conversation: boolean }
  /** "Compare": what a restore to before this message, or to before this writing tool call, would change. */
  | { type: 'compare'; messageId?: string; toolCallId?: string }
  /** "Restore" on a writing tool call's card: the files back to before that call (the conversation stays). */
  | { type: 'restoreToolCall'; toolCallId: string }
  /** "Undo restore" on a restore's notice (`messageId`: the message the restore went back to; none for a tool call's). */
  | { type: 'undoRestore'; undoId: string; messageId?: string }
  | { type: 'editResend'; messageId: string; text: string; context?: ContextItem[] };

/** The `ToView` message of one type (`ToViewOf<'state'>`). */
export type ToViewOf<T extends ToView['type']> = Extract<ToView, { type: T }>;

/** How the webview posts: only `FromView` messages type-check. */
export type PostToHost = (message: FromView) => void;
