/**
 * Read-only in-memory documents for the chat's "Open diff" (the old and new text of an edit), "Open in
 * editor" (a tool's whole output) and "Compare" (each file now against a checkpoint). Scheme
 * `sidecar-text`; nothing is written to disk.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { CompareResult } from './protocol';

export const READONLY_SCHEME = 'sidecar-text';

export class ReadonlyTexts implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private n = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query ? `${uri.path}?${uri.query}` : uri.path) ?? '';
  }

  /** Two texts of one file under one path (a diff between them is not shown as a rename), told apart by the query. */
  private putPair(name: string, left: string, right: string, [leftTag, rightTag]: [string, string]): [vscode.Uri, vscode.Uri] {
    // the path is the file's own (the diff headers show its name and folder); the query makes it unique
    const p = `/${name}`;
    const n = ++this.n;
    const uri = (tag: string, text: string): vscode.Uri => {
      this.texts.set(`${p}?${n}.${tag}`, text);
      return vscode.Uri.from({ scheme: READONLY_SCHEME, path: p, query: `${n}.${tag}` });
    };
    return [uri(leftTag, left), uri(rightTag, right)];
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

  /**
   * "Compare" on a checkpoint: what a restore would change, the current text on the left and the
   * checkpoint's (what the restore writes) on the right; one file in VS Code's diff editor, several in its
   * multi-file diff editor (`vscode.changes`). Both sides are the texts the sidecar read, so the view is
   * exactly what a restore would do at that moment. Files left out (binary) and the files a restore would
   * leave alone are said in a notification. Returns the chat's line when there is nothing to show.
   */
  async openCompare(result: CompareResult, title: string, rel: (p: string) => string): Promise<string | null> {
    const shown = result.files.filter((f) => !f.binary);
    const binary = result.files.filter((f) => f.binary).map((f) => rel(f.path));
    const kept = result.conflicts.map((c) => `${rel(c.path)} (${c.reason})`);
    const pairs = shown.map((f) => {
      const label = f.change === 'delete' ? 'created by the agent: a restore deletes it' : f.change === 'create' ? 'gone now: a restore brings it back' : '';
      const [now, then] = this.putPair(rel(f.path).replace(/^\/+/, ''), f.current ?? '', f.checkpoint ?? '', ['now', 'checkpoint']);
      return { file: f, label, now, then };
    });
    if (pairs.length === 1) {
      const [p] = pairs;
      const base = path.basename(p.file.path);
      await vscode.commands.executeCommand('vscode.diff', p.now, p.then, `${base}: now ↔ ${title}${p.label ? ` (${p.label})` : ''}`, { preview: true });
    } else if (pairs.length > 1) {
      try {
        await vscode.commands.executeCommand('vscode.changes', `Now ↔ ${title}`, pairs.map((p) => [vscode.Uri.file(p.file.path), p.now, p.then]));
      } catch {
        // an editor without the multi-file diff editor: one diff tab per file
        for (const p of pairs) await vscode.commands.executeCommand('vscode.diff', p.now, p.then, `${path.basename(p.file.path)}: now ↔ ${title}`, { preview: false });
      }
    }
    const notes: string[] = [];
    if (binary.length) notes.push(`not shown (binary): ${binary.join(', ')}`);
    if (kept.length) notes.push(`a restore would leave alone: ${kept.join('; ')}`);
    if (notes.length) void vscode.window.showWarningMessage(`Sidecar: Compare ${title}: ${notes.join('. ')}.`);
    return result.files.length ? null : `Nothing to compare: restoring to ${title} would change no file.`;
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
