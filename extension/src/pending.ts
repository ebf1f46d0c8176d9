/** Counts what waits for the user (approvals, reviews, questions) so the chat view can show a badge. */
import * as vscode from 'vscode';

export class Pending implements vscode.Disposable {
  private count = 0;
  /** By session: each chat counts what waits in the session it shows (an editor tab's are its own). */
  private readonly bySessionId = new Map<string, number>();
  private readonly emitter = new vscode.EventEmitter<number>();
  readonly onDidChange = this.emitter.event;

  get size(): number {
    return this.count;
  }

  /** What waits in `sessionId`. */
  sizeOf(sessionId: string | null | undefined): number {
    return sessionId ? (this.bySessionId.get(sessionId) ?? 0) : 0;
  }

  /** What waits, per session; requests that came without one under `undefined`. */
  *bySession(): Generator<[string | undefined, number]> {
    let attributed = 0;
    for (const [sessionId, n] of this.bySessionId) {
      attributed += n;
      yield [sessionId, n];
    }
    if (this.count > attributed) yield [undefined, this.count - attributed];
  }

  async track<T>(work: () => Thenable<T> | Promise<T>, sessionId?: string): Promise<T> {
    const add = (n: number): void => {
      this.count += n;
      if (sessionId) {
        const left = (this.bySessionId.get(sessionId) ?? 0) + n;
        if (left > 0) this.bySessionId.set(sessionId, left);
        else this.bySessionId.delete(sessionId);
      }
      this.emitter.fire(this.count);
    };
    add(1);
    try {
      return await work();
    } finally {
      add(-1);
    }
  }

  dispose(): void {
    this.emitter.dispose();
  }
}
