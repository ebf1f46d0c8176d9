/**
 * A hand-written stand-in for the `vscode` module (aliased in vitest.config.ts): the API surface the
 * extension touches, with plain data classes and recorders. Tests script the UI through `ui` and read
 * what happened from `calls`.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */

export class Position {
  constructor(readonly line: number, readonly character: number) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: Position | number, b: Position | number, c?: number, d?: number) {
    if (typeof a === 'number') {
      this.start = new Position(a, b as number);
      this.end = new Position(c as number, d as number);
    } else {
      this.start = a;
      this.end = b as Position;
    }
  }
}

export class Selection extends Range {
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export class Uri {
  constructor(readonly scheme: string, readonly authority: string, readonly path: string, readonly query = '') {}
  static parse(s: string): Uri {
    const i = s.indexOf(':');
    const scheme = s.slice(0, i);
    let rest = s.slice(i + 1);
    let authority = '';
    if (rest.startsWith('//')) {
      rest = rest.slice(2);
      const j = rest.indexOf('/');
      authority = j < 0 ? rest : rest.slice(0, j);
      rest = j < 0 ? '/' : rest.slice(j);
    }
    return new Uri(scheme, authority, decodeURIComponent(rest));
  }
  static file(p: string): Uri {
    return new Uri('file', '', p);
  }
  static from(c: { scheme: string; path?: string; authority?: string; query?: string }): Uri {
    return new Uri(c.scheme, c.authority ?? '', c.path ?? '', c.query ?? '');
  }
  static joinPath(u: Uri, ...parts: string[]): Uri {
    return new Uri(u.scheme, u.authority, [u.path, ...parts].join('/'));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    const query = this.query ? `?${this.query}` : '';
    if (this.scheme === 'file' || this.authority) return `${this.scheme}://${this.authority}${this.path}${query}`;
    return `${this.scheme}:${this.path}${query}`;
  }
}

export class Location {
  constructor(readonly uri: Uri, readonly range: Range) {}
}

export class MarkdownString {
  constructor(readonly value = '') {}
}

export class Hover {
  constructor(readonly contents: (MarkdownString | string)[], readonly range?: Range) {}
}

export enum SymbolKind { File = 0, Module, Namespace, Package, Class, Method, Property, Field, Constructor, Enum, Interface, Function, Variable }

export class DocumentSymbol {
  children: DocumentSymbol[] = [];
  constructor(readonly name: string, readonly detail: string, readonly kind: SymbolKind, readonly range: Range, readonly selectionRange: Range) {}
}

export class SymbolInformation {
  constructor(readonly name: string, readonly kind: SymbolKind, readonly containerName: string, readonly location: Location) {}
}

export class CallHierarchyItem {
  tags?: number[];
  constructor(
    readonly kind: SymbolKind,
    readonly name: string,
    readonly detail: string,
    readonly uri: Uri,
    readonly range: Range,
    readonly selectionRange: Range,
  ) {}
}

export enum DiagnosticSeverity { Error = 0, Warning = 1, Information = 2, Hint = 3 }

export class Diagnostic {
  source?: string;
  code?: string | number | { value: string | number; target: Uri };
  tags?: number[];
  constructor(readonly range: Range, readonly message: string, readonly severity: DiagnosticSeverity = DiagnosticSeverity.Error) {}
}

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  event = (listener: (e: T) => void): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  token = {
    isCancellationRequested: false,
    onCancellationRequested: this.emitter.event,
  };
  cancel(): void {
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

export class CodeLens {
  constructor(readonly range: Range, readonly command?: { title: string; command: string; arguments?: unknown[] }) {}
}

export class WorkspaceEdit {
  readonly edits: { uri: Uri; range: Range; text: string }[] = [];
  replace(uri: Uri, range: Range, text: string): void {
    this.edits.push({ uri, range, text });
  }
}

export enum FileType { Unknown = 0, File = 1, Directory = 2 }
export enum FileChangeType { Changed = 1, Created = 2, Deleted = 3 }
export class FileSystemError extends Error {
  static FileNotFound(u?: unknown): FileSystemError {
    return new FileSystemError(`not found: ${String(u)}`);
  }
  static NoPermissions(m?: string): FileSystemError {
    return new FileSystemError(m);
  }
}

export class TabInputTextDiff {
  constructor(readonly original: Uri, readonly modified: Uri) {}
}
export class TabInputText {
  constructor(readonly uri: Uri) {}
}

// ------------------------------------------------------------------ documents

export class TextDocument {
  isDirty = false;
  saves = 0;
  constructor(readonly uri: Uri, private text: string, readonly languageId = 'plaintext') {}
  getText(): string {
    return this.text;
  }
  setText(t: string, dirty = true): void {
    this.text = t;
    this.isDirty = dirty;
    onDidChangeTextDocumentEmitter.fire({ document: this });
  }
  get lineCount(): number {
    return this.text.split('\n').length;
  }
  async save(): Promise<boolean> {
    this.isDirty = false;
    this.saves += 1;
    return true;
  }
}

// ------------------------------------------------------------------ scripted UI and recorders

export interface FakeQuickPick {
  title?: string;
  placeholder?: string;
  canSelectMany: boolean;
  ignoreFocusOut: boolean;
  matchOnDetail: boolean;
  items: any[];
  activeItems: any[];
  selectedItems: any[];
  visible: boolean;
  disposed: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
  onDidAccept(l: () => void): Disposable;
  onDidHide(l: () => void): Disposable;
  /** test helpers */
  accept(labels: string[]): void;
}

export const calls: { command: string; args: unknown[] }[] = [];
export const ui = {
  /** answers for showWarningMessage / showInformationMessage / showErrorMessage, in order */
  messageAnswers: [] as (string | undefined | Promise<string | undefined>)[],
  messages: [] as { level: string; message: string; options: unknown[] }[],
  /** progress notifications: their title, the messages reported, and whether they closed */
  progress: [] as { title: string; messages: string[]; closed: boolean }[],
  inputAnswers: [] as (string | undefined)[],
  inputBoxes: [] as unknown[],
  quickPicks: [] as FakeQuickPick[],
  /** called when a QuickPick is shown, so a test can answer it */
  onQuickPick: undefined as ((qp: FakeQuickPick) => void) | undefined,
  commandResults: new Map<string, (...args: any[]) => unknown>(),
  openedDocuments: [] as string[],
  tabs: [] as { input: unknown; label: string }[],
  closedTabs: [] as unknown[],
  diagnostics: new Map<string, Diagnostic[]>(),
  /** what `languages.getDiagnostics()` (no argument: every file's) answers */
  allDiagnostics: [] as [Uri, Diagnostic[]][],
  appliedEdits: [] as WorkspaceEdit[],
};

const onDidChangeTextDocumentEmitter = new EventEmitter<{ document: TextDocument }>();

export function resetMock(): void {
  calls.length = 0;
  ui.messageAnswers = [];
  ui.messages = [];
  ui.progress = [];
  ui.inputAnswers = [];
  ui.inputBoxes = [];
  ui.quickPicks = [];
  ui.onQuickPick = undefined;
  ui.commandResults.clear();
  ui.openedDocuments = [];
  ui.tabs = [];
  ui.closedTabs = [];
  ui.diagnostics.clear();
  ui.allDiagnostics = [];
  ui.appliedEdits = [];
  workspace.textDocuments.length = 0;
}

function message(level: string) {
  return (msg: string, ...options: unknown[]): Promise<string | undefined> => {
    ui.messages.push({ level, message: msg, options });
    const a = ui.messageAnswers.shift();
    return Promise.resolve(a);
  };
}

function createQuickPick(): FakeQuickPick {
  const accept = new EventEmitter<void>();
  const hide = new EventEmitter<void>();
  const qp: FakeQuickPick = {
    canSelectMany: false,
    ignoreFocusOut: false,
    matchOnDetail: false,
    items: [],
    activeItems: [],
    selectedItems: [],
    visible: false,
    disposed: false,
    show() {
      qp.visible = true;
      ui.quickPicks.push(qp);
      if (ui.onQuickPick) queueMicrotask(() => ui.onQuickPick?.(qp));
    },
    hide() {
      if (!qp.visible) return;
      qp.visible = false;
      hide.fire();
    },
    dispose() {
      qp.disposed = true;
    },
    onDidAccept: accept.event,
    onDidHide: hide.event,
    accept(labels: string[]) {
      const chosen = qp.items.filter((i) => labels.includes(i.label));
      if (qp.canSelectMany) qp.selectedItems = chosen;
      else qp.activeItems = chosen;
      qp.selectedItems = chosen;
      accept.fire();
    },
  };
  return qp;
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

function withProgress<R>(options: { title?: string }, task: (p: { report: (v: { message?: string }) => void }) => Thenable<R>): Promise<R> {
  const entry = { title: options.title ?? '', messages: [] as string[], closed: false };
  ui.progress.push(entry);
  return Promise.resolve(task({ report: (v) => v.message !== undefined && entry.messages.push(v.message) })).finally(() => (entry.closed = true));
}

/** Shell integration's events, fired by a test (`terminalEvents.start.fire({ terminal, execution })`). */
export const terminalEvents = {
  start: new EventEmitter<{ terminal: unknown; execution: unknown }>(),
  end: new EventEmitter<{ terminal: unknown; execution: unknown; exitCode: number | undefined }>(),
  close: new EventEmitter<unknown>(),
};

export const window = {
  withProgress,
  onDidStartTerminalShellExecution: terminalEvents.start.event,
  onDidEndTerminalShellExecution: terminalEvents.end.event,
  onDidCloseTerminal: terminalEvents.close.event,
  activeTerminal: undefined as unknown,
  showWarningMessage: message('warning'),
  showInformationMessage: message('info'),
  showErrorMessage: message('error'),
  showInputBox: (options: unknown): Promise<string | undefined> => {
    ui.inputBoxes.push(options);
    return Promise.resolve(ui.inputAnswers.shift());
  },
  createQuickPick,
  activeTextEditor: undefined as unknown,
  tabGroups: {
    get all() {
      return [{ tabs: ui.tabs }];
    },
    close: async (tabs: unknown[]) => {
      ui.closedTabs.push(...tabs);
      ui.tabs = ui.tabs.filter((t) => !tabs.includes(t));
      return true;
    },
  },
};

export const commands = {
  executeCommand: async (command: string, ...args: unknown[]): Promise<unknown> => {
    calls.push({ command, args });
    const f = ui.commandResults.get(command);
    return f ? f(...args) : undefined;
  },
  registerCommand: () => new Disposable(),
};

export const workspace = {
  textDocuments: [] as TextDocument[],
  workspaceFolders: undefined as { uri: Uri }[] | undefined,
  openTextDocument: async (uri: Uri): Promise<TextDocument> => {
    calls.push({ command: 'openTextDocument', args: [uri.toString()] });
    ui.openedDocuments.push(uri.toString());
    return workspace.textDocuments.find((d) => d.uri.toString() === uri.toString()) ?? new TextDocument(uri, '');
  },
  onDidChangeTextDocument: onDidChangeTextDocumentEmitter.event,
  applyEdit: async (edit: WorkspaceEdit): Promise<boolean> => {
    ui.appliedEdits.push(edit);
    for (const e of edit.edits) {
      const doc = workspace.textDocuments.find((d) => d.uri.toString() === e.uri.toString());
      doc?.setText(e.text);
    }
    return true;
  },
  getConfiguration: () => ({ get: <T>(_k: string): T | undefined => undefined }),
  asRelativePath: (u: Uri | string) => (typeof u === 'string' ? u : u.path),
};

export const languages = {
  getDiagnostics: ((uri?: Uri) => (uri ? (ui.diagnostics.get(uri.toString()) ?? []) : ui.allDiagnostics)) as {
    (uri: Uri): Diagnostic[];
    (): [Uri, Diagnostic[]][];
  },
};
