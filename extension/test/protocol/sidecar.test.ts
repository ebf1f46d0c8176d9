/**
 * Protocol tests: the real sidecar over LSP framing, driven with vscode-jsonrpc as the extension's
 * language client drives it, answering the sidecar's requests the way the extension's handlers answer.
 * One sidecar and one scripted model for the file; each test consumes its own turns, in order.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CancellationToken } from 'vscode-jsonrpc';
import { revertHunks } from '../../src/hunks';
import type {
  AskUserParams,
  LspQueryParams,
  RequestPermissionParams,
  ReviewEditParams,
  ReviewEditResult,
} from '../../src/protocol';
import { ScriptedModel, type Sidecar, lastStatus, python, startSidecar, tempDir, toolOutput } from './sidecar';

const root = tempDir('sidecar-protocol-');
const ws = path.join(root, 'ws');
const home = path.join(root, 'home');
fs.mkdirSync(ws);
fs.mkdirSync(home);

const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}`).join('\n') + '\n';
const files = {
  notes: path.join(ws, 'notes.txt'),
  b: path.join(ws, 'b.txt'),
  c: path.join(ws, 'c.txt'),
  main: path.join(ws, 'main.py'),
};
const notesOld = lines(20, 'line');
const notesOldBlock = lines(14, 'line').replace(/line (\d+)/g, (_, n) => `line ${Number(n) + 1}`).trimEnd();
const notesNewBlock = notesOldBlock.replace('line 2\n', 'line 2 (one)\n').replace('line 15', 'line 15 (two)');

const read = (id: string, file: string) => ({ content: [{ type: 'tool_use', id, name: 'Read', input: { file_path: file } }] });
const say = (text: string) => ({ content: [{ type: 'text', text }] });

const turns = [
  // streamed answer
  { ...say('Hello **there**, from the scripted model.'), text_chunk: 5, chunk_delay: 0.02 },
  // partial hunks
  read('toolu_r1', files.notes),
  { content: [{ type: 'tool_use', id: 'toolu_e1', name: 'Edit', input: { file_path: files.notes, old_string: notesOldBlock, new_string: notesNewBlock } }] },
  say('edited'),
  // user-changed proposal
  read('toolu_r2', files.b),
  { content: [{ type: 'tool_use', id: 'toolu_e2', name: 'Edit', input: { file_path: files.b, old_string: 'alpha', new_string: 'beta' } }] },
  say('edited b'),
  // rejection with feedback
  read('toolu_r3', files.c),
  { content: [{ type: 'tool_use', id: 'toolu_e3', name: 'Edit', input: { file_path: files.c, old_string: 'keep me', new_string: 'drop me' } }] },
  say('ok, not changing c'),
  // command approved, then rejected
  { content: [{ type: 'tool_use', id: 'toolu_b1', name: 'Bash', input: { command: 'touch approved.txt', description: 'marker' } }] },
  say('ran'),
  { content: [{ type: 'tool_use', id: 'toolu_b2', name: 'Bash', input: { command: 'touch rejected.txt', description: 'marker' } }] },
  say('not run'),
  // question
  {
    content: [
      {
        type: 'tool_use',
        id: 'toolu_q1',
        name: 'AskUserQuestion',
        input: {
          questions: [
            { question: 'Which database?', header: 'Database', multiSelect: false, options: [{ label: 'SQLite', description: 'file' }, { label: 'Postgres', description: 'server' }] },
          ],
        },
      },
    ],
  },
  say('noted'),
  // code intelligence through the editor
  { content: [{ type: 'tool_use', id: 'toolu_l1', name: 'LSP', input: { operation: 'goToDefinition', filePath: files.main, line: 5, character: 7 } }] },
  say('found it'),
  // cancel while a permission request waits
  { content: [{ type: 'tool_use', id: 'toolu_b3', name: 'Bash', input: { command: 'touch cancelled.txt', description: 'marker' } }] },
  // cancel while streaming
  { ...say('Counting: ' + Array.from({ length: 300 }, (_, i) => i + 1).join(' ')), text_chunk: 3, chunk_delay: 0.05 },
];

const model = new ScriptedModel();
let sc: Sidecar;
let reviewAnswer: (p: ReviewEditParams) => ReviewEditResult = () => ({ outcome: 'accepted' });
const reviews: ReviewEditParams[] = [];
let permissionAnswer: (p: RequestPermissionParams, token: CancellationToken) => Promise<unknown> | unknown = () => ({ outcome: { outcome: 'cancelled' } });
const permissions: RequestPermissionParams[] = [];
const questions: AskUserParams[] = [];
const lspQueries: LspQueryParams[] = [];

async function newSession(): Promise<string> {
  const r = (await sc.connection.sendRequest('session/new', { cwd: ws, mcpServers: [] })) as { sessionId: string };
  return r.sessionId;
}

async function prompt(sessionId: string, text: string): Promise<string> {
  const r = (await sc.connection.sendRequest('session/prompt', { sessionId, prompt: [{ type: 'text', text }] })) as { stopReason: string };
  return r.stopReason;
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)),
  ]);
}

function updatesOf(sessionId: string) {
  return sc.updates.filter((u) => u.sessionId === sessionId);
}

beforeAll(async () => {
  expect(fs.existsSync(python), `no Python at ${python}`).toBe(true);
  fs.writeFileSync(files.notes, notesOld);
  fs.writeFileSync(files.b, 'alpha\n');
  fs.writeFileSync(files.c, 'keep me\n');
  fs.writeFileSync(files.main, 'def greet(name):\n    return "hi " + name\n\n\nprint(greet("x"))\n');
  const url = await model.start(turns, root);
  // (the first turn of a fresh sidecar takes a while: tools, prompt, watchers)
  sc = await startSidecar({ cwd: ws, home, modelUrl: url });
  sc.connection.onRequest('_sidecar/review_edit', (p: ReviewEditParams) => {
    reviews.push(p);
    return reviewAnswer(p);
  });
  sc.connection.onRequest('session/request_permission', (p: RequestPermissionParams, token: CancellationToken) => {
    permissions.push(p);
    return permissionAnswer(p, token);
  });
  sc.connection.onRequest('_sidecar/ask_user', (p: AskUserParams) => {
    questions.push(p);
    return { outcome: 'answered', answers: { [p.questions[0].question]: ['Postgres'] } };
  });
  sc.connection.onRequest('_sidecar/lsp_query', (p: LspQueryParams) => {
    lspQueries.push(p);
    return { result: [{ uri: `file://${files.main}`, range: { start: { line: 0, character: 4 }, end: { line: 0, character: 9 } } }] };
  });
  sc.connection.onRequest('_sidecar/diagnostics', (p: { uris: string[] }) => ({ items: p.uris.map((uri) => ({ uri, diagnostics: [] })) }));
  sc.connection.onRequest('workspace/applyEdit', () => ({ applied: true }));
}, 60000);

afterAll(async () => {
  await sc?.stop();
  await model.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

describe('the sidecar over LSP, as the extension talks to it', () => {
  it('initialize: ACP agent capabilities in experimental.acp, and no language features of its own', () => {
    const caps = sc.initializeResult.capabilities;
    const acp = caps.experimental?.acp as { protocolVersion: number; agentCapabilities: { loadSession: boolean } };
    expect(acp.protocolVersion).toBe(1);
    expect(acp.agentCapabilities.loadSession).toBe(true);
    for (const feature of ['definitionProvider', 'hoverProvider', 'referencesProvider', 'completionProvider', 'documentSymbolProvider']) {
      expect(caps[feature] ?? false, feature).toBeFalsy();
    }
  });

  it('a prompt answers with agent_message_chunk updates that add up to the answer', async () => {
    const id = await newSession();
    expect(await prompt(id, 'hello')).toBe('end_turn');
    const chunks = updatesOf(id).filter((u) => u.update.sessionUpdate === 'agent_message_chunk');
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.map((c) => (c.update.content as { text: string }).text).join('')).toBe('Hello **there**, from the scripted model.');
  });

  it('review_edit: the hunks the sidecar numbers are the hunks we revert; accepting hunk 0 writes exactly that', async () => {
    reviewAnswer = () => ({ outcome: 'accepted', acceptedHunks: [0] });
    const id = await newSession();
    expect(await prompt(id, 'edit notes')).toBe('end_turn');
    const p = reviews.at(-1) as ReviewEditParams;
    expect(p.sessionId).toBe(id);
    expect(p.toolCallId).toBe('toolu_e1');
    expect(p.path).toBe(files.notes);
    expect(p.oldText).toBe(notesOld);
    expect(p.hunks.map((h) => h.index)).toEqual([0, 1]);
    expect(p.unifiedDiff).toContain('+line 2 (one)');
    // our CodeLens "reject hunk 1" view of the proposal equals what the sidecar writes for acceptedHunks [0]
    const shown = revertHunks(p.oldText, p.newText, p.hunks, new Set([1]));
    expect(fs.readFileSync(files.notes, 'utf8')).toBe(shown);
    expect(shown).toBe(notesOld.replace('line 2\n', 'line 2 (one)\n'));
    expect(lastStatus(updatesOf(id), 'toolu_e1')).toBe('completed');
  });

  it('review_edit: finalText (the user changed the proposal) is what lands', async () => {
    reviewAnswer = () => ({ outcome: 'accepted', finalText: 'gamma, typed by the user\n' });
    const id = await newSession();
    expect(await prompt(id, 'edit b')).toBe('end_turn');
    expect(reviews.at(-1)?.newText).toBe('beta\n');
    expect(fs.readFileSync(files.b, 'utf8')).toBe('gamma, typed by the user\n');
  });

  it('review_edit: a rejection with feedback leaves the file alone and is not reported as success', async () => {
    reviewAnswer = () => ({ outcome: 'rejected', feedback: 'keep c as it is' });
    const id = await newSession();
    expect(await prompt(id, 'edit c')).toBe('end_turn');
    expect(fs.readFileSync(files.c, 'utf8')).toBe('keep me\n');
    expect(lastStatus(updatesOf(id), 'toolu_e3')).toBe('failed');
    expect(toolOutput(updatesOf(id), 'toolu_e3')).toContain('keep c as it is');
  });

  it('request_permission: allow_once runs the command; reject_once does not', async () => {
    permissionAnswer = (p) => ({ outcome: { outcome: 'selected', optionId: p.options.find((o) => o.kind === 'allow_once')?.optionId } });
    const id = await newSession();
    expect(await prompt(id, 'run it')).toBe('end_turn');
    const p = permissions.at(-1) as RequestPermissionParams;
    expect(p.toolCall.toolCallId).toBe('toolu_b1');
    expect((p.toolCall.rawInput as { command: string }).command).toBe('touch approved.txt');
    expect(p.options.map((o) => o.kind)).toEqual(expect.arrayContaining(['allow_once', 'reject_once']));
    expect(fs.existsSync(path.join(ws, 'approved.txt'))).toBe(true);

    permissionAnswer = (q) => ({ outcome: { outcome: 'selected', optionId: q.options.find((o) => o.kind === 'reject_once')?.optionId } });
    expect(await prompt(id, 'run the other')).toBe('end_turn');
    expect(fs.existsSync(path.join(ws, 'rejected.txt'))).toBe(false);
    expect(lastStatus(updatesOf(id), 'toolu_b2')).toBe('failed');
  });

  it('ask_user: the questions arrive as sent and the answer reaches the tool result', async () => {
    const id = await newSession();
    expect(await prompt(id, 'ask me')).toBe('end_turn');
    const q = questions.at(-1) as AskUserParams;
    expect(q.toolCallId).toBe('toolu_q1');
    expect(q.questions).toEqual([
      { question: 'Which database?', header: 'Database', multiSelect: false, options: [{ label: 'SQLite', description: 'file' }, { label: 'Postgres', description: 'server' }] },
    ]);
    expect(toolOutput(updatesOf(id), 'toolu_q1')).toContain('Postgres');
  });

  it('lsp_query: the LSP tool asks the editor with a file URI and a 0-based position', async () => {
    const id = await newSession();
    expect(await prompt(id, 'where is greet')).toBe('end_turn');
    const q = lspQueries.at(-1) as LspQueryParams;
    expect(q.operation).toBe('goToDefinition');
    expect(q.uri).toBe(`file://${files.main}`);
    expect(q.position).toEqual({ line: 4, character: 6 });
    expect(toolOutput(updatesOf(id), 'toolu_l1')).toContain('main.py');
  });

  it('session/cancel while a permission request waits: $/cancelRequest reaches our token, the turn ends cancelled, the command never runs', async () => {
    let tokenCancelled!: Promise<void>;
    let asked!: () => void;
    const waiting = new Promise<void>((r) => (asked = r));
    permissionAnswer = (_p, token) => {
      tokenCancelled = new Promise((r) => token.onCancellationRequested(() => r()));
      asked();
      return new Promise(() => undefined); // the user never answers
    };
    const id = await newSession();
    const turn = prompt(id, 'run and wait');
    await within(waiting, 15000, 'the permission request');
    await sc.connection.sendNotification('session/cancel', { sessionId: id });
    expect(await within(turn, 10000, 'the end of the cancelled turn')).toBe('cancelled');
    expect(lastStatus(updatesOf(id), 'toolu_b3')).toBe('failed');
    expect(toolOutput(updatesOf(id), 'toolu_b3')).toBe('Cancelled by the user.');
    // the sidecar withdraws its request with $/cancelRequest, so the extension's notification/QuickPick closes
    await within(tokenCancelled, 5000, '$/cancelRequest for the permission request');
    expect(fs.existsSync(path.join(ws, 'cancelled.txt'))).toBe(false);
  });

  it('session/cancel stops a streaming answer', async () => {
    const id = await newSession();
    const turn = prompt(id, 'count');
    const deadline = performance.now() + 20000;
    while (!updatesOf(id).some((u) => u.update.sessionUpdate === 'agent_message_chunk') && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await sc.connection.sendNotification('session/cancel', { sessionId: id });
    expect(await turn).toBe('cancelled');
    const text = updatesOf(id)
      .filter((u) => u.update.sessionUpdate === 'agent_message_chunk')
      .map((u) => (u.update.content as { text: string }).text)
      .join('');
    const full = 'Counting: ' + Array.from({ length: 300 }, (_, i) => i + 1).join(' ');
    expect(text.length).toBeGreaterThan(0);
    expect(full.startsWith(text)).toBe(true);
    expect(text.length).toBeLessThan(full.length);
  });

  it('session/list knows the sessions; session/load replays one, the user prompt included', async () => {
    const list = (await sc.connection.sendRequest('session/list', { cwd: ws })) as { sessions: { sessionId: string }[] };
    const first = sc.updates[0].sessionId;
    expect(list.sessions.map((s) => s.sessionId)).toContain(first);
    const before = sc.updates.length;
    await sc.connection.sendRequest('session/load', { sessionId: first, cwd: ws, mcpServers: [] });
    const replay = sc.updates.slice(before).filter((u) => u.sessionId === first);
    const user = replay.filter((u) => u.update.sessionUpdate === 'user_message_chunk').map((u) => (u.update.content as { text: string }).text);
    const agent = replay.filter((u) => u.update.sessionUpdate === 'agent_message_chunk').map((u) => (u.update.content as { text: string }).text);
    expect(user.join('')).toContain('hello');
    expect(agent.join('')).toContain('Hello **there**, from the scripted model.');
  });
});
