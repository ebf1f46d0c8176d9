/**
 * `_sidecar/review_edit`: a proposed edit shown as a diff between the file and an editable proposal
 * document (scheme `sidecar-proposal`, held in memory); a proposed create is the proposal alone (VS Code's
 * diff of an empty left side shows its one empty line as removed, a line the file never had). The user accepts or rejects the whole edit from
 * the editor title, or hunk by hunk from CodeLenses, or changes the proposal before accepting.
 *
 * Answer: `accepted` (+ `acceptedHunks` when some hunks were rejected, or `finalText` when the user typed
 * in the proposal), `rejected` (+ optional `feedback`), or `cancelled` when the sidecar gave up waiting.
 * The sidecar writes the accepted text itself (through `workspace/applyEdit` for open documents).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { firstChangedLine, hunkLine, revertHunks } from '../hunks';
import type { ReviewEditParams, ReviewEditResult } from '../protocol';
import { isInside } from '../python';

export const PROPOSAL_SCHEME = 'sidecar-proposal';

/** Outside every workspace folder (a window without folders flags nothing). */
function outsideWorkspace(p: string): boolean {
  const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  return roots.length > 0 && !isInside(p, roots);
}

type Decision = 'accepted' | 'rejected';

interface Review {
  id: number;
  params: ReviewEditParams;
  proposalUri: vscode.Uri;
  originalUri: vscode.Uri;
  decisions: Map<number, Decision>;
  /** The proposal text as the hunk decisions make it; a document differing from it was typed in. */
  computed: string;
  finish: (r: ReviewEditResult) => void;
}

/**
 * A proposal's document: `sidecar-proposal:/<file name>?<n>`. The file name is the whole path, so the
 * editor's breadcrumb shows it and nothing else; the review's number (which keeps two proposals for files of
 * one name apart) is the query (digits: nothing to escape), which no label shows. (It was `/<n>/<file name>`:
 * the breadcrumb of a proposed create, the proposal alone, read "1 › new.py".)
 */
export function proposalUri(id: number, filePath: string): vscode.Uri {
  return vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: `/${path.basename(filePath) || 'proposal'}`, query: String(id) });
}

/** Where a proposal's text is kept: its path and its query. */
function fileKey(uri: vscode.Uri): string {
  return uri.query ? `${uri.path}?${uri.query}` : uri.path;
}

/** An in-memory file system for proposals, so the right side of the diff is editable and saveable. */
export class ProposalFileSystem implements vscode.FileSystemProvider {
  private readonly files = new Map<string, Uint8Array>();
  private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;

  set(uri: vscode.Uri, text: string): void {
    const existed = this.files.has(fileKey(uri));
    this.files.set(fileKey(uri), new TextEncoder().encode(text));
    this.emitter.fire([{ type: existed ? vscode.FileChangeType.Changed : vscode.FileChangeType.Created, uri }]);
  }

  text(uri: vscode.Uri): string | undefined {
    const b = this.files.get(fileKey(uri));
    return b === undefined ? undefined : new TextDecoder().decode(b);
  }

