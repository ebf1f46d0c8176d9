/**
 * `_sidecar/lsp_query` and `_sidecar/diagnostics`: the agent asks the editor's own language services.
 * Each document is opened first so its language extension activates; results come back as LSP JSON.
 */
import * as vscode from 'vscode';
import type { DiagnosticsParams, DiagnosticsResult, LspQueryParams, LspQueryResult } from '../protocol';
import * as conv from './lspConvert';

type Executor = <T>(command: string, ...args: unknown[]) => Thenable<T | undefined>;

const exec: Executor = (command, ...args) => vscode.commands.executeCommand(command, ...args);

function requirePosition(params: LspQueryParams): vscode.Position {
  if (!params.position) throw new Error(`${params.operation} needs a position {line, character} (0-based)`);
  return conv.toVsPosition(params.position);
}

export async function lspQuery(params: LspQueryParams, token?: vscode.CancellationToken): Promise<LspQueryResult> {
  const uri = vscode.Uri.parse(params.uri);
  if (params.operation !== 'workspaceSymbol') {
    await vscode.workspace.openTextDocument(uri);
  }
  if (token?.isCancellationRequested) return { result: null };
  switch (params.operation) {
    case 'goToDefinition':
    case 'goToImplementation': {
      const cmd = params.operation === 'goToDefinition' ? 'vscode.executeDefinitionProvider' : 'vscode.executeImplementationProvider';
      const xs = (await exec<(vscode.Location | vscode.LocationLink)[]>(cmd, uri, requirePosition(params))) ?? [];
      return { result: xs.map(conv.location) };
    }
    case 'findReferences': {
      const xs = (await exec<vscode.Location[]>('vscode.executeReferenceProvider', uri, requirePosition(params))) ?? [];
      return { result: xs.map(conv.location) };
    }
    case 'hover': {
      const xs = (await exec<vscode.Hover[]>('vscode.executeHoverProvider', uri, requirePosition(params))) ?? [];
      return { result: conv.hover(xs) };
    }
    case 'documentSymbol': {
      const xs = (await exec<(vscode.DocumentSymbol | vscode.SymbolInformation)[]>('vscode.executeDocumentSymbolProvider', uri)) ?? [];
      return { result: conv.documentSymbols(xs) };
    }
    case 'workspaceSymbol': {
      const xs = (await exec<vscode.SymbolInformation[]>('vscode.executeWorkspaceSymbolProvider', params.query ?? '')) ?? [];
      return { result: xs.map(conv.symbolInformation) };
    }
    case 'prepareCallHierarchy': {
      const xs = (await exec<vscode.CallHierarchyItem[]>('vscode.prepareCallHierarchy', uri, requirePosition(params))) ?? [];
      return { result: xs.map(conv.callHierarchyItem) };
    }
    case 'incomingCalls':
    case 'outgoingCalls': {
      const item = await callItem(params, uri);
      if (!item) return { result: [] };
      if (params.operation === 'incomingCalls') {
        const xs = (await exec<vscode.CallHierarchyIncomingCall[]>('vscode.provideIncomingCalls', item)) ?? [];
        return { result: xs.map(conv.incomingCall) };
      }
      const xs = (await exec<vscode.CallHierarchyOutgoingCall[]>('vscode.provideOutgoingCalls', item)) ?? [];
      return { result: xs.map(conv.outgoingCall) };
    }
    default:
      throw new Error(`unknown lsp_query operation: ${String((params as { operation: unknown }).operation)}`);
  }
}

/**
 * The call hierarchy item to expand: VS Code only expands items its own provider made, so we prepare at
 * the item's selection start (or the given position) and take the item that matches by name.
 */
async function callItem(params: LspQueryParams, uri: vscode.Uri): Promise<vscode.CallHierarchyItem | undefined> {
  const given = params.item as conv.LspCallHierarchyItem | undefined;
  const itemUri = given?.uri ? vscode.Uri.parse(given.uri) : uri;
  const pos = given?.selectionRange ? conv.toVsPosition(given.selectionRange.start) : requirePosition(params);
  if (given?.uri) await vscode.workspace.openTextDocument(itemUri);
  const items = (await exec<vscode.CallHierarchyItem[]>('vscode.prepareCallHierarchy', itemUri, pos)) ?? [];
  return items.find((i) => !given || i.name === given.name) ?? items[0];
}

export function diagnostics(params: DiagnosticsParams): DiagnosticsResult {
  const uris = params.uris ?? [];
  return {
    items: uris.map((u) => ({
      uri: u,
      diagnostics: vscode.languages.getDiagnostics(vscode.Uri.parse(u)).map(conv.diagnostic),
    })),
  };
}
