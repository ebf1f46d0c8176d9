/**
 * Every method the extension and the sidecar exchange over the LSP connection, declared once
 * (docs/contract.md §3). The sidecar's own list is the contract; this file mirrors it.
 *
 * Direction is in the name of each group: "to the sidecar" are requests/notifications we send,
 * "from the sidecar" are requests we answer.
 */
import { NotificationType, RequestType } from 'vscode-jsonrpc';
import type { ModelRetryParams } from './shared/modelRetry';
import type { SessionConfigOption } from './shared/configOptions';
import type { ContentBlock, ModeId, PermissionOption, PermissionToolCall, SessionInfo, SessionUpdate, StopReason } from './shared/acp';
import type { Spend, Usage } from './shared/spend';

// The ACP shapes the panel reads too are declared in shared/acp.ts (types only, both bundles import them).
export type * from './shared/acp';

// ---------------------------------------------------------------- ACP shapes (the parts we use)

export const MODE_IDS: readonly ModeId[] = ['default', 'acceptEdits', 'plan', 'bypassPermissions'];

export interface SidecarClientMeta {
  reviewEdit: boolean;
  askUser: boolean;
  lspQuery: boolean;
  diagnostics: boolean;
  /** `_sidecar/notify` while the panel is hidden (told with `_sidecar/panel_visibility`). */
  notify: boolean;
}

export interface ClientCapabilities {
  fs: { readTextFile: boolean; writeTextFile: boolean };
  terminal: boolean;
  _meta: { sidecar: SidecarClientMeta };
}

export interface AgentCapabilities {
  loadSession?: boolean;
  promptCapabilities?: { image?: boolean; audio?: boolean; embeddedContext?: boolean };
  [key: string]: unknown;
}

export interface SessionMode {
  id: string;
  name: string;
  description?: string;
}

export interface SessionModeState {
  currentModeId: string;
  availableModes: SessionMode[];
}

export interface NewSessionParams {
  cwd: string;
  mcpServers: unknown[];
  additionalDirectories?: string[];
}
export interface NewSessionResult {
  sessionId: string;
  modes?: SessionModeState | null;
  configOptions?: SessionConfigOption[] | null;
}

export interface LoadSessionParams {
  sessionId: string;
  cwd: string;
  mcpServers: unknown[];
}
export interface LoadSessionResult {
  modes?: SessionModeState | null;
  configOptions?: SessionConfigOption[] | null;
}

/** `session/set_config_option` (a select): answers every option with its current value. */
export interface SetConfigOptionParams {
  sessionId: string;
  configId: string;
  value: string;
}
export interface SetConfigOptionResult {
  configOptions: SessionConfigOption[];
}

export interface ListSessionsParams {
  cwd?: string;
  cursor?: string;
}
export interface ListSessionsResult {
  sessions: SessionInfo[];
  nextCursor?: string | null;
}

export interface PromptParams {
  sessionId: string;
  prompt: ContentBlock[];
}
export interface PromptResult {
  stopReason: StopReason;
  /** ACP's (unstable) usage of the turn */
  usage?: Usage;
  /** `_meta.sidecar.userMessageId`: the id `_sidecar/sessions/rewind` takes to go back before this prompt;
   * `spend`: what the turn and the session cost (docs/model.md, "Cost"). */
  _meta?: { sidecar?: { userMessageId?: string; spend?: Spend } };
}

export interface SetModeParams {
  sessionId: string;
  modeId: ModeId;
}

export interface CancelParams {
  sessionId: string;
}

export interface SessionNotification {
  sessionId: string;
  update: SessionUpdate;
}

export interface RequestPermissionParams {
  sessionId: string;
  toolCall: PermissionToolCall;
  options: PermissionOption[];
}
export type RequestPermissionResult =
  | { outcome: { outcome: 'selected'; optionId: string; _meta?: { feedback?: string } } }
  | { outcome: { outcome: 'cancelled' } };

// ---------------------------------------------------------------- sidecar extension methods

export interface Hunk {
  index: number;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
}

export interface ReviewEditParams {
  sessionId: string;
  toolCallId: string;
  path: string;
  oldText: string | null;
  newText: string;
  unifiedDiff: string;
  hunks: Hunk[];
}
export interface ReviewEditResult {
  outcome: 'accepted' | 'rejected' | 'cancelled';
  acceptedHunks?: number[];
  finalText?: string;
  feedback?: string;
}

export interface AskUserQuestion {
  question: string;
  header: string;
  multiSelect: boolean;
  options: { label: string; description: string }[];
}
export interface AskUserParams {
  sessionId: string;
  toolCallId: string;
  questions: AskUserQuestion[];
}
export interface AskUserResult {
  outcome: 'answered' | 'cancelled';
  answers: Record<string, string[]>;
}

export type LspOperation =
  | 'goToDefinition'
  | 'findReferences'
  | 'hover'
  | 'documentSymbol'
  | 'workspaceSymbol'
  | 'goToImplementation'
  | 'prepareCallHierarchy'
  | 'incomingCalls'
  | 'outgoingCalls';

