/** vscode API objects → LSP JSON (URIs as strings, 0-based positions), and the one reverse case we need. */
import * as vscode from 'vscode';

export interface LspPosition { line: number; character: number }
export interface LspRange { start: LspPosition; end: LspPosition }
export interface LspLocation { uri: string; range: LspRange }
export interface LspCallHierarchyItem {
  name: string;
  kind: number;
  tags?: number[];
  detail?: string;
  uri: string;
  range: LspRange;
  selectionRange: LspRange;
  data?: unknown;
}

export function position(p: vscode.Position): LspPosition {
  return { line: p.line, character: p.character };
}

export function range(r: vscode.Range): LspRange {
  return { start: position(r.start), end: position(r.end) };
}

export function toVsPosition(p: LspPosition): vscode.Position {
  return new vscode.Position(p.line, p.character);
}

export function toVsRange(r: LspRange): vscode.Range {
  return new vscode.Range(toVsPosition(r.start), toVsPosition(r.end));
}

function isLocationLink(x: vscode.Location | vscode.LocationLink): x is vscode.LocationLink {
  return (x as vscode.LocationLink).targetUri !== undefined;
}

/** Location or LocationLink → LSP Location (a link becomes its target selection, as LSP clients show it). */
export function location(x: vscode.Location | vscode.LocationLink): LspLocation {
  if (isLocationLink(x)) {
    return { uri: x.targetUri.toString(), range: range(x.targetSelectionRange ?? x.targetRange) };
  }
  return { uri: x.uri.toString(), range: range(x.range) };
}

/** vscode.SymbolKind is LSP SymbolKind − 1. */
export function symbolKind(k: vscode.SymbolKind): number {
  return k + 1;
}

function markdownText(c: vscode.MarkdownString | vscode.MarkedString): string {
  if (typeof c === 'string') return c;
  if ('language' in c && typeof c.language === 'string') return '```' + c.language + '\n' + c.value + '\n```';
  return c.value;
}

/** Hovers from every provider → one LSP Hover with Markdown contents (null when there is none). */
export function hover(hovers: vscode.Hover[]): { contents: { kind: 'markdown'; value: string }; range?: LspRange } | null {
  const parts: string[] = [];
  let first: vscode.Range | undefined;
  for (const h of hovers) {
    for (const c of h.contents) {
      const text = markdownText(c as vscode.MarkdownString | vscode.MarkedString).trim();
      if (text) parts.push(text);
    }
    if (!first && h.range) first = h.range;
  }
  if (parts.length === 0) return null;
  const out: { contents: { kind: 'markdown'; value: string }; range?: LspRange } = {
    contents: { kind: 'markdown', value: parts.join('\n\n---\n\n') },
  };
  if (first) out.range = range(first);
  return out;
}

function isDocumentSymbol(x: vscode.DocumentSymbol | vscode.SymbolInformation): x is vscode.DocumentSymbol {
  return (x as vscode.DocumentSymbol).selectionRange !== undefined;
}

export interface LspDocumentSymbol {
  name: string;
  detail?: string;
  kind: number;
  range: LspRange;
  selectionRange: LspRange;
  children: LspDocumentSymbol[];
}

export function documentSymbol(s: vscode.DocumentSymbol): LspDocumentSymbol {
  const out: LspDocumentSymbol = {
    name: s.name,
    kind: symbolKind(s.kind),
    range: range(s.range),
    selectionRange: range(s.selectionRange),
    children: (s.children ?? []).map(documentSymbol),
  };
  if (s.detail) out.detail = s.detail;
  return out;
}

export interface LspSymbolInformation {
  name: string;
  kind: number;
  location: LspLocation;
  containerName?: string;
}

export function symbolInformation(s: vscode.SymbolInformation): LspSymbolInformation {
  const out: LspSymbolInformation = { name: s.name, kind: symbolKind(s.kind), location: location(s.location) };
  if (s.containerName) out.containerName = s.containerName;
  return out;
}

export function documentSymbols(
  xs: (vscode.DocumentSymbol | vscode.SymbolInformation)[],
): LspDocumentSymbol[] | LspSymbolInformation[] {
  if (xs.length > 0 && isDocumentSymbol(xs[0])) return (xs as vscode.DocumentSymbol[]).map(documentSymbol);
  return (xs as vscode.SymbolInformation[]).map(symbolInformation);
}

export function callHierarchyItem(i: vscode.CallHierarchyItem): LspCallHierarchyItem {
  const out: LspCallHierarchyItem = {
    name: i.name,
    kind: symbolKind(i.kind),
    uri: i.uri.toString(),
    range: range(i.range),
    selectionRange: range(i.selectionRange),
  };
  if (i.detail) out.detail = i.detail;
  if (i.tags && i.tags.length) out.tags = i.tags.map((t) => t as number);
  return out;
}

export function toVsCallHierarchyItem(i: LspCallHierarchyItem): vscode.CallHierarchyItem {
  return new vscode.CallHierarchyItem(
    (i.kind - 1) as vscode.SymbolKind,
    i.name,
    i.detail ?? '',
    vscode.Uri.parse(i.uri),
    toVsRange(i.range),
    toVsRange(i.selectionRange),
  );
}

export function incomingCall(c: vscode.CallHierarchyIncomingCall): { from: LspCallHierarchyItem; fromRanges: LspRange[] } {
  return { from: callHierarchyItem(c.from), fromRanges: c.fromRanges.map(range) };
}

export function outgoingCall(c: vscode.CallHierarchyOutgoingCall): { to: LspCallHierarchyItem; fromRanges: LspRange[] } {
  return { to: callHierarchyItem(c.to), fromRanges: c.fromRanges.map(range) };
}

export interface LspDiagnostic {
  range: LspRange;
  severity: number;
  message: string;
  source?: string;
  code?: string | number;
  tags?: number[];
}

/** vscode.DiagnosticSeverity is LSP severity − 1. */
export function diagnostic(d: vscode.Diagnostic): LspDiagnostic {
  const out: LspDiagnostic = { range: range(d.range), severity: d.severity + 1, message: d.message };
  if (d.source) out.source = d.source;
  if (d.code !== undefined && d.code !== null) {
    out.code = typeof d.code === 'object' ? d.code.value : d.code;
  }
  if (d.tags && d.tags.length) out.tags = d.tags.map((t) => t as number);
  return out;
}
