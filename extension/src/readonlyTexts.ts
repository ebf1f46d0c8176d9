/**
 * Read-only in-memory documents for the chat's "Open diff" (the old and new text of an edit) and "Open in
 * editor" (a tool's whole output). Scheme `sidecar-text`; nothing is written to disk.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

export const READONLY_SCHEME = 'sidecar-text';

export class ReadonlyTexts implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private n = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  private put(name: string, text: string): vscode.Uri {
    const p = `/${++this.n}/${name}`;
    this.texts.set(p, text);
    return vscode.Uri.from({ scheme: READONLY_SCHEME, path: p });
  }

  async openDiff(file: string, oldText: string, newText: string): Promise<void> {
    const base = path.basename(file) || 'file';
    const left = this.put(base, oldText);
    const right = this.put(base, newText);
    await vscode.commands.executeCommand('vscode.diff', left, right, `${base} (agent's edit)`, { preview: true });
  }

  async openText(text: string, title: string): Promise<void> {
    const uri = this.put(`${title.replace(/[^\w .-]+/g, '_')}.log`, text);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  dispose(): void {
    this.texts.clear();
  }
}
