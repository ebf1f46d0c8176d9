/**
 * Types only, shared by the extension host (protocol.ts) and the webview bundle (webview/replay.ts): the
 * webview cannot import protocol.ts at run time (it pulls in vscode-jsonrpc), so a payload both sides read
 * is declared here once and imported with `import type` (erased from both bundles).
 */

/** `_sidecar/model_retry` params (docs/protocol.md): a model request failed and is retried after `delayMs`. */
export interface ModelRetryParams {
  sessionId: string;
  /** the attempt that failed, 1-based */
  attempt: number;
  maxAttempts: number;
  delayMs: number;
  status?: number;
  errorType?: string;
  message?: string;
  /** the sub-agent whose request is retried, when it is not the main agent */
  agent?: string;
}
