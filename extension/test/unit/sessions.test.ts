import { beforeEach, describe, expect, it, vi } from 'vitest';
import { type Connection, Sessions, promptBlocks, rewindReport, undoReport } from '../../src/panel/sessions';
import type { ContextItem, ToView } from '../../src/shared/panelProtocol';
import { rewindFlags } from '../../src/webview/messageActions';

class FakeConnection implements Connection {
  requests: { method: string; params: unknown }[] = [];
  notifications: { method: string; params: unknown }[] = [];
  answers = new Map<string, (params: any) => unknown>(); // eslint-disable-line @typescript-eslint/no-explicit-any
  async sendRequest<P, R>(type: { method: string }, params: P): Promise<R> {
    this.requests.push({ method: type.method, params });
    const f = this.answers.get(type.method);
    return (f ? await f(params) : null) as R;
  }
  async sendNotification<P>(type: { method: string }, params: P): Promise<void> {
    this.notifications.push({ method: type.method, params });
  }
}

let posted: ToView[];
let conn: FakeConnection;
let sessions: Sessions;

beforeEach(async () => {
  posted = [];
  conn = new FakeConnection();
  conn.answers.set('session/list', () => ({ sessions: [{ sessionId: 'old', title: 'Earlier work' }] }));
  conn.answers.set('session/new', () => ({ sessionId: 'S1', modes: { currentModeId: 'default', availableModes: [] } }));
  conn.answers.set('session/prompt', () => ({ stopReason: 'end_turn' }));
  sessions = new Sessions({ post: (m) => posted.push(m) }, () => '/ws', 'default');
  await sessions.attach(conn);
});

describe('prompt content', () => {
  it('text first, files as resource_link, selections as a fenced text block with 1-based lines', () => {
    const ctx: ContextItem[] = [
      { kind: 'file', uri: 'file:///ws/src/app.ts', label: 'src/app.ts' },
      { kind: 'selection', uri: 'file:///ws/a.py', label: 'a.py:3-4', text: 'x = 1\ny = 2', startLine: 2, endLine: 3, languageId: 'python' },
    ];
    expect(promptBlocks('Fix this', ctx)).toEqual([
      { type: 'text', text: 'Fix this' },
      { type: 'resource_link', uri: 'file:///ws/src/app.ts', name: 'src/app.ts' },
      { type: 'text', text: 'Selected lines 3-4 of /ws/a.py:\n```python\nx = 1\ny = 2\n```' },
    ]);
  });
});

