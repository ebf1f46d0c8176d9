import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { diagnostics, lspQuery } from '../../src/handlers/lspQuery';
import { calls, ui, resetMock } from '../mocks/vscode';

const file = 'file:///ws/app.py';
const other = vscode.Uri.file('/ws/lib.py');
const r = (a: number, b: number, c: number, d: number) => new vscode.Range(a, b, c, d);

beforeEach(() => resetMock());

describe('_sidecar/lsp_query', () => {
  it('goToDefinition opens the document first, asks the definition provider at the 0-based position, and returns LSP locations', async () => {
    ui.commandResults.set('vscode.executeDefinitionProvider', () => [
      // a LocationLink: the target selection range is what is reported
      { targetUri: other, targetRange: r(0, 0, 9, 0), targetSelectionRange: r(3, 4, 3, 10) },
      new vscode.Location(other, r(7, 0, 7, 5)),
    ]);
    const res = await lspQuery({ operation: 'goToDefinition', uri: file, position: { line: 4, character: 2 } });
    expect(calls[0]).toEqual({ command: 'openTextDocument', args: [file] });
    expect(calls[1].command).toBe('vscode.executeDefinitionProvider');
    expect((calls[1].args[0] as vscode.Uri).toString()).toBe(file);
    expect(calls[1].args[1]).toEqual(new vscode.Position(4, 2));
    expect(res).toEqual({
      result: [
        { uri: 'file:///ws/lib.py', range: { start: { line: 3, character: 4 }, end: { line: 3, character: 10 } } },
        { uri: 'file:///ws/lib.py', range: { start: { line: 7, character: 0 }, end: { line: 7, character: 5 } } },
      ],
    });
  });

  it.each([
    ['findReferences', 'vscode.executeReferenceProvider'],
    ['goToImplementation', 'vscode.executeImplementationProvider'],
  ] as const)('%s uses %s', async (operation, command) => {
    ui.commandResults.set(command, () => [new vscode.Location(other, r(1, 1, 1, 2))]);
    const res = await lspQuery({ operation, uri: file, position: { line: 0, character: 0 } });
    expect(calls.map((c) => c.command)).toEqual(['openTextDocument', command]);
    expect(res.result).toEqual([{ uri: 'file:///ws/lib.py', range: { start: { line: 1, character: 1 }, end: { line: 1, character: 2 } } }]);
  });

  it('hover joins every provider into one Markdown hover; no hover is null', async () => {
    ui.commandResults.set('vscode.executeHoverProvider', () => [
      new vscode.Hover([new vscode.MarkdownString('```python\ndef f() -> int\n```')], r(2, 0, 2, 1)),
      new vscode.Hover(['Returns the answer.']),
    ]);
    const res = await lspQuery({ operation: 'hover', uri: file, position: { line: 2, character: 0 } });
    expect(res.result).toEqual({
      contents: { kind: 'markdown', value: '```python\ndef f() -> int\n```\n\n---\n\nReturns the answer.' },
      range: { start: { line: 2, character: 0 }, end: { line: 2, character: 1 } },
    });
    ui.commandResults.set('vscode.executeHoverProvider', () => []);
    expect((await lspQuery({ operation: 'hover', uri: file, position: { line: 0, character: 0 } })).result).toBeNull();
  });

  it('documentSymbol keeps the tree and shifts SymbolKind to LSP numbering', async () => {
    const cls = new vscode.DocumentSymbol('Greeter', '', vscode.SymbolKind.Class, r(0, 0, 5, 0), r(0, 6, 0, 13));
    cls.children.push(new vscode.DocumentSymbol('greet', '(self)', vscode.SymbolKind.Method, r(1, 4, 2, 0), r(1, 8, 1, 13)));
    ui.commandResults.set('vscode.executeDocumentSymbolProvider', () => [cls]);
    const res = await lspQuery({ operation: 'documentSymbol', uri: file });
    expect(res.result).toEqual([
      {
        name: 'Greeter',
        kind: 5,
        range: { start: { line: 0, character: 0 }, end: { line: 5, character: 0 } },
        selectionRange: { start: { line: 0, character: 6 }, end: { line: 0, character: 13 } },
        children: [
          {
            name: 'greet',
            detail: '(self)',
            kind: 6,
            range: { start: { line: 1, character: 4 }, end: { line: 2, character: 0 } },
            selectionRange: { start: { line: 1, character: 8 }, end: { line: 1, character: 13 } },
            children: [],
          },
        ],
      },
    ]);
  });

  it('workspaceSymbol passes the query and does not open a document', async () => {
    ui.commandResults.set('vscode.executeWorkspaceSymbolProvider', (q: string) =>
      q === 'Greet' ? [new vscode.SymbolInformation('Greeter', vscode.SymbolKind.Class, 'app', new vscode.Location(other, r(0, 0, 0, 7)))] : [],
    );
    const res = await lspQuery({ operation: 'workspaceSymbol', uri: file, query: 'Greet' });
    expect(ui.openedDocuments).toEqual([]);
    expect(res.result).toEqual([
      { name: 'Greeter', kind: 5, containerName: 'app', location: { uri: 'file:///ws/lib.py', range: { start: { line: 0, character: 0 }, end: { line: 0, character: 7 } } } },
    ]);
  });

  it('call hierarchy: prepare, then incoming and outgoing calls from an LSP item', async () => {
    const item = new vscode.CallHierarchyItem(vscode.SymbolKind.Function, 'main', 'app', vscode.Uri.file('/ws/app.py'), r(0, 0, 3, 0), r(0, 4, 0, 8));
    const caller = new vscode.CallHierarchyItem(vscode.SymbolKind.Function, 'run', '', other, r(5, 0, 9, 0), r(5, 4, 5, 7));
    ui.commandResults.set('vscode.prepareCallHierarchy', () => [item]);
    ui.commandResults.set('vscode.provideIncomingCalls', (i: vscode.CallHierarchyItem) => (i === item ? [{ from: caller, fromRanges: [r(6, 4, 6, 8)] }] : []));
    ui.commandResults.set('vscode.provideOutgoingCalls', (i: vscode.CallHierarchyItem) => (i === item ? [{ to: caller, fromRanges: [r(1, 4, 1, 7)] }] : []));
    const prepared = await lspQuery({ operation: 'prepareCallHierarchy', uri: file, position: { line: 0, character: 5 } });
    const lspItem = (prepared.result as unknown[])[0];
    expect(lspItem).toEqual({
      name: 'main',
      kind: 12,
      detail: 'app',
      uri: 'file:///ws/app.py',
      range: { start: { line: 0, character: 0 }, end: { line: 3, character: 0 } },
      selectionRange: { start: { line: 0, character: 4 }, end: { line: 0, character: 8 } },
    });
    const incoming = await lspQuery({ operation: 'incomingCalls', uri: file, item: lspItem });
    expect(incoming.result).toEqual([
      {
        from: expect.objectContaining({ name: 'run', uri: 'file:///ws/lib.py', kind: 12 }),
        fromRanges: [{ start: { line: 6, character: 4 }, end: { line: 6, character: 8 } }],
      },
    ]);
    const outgoing = await lspQuery({ operation: 'outgoingCalls', uri: file, item: lspItem });
    expect(outgoing.result).toEqual([{ to: expect.objectContaining({ name: 'run' }), fromRanges: [{ start: { line: 1, character: 4 }, end: { line: 1, character: 7 } }] }]);
    // the item is re-prepared at its selection start so VS Code's own provider expands it
    const prepares = calls.filter((c) => c.command === 'vscode.prepareCallHierarchy');
    expect(prepares.at(-1)?.args[1]).toEqual(new vscode.Position(0, 4));
  });

  it('a position-based operation without a position is an error naming what is missing', async () => {
    await expect(lspQuery({ operation: 'hover', uri: file })).rejects.toThrow('hover needs a position {line, character} (0-based)');
  });
});

describe('_sidecar/diagnostics', () => {
  it('answers every uri from getDiagnostics with LSP severities (Error = 1)', () => {
    const d = new vscode.Diagnostic(r(3, 0, 3, 4), 'Undefined name "x"', vscode.DiagnosticSeverity.Error);
    d.source = 'basedpyright';
    d.code = { value: 'reportUndefinedVariable', target: vscode.Uri.file('/docs') };
    const w = new vscode.Diagnostic(r(0, 0, 0, 1), 'unused import', vscode.DiagnosticSeverity.Warning);
    ui.diagnostics.set(file, [d, w]);
    expect(diagnostics({ uris: [file, 'file:///ws/clean.py'] })).toEqual({
      items: [
        {
          uri: file,
          diagnostics: [
            { range: { start: { line: 3, character: 0 }, end: { line: 3, character: 4 } }, severity: 1, message: 'Undefined name "x"', source: 'basedpyright', code: 'reportUndefinedVariable' },
            { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, severity: 2, message: 'unused import' },
          ],
        },
        { uri: 'file:///ws/clean.py', diagnostics: [] },
      ],
    });
  });
});
