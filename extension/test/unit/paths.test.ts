// Whether a path is in a workspace root, and where (src/shared/paths.ts): the cards' paths, the @problems
// mention, the rewind reports and the interpreter check all ask it, on POSIX and Windows paths alike.
import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { problemsItem } from '../../src/editorContext';
import { insideRoots, relativeTo } from '../../src/shared/paths';
import { Diagnostic, DiagnosticSeverity, Range, resetMock, ui, workspace } from '../mocks/vscode';

describe('paths compared as paths', () => {
  it('POSIX: a root and what is under it; a sibling sharing its prefix is outside', () => {
    expect(relativeTo('/w/shop/src/a.py', ['/w/shop'])).toBe('src/a.py');
    expect(relativeTo('/w/shop', ['/w/shop/'])).toBe('');
    expect(relativeTo('/w/shopping/a.py', ['/w/shop'])).toBeNull();
    expect(relativeTo('/w/shop/../other/a.py', ['/w/shop'])).toBeNull();
    expect(relativeTo('/w//shop/./src/', ['/w/shop'])).toBe('src');
    expect(relativeTo('/W/Shop/a.py', ['/w/shop'])).toBeNull(); // case counts on POSIX
    expect(relativeTo('/w/b/x.py', ['/w/a', '/w/b'])).toBe('x.py');
    expect(relativeTo('/anything', ['', '  '])).toBeNull();
  });

  it('Windows: either separator, the drive and folders in any case, UNC shares', () => {
    expect(relativeTo('C:\\w\\src\\a.ts', ['C:\\w'])).toBe('src/a.ts');
    expect(relativeTo('c:\\W\\Src\\a.ts', ['C:\\w\\'])).toBe('Src/a.ts');
    expect(relativeTo('C:/w/src/a.ts', ['C:\\w'])).toBe('src/a.ts');
    expect(relativeTo('C:\\wx\\a.ts', ['C:\\w'])).toBeNull();
    expect(relativeTo('D:\\w\\a.ts', ['C:\\w'])).toBeNull();
    expect(relativeTo('C:\\..\\w\\a.ts', ['C:\\w'])).toBe('a.ts');
    expect(relativeTo('\\\\srv\\share\\p\\a.ts', ['\\\\SRV\\share'])).toBe('p/a.ts');
    expect(insideRoots('\\srv\\share\\a.ts', ['\\\\srv\\share'])).toBe(false); // \srv is not \\srv
  });
});

describe('@problems', () => {
  beforeEach(() => resetMock());

  it('keeps the problems of files in the workspace, Windows paths included', () => {
    const warning = (msg: string) => new Diagnostic(new Range(1, 0, 1, 4), msg, DiagnosticSeverity.Warning);
    workspace.workspaceFolders = [{ uri: vscode.Uri.file('C:\\w') as never }];
    ui.allDiagnostics = [
      [vscode.Uri.file('C:\\w\\src\\a.ts') as never, [warning('unused x')]],
      [vscode.Uri.file('C:\\wx\\b.ts') as never, [warning('outside')]],
    ];
    // (a string test looked for "C:\w/" and kept nothing on Windows)
    const item = problemsItem();
    expect(item.text).toContain('unused x');
    expect(item.text).not.toContain('outside');
    workspace.workspaceFolders = undefined;
  });
});
