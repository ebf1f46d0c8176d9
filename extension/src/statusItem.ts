/**
 * The status-bar item: idle / working / N waiting. While something waits for the user it stays, with the
 * warning colours, until it is answered or cancelled (a notification can hide itself; this cannot).
 */
import * as vscode from 'vscode';

export function statusText(busy: boolean, waiting: number): { text: string; tooltip: string; warn: boolean } {
  if (waiting > 0) return { text: `$(bell-dot) Sidecar: ${waiting} waiting`, tooltip: `${waiting} waiting for you — click to show`, warn: true };
  if (busy) return { text: '$(sync~spin) Sidecar: working', tooltip: 'The agent is working — click to show', warn: false };
  return { text: '$(comment-discussion) Sidecar', tooltip: 'Sidecar: idle — click to open the chat', warn: false };
}

export class StatusItem implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('sidecar.status', vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = 'Sidecar';
    this.item.command = 'sidecar.focusChat';
    this.update(false, 0);
    this.item.show();
  }

  update(busy: boolean, waiting: number): void {
    const s = statusText(busy, waiting);
    this.item.text = s.text;
    this.item.tooltip = s.tooltip;
    this.item.backgroundColor = s.warn ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
