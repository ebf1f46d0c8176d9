import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { PROPOSAL_SCHEME, ProposalFileSystem, ReviewManager } from '../../src/handlers/reviewEdit';
import { hunkLine, revertHunks, splitLines } from '../../src/hunks';
import type { Hunk, ReviewEditParams } from '../../src/protocol';
import { TabInputText, TabInputTextDiff, TextDocument, calls, resetMock, ui, workspace } from '../mocks/vscode';

const oldText = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
const newText = oldText.replace('line 2\n', 'line 2 changed\n').replace('line 15\n', 'line 15a\nline 15b\n');
// as the sidecar's diffs.make_diff numbers them (diff -U3)
const hunks: Hunk[] = [
  { index: 0, oldStart: 1, oldLines: 5, newStart: 1, newLines: 5 },
  { index: 1, oldStart: 12, oldLines: 7, newStart: 12, newLines: 8 },
];
const params: ReviewEditParams = { sessionId: 's', toolCallId: 't', path: '/ws/notes.txt', oldText, newText, unifiedDiff: '', hunks };

let fs: ProposalFileSystem;
let feedback: string | undefined;
let manager: ReviewManager;

/** `vscode.diff` and `vscode.open` (with a label) open a tab and the proposal document, as the workbench would. */
function fakeDiffCommand(): void {
  ui.commandResults.set('vscode.diff', (left: vscode.Uri, right: vscode.Uri, title: string) => {
    ui.tabs.push({ input: new TabInputTextDiff(left as never, right as never), label: title });
    workspace.textDocuments.push(new TextDocument(right as never, fs.text(right) ?? ''));
  });
  ui.commandResults.set('vscode.open', (uri: vscode.Uri, _options: unknown, label: string) => {
    ui.tabs.push({ input: new TabInputText(uri as never), label });
    workspace.textDocuments.push(new TextDocument(uri as never, fs.text(uri) ?? ''));
  });
}

function proposalDoc(): TextDocument {
  const doc = workspace.textDocuments.find((d) => d.uri.scheme === PROPOSAL_SCHEME);
  if (!doc) throw new Error('no proposal document');
  return doc;
}

beforeEach(() => {
  resetMock();
  fs = new ProposalFileSystem();
  feedback = undefined;
  manager = new ReviewManager(fs, async () => feedback);
  fakeDiffCommand();
});

describe('hunk arithmetic', () => {
  it('reverting hunks gives the old lines back, per hunk, keeping line endings', () => {
    expect(revertHunks(oldText, newText, hunks, new Set([0, 1]))).toBe(oldText);
    expect(revertHunks(oldText, newText, hunks, new Set([1]))).toBe(oldText.replace('line 2\n', 'line 2 changed\n'));
    expect(revertHunks(oldText, newText, hunks, new Set([0]))).toBe(oldText.replace('line 15\n', 'line 15a\nline 15b\n'));
    expect(splitLines('a\r\nb')).toEqual(['a\r\n', 'b']);
  });

  it('zero-line sides start at the line before, as GNU diff writes them', () => {
    // insertion after line 1: @@ -1,0 +2,1 @@ (no context)
    expect(revertHunks('a\nb\n', 'a\nX\nb\n', [{ index: 0, oldStart: 1, oldLines: 0, newStart: 2, newLines: 1 }], new Set([0]))).toBe('a\nb\n');
    // a new file (oldText null): @@ -0,0 +1,2 @@
    expect(revertHunks(null, 'x\ny\n', [{ index: 0, oldStart: 0, oldLines: 0, newStart: 1, newLines: 2 }], new Set([0]))).toBe('');
  });

  it('a hunk\'s line moves by what the rejected hunks before it removed', () => {
    const h = [
      { index: 0, oldStart: 1, oldLines: 2, newStart: 1, newLines: 5 },
      { index: 1, oldStart: 20, oldLines: 3, newStart: 23, newLines: 3 },
    ];
    expect(hunkLine(h, new Set(), 1)).toBe(22);
    expect(hunkLine(h, new Set([0]), 1)).toBe(19);
  });
});