  delete(uri: vscode.Uri): void {
    this.files.delete(fileKey(uri));
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const b = this.files.get(fileKey(uri));
    if (b !== undefined) return { type: vscode.FileType.File, ctime: 0, mtime: Date.now(), size: b.byteLength };
    if ([...this.files.keys()].some((k) => k.startsWith(uri.path.endsWith('/') ? uri.path : uri.path + '/'))) {
      return { type: vscode.FileType.Directory, ctime: 0, mtime: 0, size: 0 };
    }
    throw vscode.FileSystemError.FileNotFound(uri);
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(): void {
    /* directories are implicit */
  }

  readFile(uri: vscode.Uri): Uint8Array {
    const b = this.files.get(fileKey(uri));
    if (b === undefined) throw vscode.FileSystemError.FileNotFound(uri);
    return b;
  }

  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    this.files.set(fileKey(uri), content);
    this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  rename(): void {
    throw vscode.FileSystemError.NoPermissions('proposals cannot be renamed');
  }
}

export class ReviewManager implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly reviews = new Map<string, Review>();
  private nextId = 1;
  private readonly lensEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensEmitter.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    readonly fs: ProposalFileSystem,
    private readonly askFeedback: () => Thenable<string | undefined> = () =>
      vscode.window.showInputBox({
        title: 'Reject the proposed edit',
        prompt: 'Tell the agent why, or what to do instead (optional). Enter sends; Escape rejects without a note.',
        ignoreFocusOut: true,
      }),
  ) {
    this.disposables.push(
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document.uri.scheme === PROPOSAL_SCHEME) this.lensEmitter.fire();
      }),
    );
  }

  /** How many proposals wait for an answer. */
  get size(): number {
    return this.reviews.size;
  }

  review(params: ReviewEditParams, token?: vscode.CancellationToken): Promise<ReviewEditResult> {
    return new Promise<ReviewEditResult>((resolve) => {
      const id = this.nextId++;
      const proposal = proposalUri(id, params.path);
      // A create has no left side (see open); its review is found by the proposal alone.
      const originalUri = params.oldText === null ? proposal : vscode.Uri.file(params.path);
      this.fs.set(proposal, params.newText);
      let settled = false;
      const review: Review = {
        id,
        params,
        proposalUri: proposal,
        originalUri,
        decisions: new Map(),
        computed: params.newText,
        finish: (r) => {
          if (settled) return;
          settled = true;
          this.reviews.delete(proposal.toString());
          this.lensEmitter.fire();
          void this.close(review).finally(() => resolve(r));
        },
      };
      this.reviews.set(proposal.toString(), review);
      token?.onCancellationRequested(() => review.finish({ outcome: 'cancelled' }));
      this.open(review);
      if (outsideWorkspace(params.path)) {
        // With a button it stays until dismissed (a toast without one hides itself).
        const verb = params.oldText === null ? 'create' : 'edit';
        void vscode.window
          .showWarningMessage(`Sidecar proposes to ${verb} ${params.path}, outside the workspace folders. Review it before you accept.`, 'Show Diff')
          .then((c) => (c && !settled ? this.open(review) : undefined));
      }
      this.lensEmitter.fire();
    });
  }

  /** "Open diff" on a card waiting for review: the proposal's diff in front again. */
  reveal(toolCallId: string): void {
    const r = [...this.reviews.values()].find((x) => x.params.toolCallId === toolCallId);
    if (r) this.open(r);
  }

  private open(r: Review): void {
    const base = path.basename(r.params.path) || 'proposal';
    const verb = r.params.oldText === null ? 'create' : 'edit';
    // Outside the workspace the title says so and names the whole path: ~/.bashrc must not look like any file.
    const title = outsideWorkspace(r.params.path) ? `${r.params.path}: proposed ${verb} OUTSIDE the workspace (Sidecar)` : `${base}: proposed ${verb} (Sidecar)`;
    // A create is the new file alone, as VS Code's Source Control opens an added file: against an empty
    // left side the diff editor marks that side's one (empty) line removed, and no diff of a create avoids it.
    if (r.params.oldText === null) void vscode.commands.executeCommand('vscode.open', r.proposalUri, { preview: false }, title);
    else void vscode.commands.executeCommand('vscode.diff', r.originalUri, r.proposalUri, title, { preview: false });
  }

  private find(uri?: vscode.Uri): Review | undefined {
    const target = uri ?? vscode.window.activeTextEditor?.document.uri;
    if (target && this.reviews.has(target.toString())) return this.reviews.get(target.toString());
    // From the title bar of a diff editor VS Code may pass the left side; fall back to the newest.
    if (target) {
      for (const r of this.reviews.values()) if (r.originalUri.toString() === target.toString()) return r;
    }
    const all = [...this.reviews.values()];
    return all.length === 1 ? all[0] : undefined;
  }

  private documentText(r: Review): string {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === r.proposalUri.toString());
    return doc ? doc.getText() : (this.fs.text(r.proposalUri) ?? r.computed);
  }

  private rejectedSet(r: Review): Set<number> {
    return new Set([...r.decisions].filter(([, d]) => d === 'rejected').map(([i]) => i));
  }

  /** Accept the whole proposal as it now reads. */
  async accept(uri?: vscode.Uri): Promise<void> {
    const r = this.find(uri);
    if (!r) {
      void vscode.window.showInformationMessage('No proposed edit is waiting here.');
      return;
    }
    const text = this.documentText(r);
    if (text !== r.computed) {
      r.finish({ outcome: 'accepted', finalText: text });
      return;
    }
    const rejected = this.rejectedSet(r);
    if (rejected.size === 0) {
      r.finish({ outcome: 'accepted' });
      return;
    }
    const kept = r.params.hunks.map((h) => h.index).filter((i) => !rejected.has(i));
    r.finish(kept.length === 0 ? { outcome: 'rejected' } : { outcome: 'accepted', acceptedHunks: kept });
  }

  /** Reject the whole proposal, with optional feedback for the agent. */
  async reject(uri?: vscode.Uri): Promise<void> {
    const r = this.find(uri);
    if (!r) {
      void vscode.window.showInformationMessage('No proposed edit is waiting here.');
      return;
    }
    const feedback = (await this.askFeedback())?.trim();
    r.finish(feedback ? { outcome: 'rejected', feedback } : { outcome: 'rejected' });
  }

  /** Decide one hunk; when every hunk has a decision, the review answers by itself. */
  async decideHunk(uriString: string, index: number, decision: Decision | undefined): Promise<void> {
    const r = this.reviews.get(uriString);
    if (!r) return;
    if (this.documentText(r) !== r.computed) {
      void vscode.window.showWarningMessage('The proposal was changed by hand: accept or reject it as a whole.');
      return;
    }
    if (decision) r.decisions.set(index, decision);
    else r.decisions.delete(index);
    const text = revertHunks(r.params.oldText, r.params.newText, r.params.hunks, this.rejectedSet(r));
    if (text !== r.computed) {
      r.computed = text;
      await this.replaceProposal(r, text);
    }
    this.lensEmitter.fire();
    if (r.params.hunks.every((h) => r.decisions.has(h.index))) await this.accept(r.proposalUri);
  }

  private async replaceProposal(r: Review, text: string): Promise<void> {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === r.proposalUri.toString());
    if (!doc) {
      this.fs.set(r.proposalUri, text);
      return;
    }
    const edit = new vscode.WorkspaceEdit();
    edit.replace(r.proposalUri, new vscode.Range(0, 0, doc.lineCount, 0), text);
    await vscode.workspace.applyEdit(edit);
    await doc.save();
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const r = this.reviews.get(document.uri.toString());
    if (!r || document.getText() !== r.computed) return [];
    const rejected = this.rejectedSet(r);
    const lenses: vscode.CodeLens[] = [];
    const uri = r.proposalUri.toString();
    const n = r.params.hunks.length;
    for (const h of r.params.hunks) {
      const skip = rejected.has(h.index) ? 0 : firstChangedLine(r.params.oldText, r.params.newText, h);
      const line = Math.min(hunkLine(r.params.hunks, rejected, h.index) + skip, Math.max(0, document.lineCount - 1));
      const at = new vscode.Range(line, 0, line, 0);
      const label = `hunk ${h.index + 1}/${n}`;
      const d = r.decisions.get(h.index);
      if (d === undefined) {
        lenses.push(
          new vscode.CodeLens(at, { title: `✓ Accept ${label}`, command: 'sidecar.review.acceptHunk', arguments: [uri, h.index] }),
          new vscode.CodeLens(at, { title: `✗ Reject ${label}`, command: 'sidecar.review.rejectHunk', arguments: [uri, h.index] }),
        );
      } else {
        lenses.push(
          new vscode.CodeLens(at, {
            title: `${d === 'accepted' ? 'Accepted' : 'Rejected'} ${label} — undo`,
            command: 'sidecar.review.undoHunk',
            arguments: [uri, h.index],
          }),
        );
      }
    }
    return lenses;
  }

  private async close(r: Review): Promise<void> {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === r.proposalUri.toString());
    if (doc?.isDirty) await doc.save(); // into memory, so closing asks nothing
    const tabs: vscode.Tab[] = [];
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        const input = tab.input;
        if (input instanceof vscode.TabInputTextDiff && input.modified.toString() === r.proposalUri.toString()) tabs.push(tab);
        else if (input instanceof vscode.TabInputText && input.uri.toString() === r.proposalUri.toString()) tabs.push(tab);
      }
    }
    if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
    this.fs.delete(r.proposalUri);
  }

  /** Answer every open review `cancelled` (the sidecar went away). */
  cancelAll(): void {
    for (const r of [...this.reviews.values()]) r.finish({ outcome: 'cancelled' });
  }

  dispose(): void {
    this.cancelAll();
    this.lensEmitter.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
