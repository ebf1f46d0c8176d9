/**
 * Cancellation for what the sidecar asks of the user. A request is cancelled by the sidecar's
 * `$/cancelRequest` (the LSP token) or, as a safety net, when its session's turn ends: a notification,
 * QuickPick or diff tab must never outlive the turn that asked for it.
 */
import * as vscode from 'vscode';

export class TurnTokens {
  private readonly bySession = new Map<string, Set<vscode.CancellationTokenSource>>();

  /** A token cancelled by `token` or by the end of `sessionId`'s turn; dispose it when answered. */
  link(sessionId: string | undefined, token: vscode.CancellationToken | undefined): { token: vscode.CancellationToken; dispose(): void } {
    const source = new vscode.CancellationTokenSource();
    const sub = token?.onCancellationRequested(() => source.cancel());
    if (token?.isCancellationRequested) source.cancel();
    const key = sessionId ?? '';
    let set = this.bySession.get(key);
    if (!set) this.bySession.set(key, (set = new Set()));
    set.add(source);
    return {
      token: source.token,
      dispose: () => {
        sub?.dispose();
        set?.delete(source);
        source.dispose();
      },
    };
  }

  /** The turn of `sessionId` ended: whatever it still waits for is cancelled. */
  turnEnded(sessionId: string): void {
    for (const s of this.bySession.get(sessionId) ?? []) s.cancel();
  }

  get size(): number {
    let n = 0;
    for (const s of this.bySession.values()) n += s.size;
    return n;
  }
}