describe('sessions', () => {
  it('the first prompt creates a session with the workspace cwd and no MCP servers, then prompts it', async () => {
    expect(await sessions.prompt('hello', [])).toBe('end_turn');
    const calls = conn.requests.filter((r) => r.method !== 'session/list'); // the list refreshes around them
    expect(calls.map((r) => r.method)).toEqual(['session/new', 'session/prompt']);
    expect(calls[0].params).toEqual({ cwd: '/ws', mcpServers: [] });
    expect(calls[1].params).toEqual({ sessionId: 'S1', prompt: [{ type: 'text', text: 'hello' }] });
    expect(posted.filter((m) => m.type === 'turnEnd')).toEqual([{ type: 'turnEnd', stopReason: 'end_turn' }]);
    // busy while the turn runs, idle after
    const states = posted.filter((m): m is Extract<ToView, { type: 'state' }> => m.type === 'state');
    expect(states.some((s) => s.busy)).toBe(true);
    expect(states.at(-1)?.busy).toBe(false);
  });

  it('updates of other sessions are dropped; a mode update moves the picker', async () => {
    await sessions.newSession();
    posted = [];
    sessions.onUpdate({ sessionId: 'other', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x' } } });
    expect(posted).toEqual([]);
    sessions.onUpdate({ sessionId: 'S1', update: { sessionUpdate: 'current_mode_update', currentModeId: 'plan' } });
    expect(sessions.mode).toBe('plan');
    expect(posted.map((m) => m.type)).toEqual(['state', 'update']);
  });

  it('stop sends session/cancel for the current session; the mode picker sends session/set_mode', async () => {
    await sessions.newSession();
    await sessions.cancel();
    expect(conn.notifications).toEqual([{ method: 'session/cancel', params: { sessionId: 'S1' } }]);
    await sessions.setMode('acceptEdits');
    expect(conn.requests.at(-1)).toEqual({ method: 'session/set_mode', params: { sessionId: 'S1', modeId: 'acceptEdits' } });
  });

  it('a new session gets the initial mode from the settings when it differs', async () => {
    const s = new Sessions({ post: () => undefined }, () => '/ws', 'plan');
    await s.attach(conn);
    await s.newSession();
    expect(conn.requests.at(-2)).toEqual({ method: 'session/set_mode', params: { sessionId: 'S1', modeId: 'plan' } });
  });

  it('a failed prompt shows the error and ends the turn', async () => {
    conn.answers.set('session/prompt', () => Promise.reject(new Error('The model request failed: 401')));
    expect(await sessions.prompt('hi', [])).toBe('error');
    expect(posted).toContainEqual({ type: 'turnEnd', stopReason: 'error', error: { message: 'The model request failed: 401' } });
    expect(sessions.busy).toBe(false);
  });

  it('after a restart the open session is loaded again from its log', async () => {
    await sessions.newSession();
    await sessions.attach(undefined);
    expect(posted.at(-1)).toMatchObject({ type: 'state', ready: false });
    const fresh = new FakeConnection();
    fresh.answers.set('session/list', () => ({ sessions: [] }));
    fresh.answers.set('session/load', () => ({ modes: { currentModeId: 'acceptEdits' } }));
    await sessions.attach(fresh);
    expect(fresh.requests.map((r) => r.method)).toEqual(['session/list', 'session/load']);
    expect(fresh.requests[1].params).toEqual({ sessionId: 'S1', cwd: '/ws', mcpServers: [] });
    expect(sessions.mode).toBe('acceptEdits');
  });

  it('resume loads a listed session and clears the transcript first', async () => {
    posted = [];
    conn.answers.set('session/load', () => null);
    await sessions.load('old');
    expect(posted[0]).toEqual({ type: 'clear', replay: true });
    expect(posted.filter((m) => m.type === 'replayDone')).toHaveLength(1);
    expect(sessions.sessionId).toBe('old');
  });
});

describe('what a turn asks the user ends with the turn', () => {
  it('the LSP cancel or the end of its session\'s turn cancels a linked request; other sessions are untouched', async () => {
    const { TurnTokens } = await import('../../src/turnTokens');
    const vscode = await import('vscode');
    const tokens = new TurnTokens();
    const lsp = new vscode.CancellationTokenSource();
    const a = tokens.link('S1', lsp.token as never);
    const b = tokens.link('S2', undefined);
    expect(tokens.size).toBe(2);
    tokens.turnEnded('S1');
    expect(a.token.isCancellationRequested).toBe(true);
    expect(b.token.isCancellationRequested).toBe(false);
    const c = tokens.link('S2', lsp.token as never);
    expect(c.token.isCancellationRequested).toBe(false);
    const d = tokens.link('S3', lsp.token as never);
    lsp.cancel();
    expect(d.token.isCancellationRequested).toBe(true);
    for (const x of [a, b, c, d]) x.dispose();
    expect(tokens.size).toBe(0);
  });

  it('Sessions reports the end of every turn, failed ones included', async () => {
    const ended: string[] = [];
    sessions.onTurnEnd = (id) => ended.push(id);
    await sessions.prompt('one', []);
    conn.answers.set('session/prompt', () => Promise.reject(new Error('boom')));
    await sessions.prompt('two', []);
    expect(ended).toEqual(['S1', 'S1']);
  });
});

describe('checkpoints', () => {
  const rel = (p: string) => p.replace('/ws/', '');

  it('each action sends its flags to _sidecar/sessions/rewind', () => {
    expect(rewindFlags('code')).toEqual({ files: true, conversation: false });
    expect(rewindFlags('conversation')).toEqual({ files: false, conversation: true });
    expect(rewindFlags('both')).toEqual({ files: true, conversation: true });
  });

  it('the report names what was restored and every file left alone with its reason', () => {
    expect(rewindReport({ restored: ['/ws/a.py', '/ws/b.py'], conflicts: [] }, true, rel)).toEqual({ text: 'Restored a.py, b.py.', level: 'info' });
    expect(rewindReport({ restored: ['/ws/a.py'], conflicts: [{ path: '/ws/b.py', reason: 'changed since the agent last wrote it; left as it is' }] }, true, rel)).toEqual({
      text: 'Restored a.py. Not restored: b.py (changed since the agent last wrote it; left as it is).',
      level: 'warning',
    });
    expect(rewindReport({ restored: [], conflicts: [] }, true, rel)?.text).toBe('No file to restore: the turns after this message changed none.');
    expect(rewindReport({ restored: [], conflicts: [] }, false, rel)).toBeNull();
    // A file open with unsaved changes gets its earlier text back in the editor, not on disk: said as such
    // (it read "No file to restore" before).
    expect(rewindReport({ restored: [], restoredInEditor: ['/ws/c.py'], conflicts: [] }, true, rel)).toEqual({
      text: 'Put the earlier text of c.py back in the editor (not saved).', level: 'info' });
    expect(rewindReport({ restored: ['/ws/a.py'], restoredInEditor: ['/ws/c.py'], conflicts: [{ path: '/ws/b.py', reason: 'changed' }] }, true, rel)).toEqual({
      text: 'Restored a.py. Put the earlier text of c.py back in the editor (not saved). Not restored: b.py (changed).', level: 'warning' });
  });

  it('a files-only restore offers "Undo restore", which asks undo_rewind and tells what went back', async () => {
    conn.answers.set('_sidecar/sessions/rewind', () => ({ restored: ['/ws/notes.txt', '/ws/new.txt'], conflicts: [], historyLength: null, undoId: 'undo_1' }));
    conn.answers.set('_sidecar/sessions/undo_rewind', () => ({ restored: ['/ws/new.txt'], conflicts: [{ path: '/ws/notes.txt', reason: 'changed since the restore; left as it is' }] }));
    sessions.roots = () => ['/ws'];
    await sessions.prompt('first', []);
    posted = [];
    await sessions.rewind('msg_1', true, false);
    expect(posted.filter((m) => m.type !== 'state')).toEqual([{ type: 'notice', text: 'Restored notes.txt, new.txt.', level: 'info', messageId: 'msg_1', undoId: 'undo_1', restored: true }]);
    posted = [];
    await sessions.undoRestore('undo_1', 'msg_1');
    expect(conn.requests.at(-1)).toEqual({ method: '_sidecar/sessions/undo_rewind', params: { sessionId: 'S1', undoId: 'undo_1' } });
    expect(posted.filter((m) => m.type !== 'state')).toEqual([
      { type: 'notice', text: 'Undid the restore: new.txt is as before it. Left as they are: notes.txt (changed since the restore; left as it is).', level: 'warning', messageId: 'msg_1', restored: true },
    ]);
    // the conversation rewound too: no undo offered
    posted = [];
    await sessions.rewind('msg_1', true, true);
    expect(posted.find((m) => m.type === 'notice')).not.toHaveProperty('undoId');
    expect(undoReport({ restored: ['/ws/a.py', '/ws/b.py'], conflicts: [] }, rel)).toEqual({ text: 'Undid the restore: a.py, b.py are as before it.', level: 'info' });
  });

  it('a replayed restore record reaches the panel with the line the live restore drew, in the same words', async () => {
    sessions.roots = () => ['/ws'];
    await sessions.prompt('first', []);
    const record = (notice: Record<string, unknown>) => ({
      sessionUpdate: 'agent_message_chunk' as const,
      content: { type: 'text' as const, text: '' },
      _meta: { sidecar: { restoreNotice: { restored: ['/ws/new.txt'], conflicts: [], files: true, conversation: false, toMessageId: 'msg_1', ...notice } as never } },
    });
    const lines = (updates: ReturnType<typeof record>[]) => {
      posted = [];
      for (const update of updates) sessions.onUpdate({ sessionId: 'S1', update });
      return posted.map((m) => (m.type === 'update' && m.update.sessionUpdate === 'agent_message_chunk' ? (m.update._meta?.sidecar?.notice ?? null) : m));
    };
    expect(lines([record({ kind: 'rewind' }), record({ kind: 'undo' }), record({ kind: 'rewind', conversation: true })])).toEqual([
      { text: 'Restored new.txt.', level: 'info', messageId: 'msg_1' },
      { text: 'Undid the restore: new.txt is as before it.', level: 'info', messageId: 'msg_1' },
      { text: 'Restored new.txt.', level: 'info' }, // the conversation went back: at the end
    ]);
    expect(lines([record({ kind: 'rewind', toolCallId: 'toolu_1', restored: [] }), record({ kind: 'rewind', files: false, restored: [], conversation: true })])).toEqual([
      { text: 'No file to restore: that call and the later ones changed none.', level: 'info' },
      null, // a conversation-only rewind drew no line
    ]);
  });

  it('restoring the conversation drops the message and what follows from the transcript; code only does not', async () => {
    conn.answers.set('_sidecar/sessions/rewind', () => ({ restored: ['/ws/notes.txt'], conflicts: [], historyLength: 2 }));
    sessions.roots = () => ['/ws'];
    await sessions.prompt('first', []);
    posted = [];
    await sessions.rewind('msg_1', true, false);
    expect(conn.requests.at(-1)).toEqual({ method: '_sidecar/sessions/rewind', params: { sessionId: 'S1', toMessageId: 'msg_1', files: true, conversation: false } });
    expect(posted.filter((m) => m.type !== 'state')).toEqual([{ type: 'notice', text: 'Restored notes.txt.', level: 'info', messageId: 'msg_1', restored: true }]);
    posted = [];
    conn.answers.set('_sidecar/sessions/rewind', () => ({ restored: [], conflicts: [], historyLength: 2 }));
    await sessions.rewind('msg_1', false, true);
    expect(posted.filter((m) => m.type !== 'state')).toEqual([{ type: 'truncate', messageId: 'msg_1' }]);
    expect(conn.requests.some((r) => r.method === 'session/load')).toBe(false);
  });

  it('Edit & resend rewinds files and conversation, then sends the edited text with the original context', async () => {
    conn.answers.set('_sidecar/sessions/rewind', () => ({ restored: [], conflicts: [], historyLength: 0 }));
    await sessions.prompt('first', []);
    const image: ContextItem = { kind: 'image', uri: '', label: 'image 1', data: 'iVBORw0KGgo=', mimeType: 'image/png' };
    await sessions.editResend('msg_1', 'first, edited', [image]);
    await new Promise((r) => setTimeout(r, 0));
    const calls = conn.requests.filter((r) => r.method === '_sidecar/sessions/rewind' || r.method === 'session/prompt').slice(1);
    expect(calls.map((c) => c.method)).toEqual(['_sidecar/sessions/rewind', 'session/prompt']);
    expect(calls[0].params).toMatchObject({ files: true, conversation: true, toMessageId: 'msg_1' });
    expect(calls[1].params).toEqual({ sessionId: 'S1', prompt: [{ type: 'text', text: 'first, edited' }, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }] });
  });

  it('Compare asks the sidecar for a message or a tool call; nothing is restored', async () => {
    const files = [{ path: '/ws/a.py', change: 'modify', checkpoint: 'old\n', current: 'new\n' }];
    conn.answers.set('_sidecar/sessions/compare', () => ({ files, conflicts: [] }));
    await sessions.prompt('first', []);
    expect(await sessions.compare({ messageId: 'msg_1' })).toEqual({ files, conflicts: [] });
    expect(conn.requests.at(-1)).toEqual({ method: '_sidecar/sessions/compare', params: { sessionId: 'S1', toMessageId: 'msg_1' } });
    await sessions.compare({ toolCallId: 'toolu_2' });
    expect(conn.requests.at(-1)).toEqual({ method: '_sidecar/sessions/compare', params: { sessionId: 'S1', toolCallId: 'toolu_2' } });
    expect(conn.requests.some((r) => r.method === '_sidecar/sessions/rewind')).toBe(false);
  });

  it('Restore on a tool card puts the files back to before that call and keeps the conversation', async () => {
    sessions.roots = () => ['/ws'];
    await sessions.prompt('first', []);
    conn.answers.set('_sidecar/sessions/rewind', () => ({ restored: ['/ws/new.txt'], conflicts: [], historyLength: null }));
    posted = [];
    await sessions.restoreToolCall('toolu_2');
    expect(conn.requests.at(-1)).toEqual({ method: '_sidecar/sessions/rewind', params: { sessionId: 'S1', toolCallId: 'toolu_2', files: true, conversation: false } });
    expect(posted.filter((m) => m.type !== 'state')).toEqual([{ type: 'notice', text: 'Restored new.txt.', level: 'info', restored: true }]);
    conn.answers.set('_sidecar/sessions/rewind', () => ({ restored: [], conflicts: [], historyLength: null }));
    posted = [];
    await sessions.restoreToolCall('toolu_2');
    expect(posted.filter((m) => m.type !== 'state')).toEqual([{ type: 'notice', text: 'No file to restore: that call and the later ones changed none.', level: 'info', restored: true }]);
  });

  it('a tool call\'s Restore offers "Undo restore" too, and its line takes the earlier undo away', async () => {
    sessions.roots = () => ['/ws'];
    await sessions.prompt('first', []);
    conn.answers.set('_sidecar/sessions/rewind', () => ({ restored: ['/ws/new.txt'], conflicts: [], historyLength: null, undoId: 'undo_7' }));
    conn.answers.set('_sidecar/sessions/undo_rewind', () => ({ restored: ['/ws/new.txt'], conflicts: [] }));
    posted = [];
    await sessions.restoreToolCall('toolu_2');
    // (the sidecar answers an undoId to every files-only rewind; it was dropped here, and the button of an
    // earlier message's restore stayed, though the sidecar can no longer undo that one)
    expect(posted.filter((m) => m.type !== 'state')).toEqual([{ type: 'notice', text: 'Restored new.txt.', level: 'info', undoId: 'undo_7', restored: true }]);
    posted = [];
    await sessions.undoRestore('undo_7');
    expect(conn.requests.at(-1)).toEqual({ method: '_sidecar/sessions/undo_rewind', params: { sessionId: 'S1', undoId: 'undo_7' } });
    expect(posted.filter((m) => m.type !== 'state')).toEqual([{ type: 'notice', text: 'Undid the restore: new.txt is as before it.', level: 'info', restored: true }]);
  });

  it('a turn end carries what the turn cost', async () => {
    const spend = { usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 }, cost: { amount: 0.0001, currency: 'USD' } };
    conn.answers.set('session/prompt', () => ({ stopReason: 'end_turn', _meta: { sidecar: { userMessageId: 'msg_1', spend } } }));
    await sessions.prompt('first', []);
    expect(posted.find((m) => m.type === 'turnEnd')).toEqual({ type: 'turnEnd', stopReason: 'end_turn', spend });
  });

  it('a rewind while a turn runs is refused before it reaches the sidecar', async () => {
    await sessions.prompt('first', []);
    sessions.busy = true;
    await expect(sessions.rewind('msg_1', true, true)).rejects.toThrow(/stop it before restoring/);
    expect(conn.requests.some((r) => r.method === '_sidecar/sessions/rewind')).toBe(false);
  });
});

