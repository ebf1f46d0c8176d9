/** Counts what waits for the user (approvals, reviews, questions) so the chat view can show a badge. */
import * as vscode from 'vscode';

export class Pending implements vscode.Disposable {
  private count = 0;
  private readonly emitter = new vscode.EventEmitter<number>();
  readonly onDidChange = this.emitter.event;

  get size(): number {
    return this.count;
  }

  async track<T>(work: () => Thenable<T> | Promise<T>): Promise<T> {
    this.count += 1;
    this.emitter.fire(this.count);
    try {
      return await work();
    } finally {
      this.count -= 1;
      this.emitter.fire(this.count);
    }
  }

  dispose(): void {
    this.emitter.dispose();
  }
}
