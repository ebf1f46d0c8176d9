/**
 * Types only: the parts of ACP's session shapes that both bundles read (the extension host through
 * protocol.ts, which re-exports them, and the webview through panelProtocol.ts). Imported with
 * `import type`, so nothing here reaches either bundle at run time.
 */
import type { SessionConfigOption } from './configOptions';
import type { Spend, SpendTotal } from './spend';

export type ModeId = 'default' | 'acceptEdits' | 'plan' | 'bypassPermissions';

export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'resource_link'; uri: string; name: string; mimeType?: string; title?: string }
  | { type: 'resource'; resource: { uri: string; text: string; mimeType?: string } }
  | { type: 'image'; data: string; mimeType: string };

export type StopReason = 'end_turn' | 'max_tokens' | 'max_turn_requests' | 'refusal' | 'cancelled';

export interface SessionInfo {
  sessionId: string;
  cwd?: string;
  title?: string | null;
  updatedAt?: string | null;
}

export interface ToolCallContent {
  type: 'content' | 'diff' | 'terminal';
  content?: ContentBlock;
  path?: string;
  oldText?: string | null;
  newText?: string;
  terminalId?: string;
}

export interface ToolCallLocation {
  path: string;
  line?: number | null;
}

export interface PlanEntry {
  content: string;
  status: 'pending' | 'in_progress' | 'completed';
  priority?: string;
}

export interface AvailableCommand {
  name: string;
  description: string;
  input?: { hint?: string } | null;
}

/** A turn's end as a replayed `agent_message_chunk` carries it (`_meta.sidecar.turnEnd`, docs/protocol.md "Replay"). */
export interface TurnEnd {
  stopReason: string;
  error?: { code?: number; message?: string; data?: Record<string, unknown> | null };
  /** what the turn cost (docs/model.md, "Cost") */
  spend?: Spend;
}

/**
 * A restore's record as `session/load` replays it (`_meta.sidecar.restoreNotice` of an `agent_message_chunk`
 * without text, docs/protocol.md "Replay"): what the rewind or its undo answered, for the same line as live.
 */
export interface RestoreNotice {
  kind: 'rewind' | 'undo';
  restored: string[];
  /** paths whose earlier text went back to the editor's unsaved buffer instead of the disk */
  restoredInEditor?: string[];
  conflicts: { path: string; reason: string }[];
  /** the rewind restored files (a conversation-only rewind that changed none drew no line) */
  files: boolean;
  /** the rewind took the conversation back too: its line was at the end, not under the message */
  conversation: boolean;
  toMessageId?: string;
  toolCallId?: string;
}

/** The line a replayed restore draws, worded by the host as the live one was (`_meta.sidecar.notice`). */
export interface NoticeLine {
  text: string;
  level: 'info' | 'warning';
  /** under this user message, after the lines earlier actions on it left */
  messageId?: string;
}

/** `_meta.sidecar` of a `tool_call` / `tool_call_update`. */
export interface ToolCallMeta {
  /** the tool's name (Edit, Bash, …) */
  tool?: string;
  /** the Task call a sub-agent's call belongs to */
  parentToolCallId?: string;
  /** the final result's metadata (exit_code, count, …) */
  metadata?: Record<string, unknown>;
  /** the user's answer to the call's approval (the option's id, kind and name), live and replayed */
  answer?: { optionId?: string; kind?: string; name?: string };
}

export interface ToolCallUpdate {
  sessionUpdate: 'tool_call' | 'tool_call_update';
  toolCallId: string;
  title?: string | null;
  kind?: string | null;
  status?: string | null;
  rawInput?: unknown;
  rawOutput?: unknown;
  content?: ToolCallContent[] | null;
  locations?: ToolCallLocation[] | null;
  _meta?: { sidecar?: ToolCallMeta } | null;
}

/** `session/update`'s `update`, the kinds the panel draws (a kind it does not know passes by the switch). */
export type SessionUpdate =
  | { sessionUpdate: 'agent_message_chunk'; content?: ContentBlock; _meta?: { sidecar?: { turnEnd?: TurnEnd; restoreNotice?: RestoreNotice; notice?: NoticeLine } } | null }
  | { sessionUpdate: 'agent_thought_chunk'; content?: ContentBlock }
  | { sessionUpdate: 'user_message_chunk'; content?: ContentBlock; messageId?: string; _meta?: { sidecar?: { userMessageId?: string } } | null }
  | ToolCallUpdate
  | { sessionUpdate: 'plan'; entries?: PlanEntry[] }
  | { sessionUpdate: 'usage_update'; used?: number; size?: number; cost?: { amount: number; currency: string } | null; _meta?: { sidecar?: { sessionSpend?: SpendTotal } } | null }
  | { sessionUpdate: 'current_mode_update'; currentModeId?: string }
  | { sessionUpdate: 'config_option_update'; configOptions?: SessionConfigOption[] }
  | { sessionUpdate: 'available_commands_update'; availableCommands?: AvailableCommand[] };

export type SessionUpdateKind = SessionUpdate['sessionUpdate'];

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';
}

/** The tool call a `session/request_permission` asks about. */
export interface PermissionToolCall {
  toolCallId: string;
  title?: string | null;
  kind?: string | null;
  rawInput?: unknown;
  content?: ToolCallContent[] | null;
  locations?: ToolCallLocation[] | null;
}