export interface LspQueryParams {
  operation: LspOperation;
  uri: string;
  position?: { line: number; character: number };
  query?: string;
  item?: unknown;
}
export interface LspQueryResult {
  result: unknown;
}

export interface DiagnosticsParams {
  uris: string[];
}
export interface DiagnosticsResult {
  items: { uri: string; diagnostics: unknown[] }[];
}

export interface NotifyParams {
  sessionId: string;
  kind: 'turn_ended' | 'waiting' | string;
  message: string;
  title?: string;
}

export interface PanelVisibilityParams {
  visible: boolean;
}

export interface RewindParams {
  sessionId: string;
  /** required unless `toolCallId` names the point */
  toMessageId?: string;
  /** restore files (default true) */
  files?: boolean;
  /** truncate the conversation (default true; must be false with `toolCallId`) */
  conversation?: boolean;
  /** back to the state before this writing tool call of that message's turn (files only) */
  toolCallId?: string;
}

/** `_sidecar/sessions/compare`: what a rewind of the files to the same point would change. */
export interface CompareParams {
  sessionId: string;
  /** one of the two: a user message, or a writing tool call (the state before it) */
  toMessageId?: string;
  toolCallId?: string;
}

/** One file a restore would change: `delete` (the agent created it), `create` (gone now), `modify`. */
export interface CompareFile {
  path: string;
  change: 'modify' | 'create' | 'delete';
  /** the checkpoint's text (absent for `delete` and for a binary file) */
  checkpoint?: string;
  /** the current text (absent for `create` and for a binary file) */
  current?: string;
  binary?: boolean;
}

export interface CompareResult {
  files: CompareFile[];
  /** files a restore would leave alone, with the reason */
  conflicts: { path: string; reason: string }[];
}

// ---------------------------------------------------------------- method table

/** To the sidecar. */
export const SessionNew = new RequestType<NewSessionParams, NewSessionResult, void>('session/new');
export const SessionLoad = new RequestType<LoadSessionParams, LoadSessionResult | null, void>('session/load');
export const SessionList = new RequestType<ListSessionsParams, ListSessionsResult, void>('session/list');
export const SessionPrompt = new RequestType<PromptParams, PromptResult, void>('session/prompt');
export const SessionSetMode = new RequestType<SetModeParams, unknown, void>('session/set_mode');
export const SessionSetConfigOption = new RequestType<SetConfigOptionParams, SetConfigOptionResult, void>(
  'session/set_config_option',
);
export const SessionCancel = new NotificationType<CancelParams>('session/cancel');
export const PanelVisibility = new NotificationType<PanelVisibilityParams>('_sidecar/panel_visibility');
export const SessionsRewind = new RequestType<RewindParams, unknown, void>('_sidecar/sessions/rewind');
/** `_sidecar/sessions/undo_rewind`: the files of the last files-only rewind (its `undoId`) put back as they were before it. */
export const SessionsUndoRewind = new RequestType<{ sessionId: string; undoId: string }, unknown, void>('_sidecar/sessions/undo_rewind');
export const SessionsCompare = new RequestType<CompareParams, CompareResult, void>('_sidecar/sessions/compare');
/** The user granted Workspace Trust (the initial state is `initializationOptions.workspaceTrust`). */
export interface WorkspaceTrustParams {
  trusted: boolean;
}
export const WorkspaceTrust = new NotificationType<WorkspaceTrustParams>('_sidecar/workspace_trust');

/** From the sidecar. */
export const SessionUpdateNotification = new NotificationType<SessionNotification>('session/update');
export const RequestPermission = new RequestType<RequestPermissionParams, RequestPermissionResult, void>(
  'session/request_permission',
);
export const ReviewEdit = new RequestType<ReviewEditParams, ReviewEditResult, void>('_sidecar/review_edit');
export const AskUser = new RequestType<AskUserParams, AskUserResult, void>('_sidecar/ask_user');
export const LspQuery = new RequestType<LspQueryParams, LspQueryResult, void>('_sidecar/lsp_query');
export const Diagnostics = new RequestType<DiagnosticsParams, DiagnosticsResult, void>('_sidecar/diagnostics');
export const Notify = new NotificationType<NotifyParams>('_sidecar/notify');

/** A model request failed and is retried after `delayMs` (docs/protocol.md, `_sidecar/model_retry`). */
export type { ModelRetryParams, SessionConfigOption };
export const ModelRetry = new NotificationType<ModelRetryParams>('_sidecar/model_retry');

/** What we tell the sidecar we can do (`initializationOptions.acp.clientCapabilities`). */
export function clientCapabilities(): ClientCapabilities {
  return {
    // The sidecar reads files itself; unsaved buffers reach it through LSP text document sync.
    fs: { readTextFile: false, writeTextFile: false },
    terminal: false,
    _meta: { sidecar: { reviewEdit: true, askUser: true, lspQuery: true, diagnostics: true, notify: true } },
  };
}