describe('failures, retries and the last session (issue 12)', () => {
  it('a failed prompt ends the turn once, with the error (code, message, data) and no separate error line', async () => {
    const data = { kind: 'model_unavailable', retryable: true, status: 500, errorType: 'api_error', providerMessage: 'Internal server error', attempts: 7, userMessageId: 'msg_1' };
    conn.answers.set('session/prompt', () => {
      throw Object.assign(new Error('The model API answered HTTP 500 (api_error): Internal server error after 7 attempts.'), { code: -32050, data });
    });
    expect(await sessions.prompt('hello', [])).toBe('error');
    expect(posted.filter((m) => m.type === 'error')).toEqual([]);
    expect(posted.filter((m) => m.type === 'userMessageId')).toEqual([{ type: 'userMessageId', promptId: 'p1', messageId: 'msg_1' }]);
    expect(posted.filter((m) => m.type === 'turnEnd')).toEqual([
      { type: 'turnEnd', stopReason: 'error', error: { code: -32050, message: 'The model API answered HTTP 500 (api_error): Internal server error after 7 attempts.', data } },
    ]);
  });

  it('_sidecar/model_retry of the open session reaches the panel; another session\'s does not', async () => {
    await sessions.newSession();
    const retry = { sessionId: 'S1', attempt: 1, maxAttempts: 7, delayMs: 1000, status: 500, errorType: 'api_error', message: 'm' };
    sessions.onRetry(retry);
    sessions.onRetry({ ...retry, sessionId: 'other' });
    expect(posted.filter((m) => m.type === 'retry')).toEqual([{ type: 'retry', retry }]);
  });

  it('the open session is remembered, and reloaded when the agent (re)starts', async () => {
    const seen: (string | null)[] = [];
    const s = new Sessions({ post: (m) => posted.push(m) }, () => '/ws', 'default');
    s.onSessionChanged = (id) => seen.push(id);
    s.sessionId = 'old';
    await s.attach(conn);
    expect(conn.requests.filter((r) => r.method === 'session/load').map((r) => r.params)).toEqual([{ sessionId: 'old', cwd: '/ws', mcpServers: [] }]);
    await s.newSession();
    expect(seen).toEqual(['old', 'S1']);
  });

  it('a remembered session that is gone is forgotten; the panel starts empty', async () => {
    conn.answers.set('session/load', () => {
      throw Object.assign(new Error('Unknown session'), { code: -32002 });
    });
    const seen: (string | null)[] = [];
    const s = new Sessions({ post: (m) => posted.push(m) }, () => '/ws', 'default');
    s.onSessionChanged = (id) => seen.push(id);
    s.sessionId = 'gone';
    await s.attach(conn);
    expect(s.sessionId).toBeNull();
    expect(seen).toEqual(['gone', null]);
    expect(posted.filter((m) => m.type === 'error')).toEqual([]);
  });

  it('an agent that did not start is "failed", not "starting"', async () => {
    const s = new Sessions({ post: (m) => posted.push(m) }, () => '/ws', 'default');
    await s.attach(undefined);
    s.fail();
    const last = posted.filter((m): m is Extract<ToView, { type: 'state' }> => m.type === 'state').at(-1);
    expect(last).toMatchObject({ ready: false, failed: true });
    await s.attach(conn);
    expect(s.failed).toBe(false);
  });
});