describe('_sidecar/review_edit', () => {
  it('opens vscode.diff between the file and the proposal; Accept answers accepted and closes the tab', async () => {
    const p = manager.review(params);
    const diff = calls.find((c) => c.command === 'vscode.diff');
    expect(diff).toBeDefined();
    const [left, right, title] = (diff?.args ?? []) as [vscode.Uri, vscode.Uri, string];
    expect(left.toString()).toBe('file:///ws/notes.txt');
    expect(right.scheme).toBe(PROPOSAL_SCHEME);
    expect(title).toBe('notes.txt: proposed edit (Sidecar)');
    expect(fs.text(right)).toBe(newText);
    expect(manager.size).toBe(1);
    await manager.accept(right);
    expect(await p).toEqual({ outcome: 'accepted' });
    expect(ui.tabs).toHaveLength(0);
    expect(manager.size).toBe(0);
  });

  it('per-hunk: accept one, reject the other — answers acceptedHunks and shows the reverted proposal', async () => {
    const p = manager.review(params);
    const doc = proposalDoc();
    let lenses = manager.provideCodeLenses(doc as never);
    expect(lenses.map((l) => l.command?.title)).toEqual(['✓ Accept hunk 1/2', '✗ Reject hunk 1/2', '✓ Accept hunk 2/2', '✗ Reject hunk 2/2']);
    // lenses sit on the first changed line of each hunk (0-based): line 2 → 1, line 15 → 14
    expect(lenses.map((l) => l.range.start.line)).toEqual([1, 1, 14, 14]);
    const uri = doc.uri.toString();
    await manager.decideHunk(uri, 1, 'rejected');
    expect(doc.getText()).toBe(oldText.replace('line 2\n', 'line 2 changed\n'));
    expect(doc.isDirty).toBe(false); // saved into memory, so closing asks nothing
    lenses = manager.provideCodeLenses(doc as never);
    expect(lenses.map((l) => l.command?.title)).toEqual(['✓ Accept hunk 1/2', '✗ Reject hunk 1/2', 'Rejected hunk 2/2 — undo']);
    await manager.decideHunk(uri, 0, 'accepted');
    expect(await p).toEqual({ outcome: 'accepted', acceptedHunks: [0] });
  });

  it('rejecting every hunk is a rejection', async () => {
    const p = manager.review(params);
    const uri = proposalDoc().uri.toString();
    await manager.decideHunk(uri, 0, 'rejected');
    await manager.decideHunk(uri, 1, 'rejected');
    expect(await p).toEqual({ outcome: 'rejected' });
  });

  it('an undone decision is pending again', async () => {
    const p = manager.review(params);
    const doc = proposalDoc();
    await manager.decideHunk(doc.uri.toString(), 0, 'rejected');
    await manager.decideHunk(doc.uri.toString(), 0, undefined);
    expect(doc.getText()).toBe(newText);
    await manager.accept(doc.uri as never);
    expect(await p).toEqual({ outcome: 'accepted' });
  });

  it('text the user typed into the proposal goes back as finalText; the hunk lenses step aside', async () => {
    const p = manager.review(params);
    const doc = proposalDoc();
    doc.setText(newText.replace('line 20', 'line 20 edited by hand'));
    expect(manager.provideCodeLenses(doc as never)).toEqual([]);
    await manager.accept(doc.uri as never);
    expect(await p).toEqual({ outcome: 'accepted', finalText: newText.replace('line 20', 'line 20 edited by hand') });
    expect(doc.saves).toBe(1);
  });

  it('Reject asks for optional feedback', async () => {
    feedback = '  use a constant instead ';
    const p = manager.review(params);
    await manager.reject(proposalDoc().uri as never);
    expect(await p).toEqual({ outcome: 'rejected', feedback: 'use a constant instead' });

    feedback = undefined;
    const q = manager.review(params);
    await manager.reject(workspace.textDocuments.at(-1)?.uri as never);
    expect(await q).toEqual({ outcome: 'rejected' });
  });

  it('several proposals wait at once, each in its own tab; a cancel closes only its own', async () => {
    const src = new vscode.CancellationTokenSource();
    const a = manager.review({ ...params, path: '/ws/a.txt' }, src.token as unknown as vscode.CancellationToken);
    const b = manager.review({ ...params, path: '/ws/b.txt' });
    expect(ui.tabs.map((t) => t.label)).toEqual(['a.txt: proposed edit (Sidecar)', 'b.txt: proposed edit (Sidecar)']);
    expect(manager.size).toBe(2);
    src.cancel();
    expect(await a).toEqual({ outcome: 'cancelled' });
    expect(ui.tabs.map((t) => t.label)).toEqual(['b.txt: proposed edit (Sidecar)']);
    await manager.accept(workspace.textDocuments[1].uri as never);
    expect(await b).toEqual({ outcome: 'accepted' });
  });

  it('a create outside the workspace folders says so in the title with the whole path, and warns', async () => {
    workspace.workspaceFolders = [{ uri: vscode.Uri.file('/ws') as never }];
    try {
      const inside = manager.review({ ...params, path: '/ws/sub/name.txt', oldText: null, newText: 'x\n', hunks: [] });
      const outside = manager.review({ ...params, path: '/home/u/.bashrc', oldText: null, newText: 'evil\n', hunks: [] });
      expect(ui.tabs.map((t) => t.label)).toEqual(['name.txt: proposed create (Sidecar)', '/home/u/.bashrc: proposed create OUTSIDE the workspace (Sidecar)']);
      expect(ui.messages.map((m) => m.message)).toEqual(['Sidecar proposes to create /home/u/.bashrc, outside the workspace folders. Review it before you accept.']);
      manager.cancelAll();
      await Promise.all([inside, outside]);
    } finally {
      workspace.workspaceFolders = undefined;
    }
  });

  it('a new file opens as the proposal alone (no diff against an empty side, whose one line shows removed)', async () => {
    const p = manager.review({ ...params, path: '/ws/new.py', oldText: null, newText: 'print(1)\n', hunks: [{ index: 0, oldStart: 0, oldLines: 0, newStart: 1, newLines: 1 }] });
    expect(calls.some((c) => c.command === 'vscode.diff')).toBe(false);
    const [uri] = (calls.find((c) => c.command === 'vscode.open')?.args ?? []) as [vscode.Uri];
    expect(uri.scheme).toBe(PROPOSAL_SCHEME);
    // the file name alone is the path, so the editor's breadcrumb shows it (and not the review's number)
    expect(uri.path).toBe('/new.py');
    expect(fs.text(uri)).toBe('print(1)\n');
    expect(ui.tabs[0].label).toBe('new.py: proposed create (Sidecar)');
    // accepted from its own editor (the title bar passes the proposal), and its tab closes
    await manager.accept(uri);
    expect(await p).toEqual({ outcome: 'accepted' });
    expect(ui.tabs).toHaveLength(0);
  });
});