describe('a prompt right after the agent restarts', () => {
  it('waits for session/load of the open session, then prompts that session (never one the agent does not know yet)', async () => {
    await sessions.newSession();
    const restarted = new FakeConnection();
    let loaded: () => void = () => undefined;
    restarted.answers.set('session/list', () => ({ sessions: [] }));
    restarted.answers.set('session/load', () => new Promise<object>((resolve) => { loaded = () => resolve({}); }));
    restarted.answers.set('session/prompt', () => ({ stopReason: 'end_turn' }));
    const attaching = sessions.attach(restarted);
    const prompting = sessions.prompt('hello again', []);
    await new Promise((r) => setTimeout(r, 0));
    expect(restarted.requests.map((r) => r.method)).not.toContain('session/prompt');
    loaded();
    await attaching;
    expect(await prompting).toBe('end_turn');
    const methods = restarted.requests.map((r) => r.method).filter((m) => m !== 'session/list');
    expect(methods).toEqual(['session/load', 'session/prompt']);
    expect(restarted.requests.find((r) => r.method === 'session/prompt')?.params).toMatchObject({ sessionId: 'S1' });
  });
});

describe('leaving a session whose turn runs', () => {
  it('picking another session stops the turn first: its questions cancelled, its end drawn before the other session is shown', async () => {
    let answerPrompt: (r: unknown) => void = () => undefined;
    conn.answers.set('session/prompt', () => new Promise((resolve) => { answerPrompt = resolve; }));
    conn.answers.set('session/load', () => ({ modes: { currentModeId: 'default' } }));
    const said: string[] = [];
    sessions.onStopTurn = () => { said.push('questions cancelled'); };
    const turn = sessions.prompt('long job', []);
    await vi.waitFor(() => expect(conn.requests.some((r) => r.method === 'session/prompt')).toBe(true));
    posted = [];
    // The agent answers the cancel by ending the turn, as the sidecar does.
    conn.sendNotification = async (type, params) => {
      conn.notifications.push({ method: type.method, params });
      said.push(type.method);
      if (type.method === 'session/cancel') answerPrompt({ stopReason: 'cancelled' });
    };
    await sessions.load('old');
    expect(await turn).toBe('cancelled');
    // ACP's order: the cancel, then the approvals answered "cancelled" (else the agent reads a refused call
    // and goes on to another model request).
    expect(said).toEqual(['session/cancel', 'questions cancelled']);
    expect(conn.notifications).toEqual([{ method: 'session/cancel', params: { sessionId: 'S1' } }]);
    const order = posted.filter((m) => m.type === 'turnEnd' || m.type === 'clear').map((m) => m.type);
    expect(order).toEqual(['turnEnd', 'clear']); // the stopped turn ends in its own transcript
    expect(sessions.sessionId).toBe('old');
  });

  it('a closed tab stops its turn the same way: the cancel is sent before its approvals are answered', async () => {
    let answerPrompt: (r: unknown) => void = () => undefined;
    conn.answers.set('session/prompt', () => new Promise((resolve) => { answerPrompt = resolve; }));
    const said: string[] = [];
    sessions.onStopTurn = () => { said.push('questions cancelled'); };
    const turn = sessions.prompt('long job', []);
    await vi.waitFor(() => expect(conn.requests.some((r) => r.method === 'session/prompt')).toBe(true));
    let sent!: () => void;
    const cancelWritten = new Promise<void>((resolve) => { sent = resolve; });
    conn.sendNotification = async (type, params) => {
      conn.notifications.push({ method: type.method, params });
      await cancelWritten; // a notification still being written: the approvals wait for it
      said.push(type.method);
    };
    const stopping = sessions.stopTurn();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(said).toEqual([]);
    sent();
    await stopping;
    expect(said).toEqual(['session/cancel', 'questions cancelled']);
    answerPrompt({ stopReason: 'cancelled' });
    expect(await turn).toBe('cancelled');
    // Idle: no cancel, and whatever the chat still offered is answered all the same.
    said.length = 0;
    await sessions.stopTurn();
    expect(said).toEqual(['questions cancelled']);
  });

  it('an idle session is left without a cancel', async () => {
    conn.answers.set('session/load', () => ({ modes: { currentModeId: 'default' } }));
    let left = 0;
    sessions.onStopTurn = () => { left += 1; };
    await sessions.prompt('quick', []);
    await sessions.load('old');
    await sessions.newSession();
    expect(left).toBe(0);
    expect(conn.notifications.filter((n) => n.method === 'session/cancel')).toEqual([]);
  });
});
