/**
 * ACP with the official TypeScript SDK's client (`@agentclientprotocol/sdk`) against the real sidecar
 * (`python -m sidecar serve --acp`) and the scripted model: the client's files (`fs/read_text_file`,
 * `fs/write_text_file`) when offered, disk when not, and cancellation with `$/cancel_request`.
 * Each test starts its own sidecar and scripted model (the turns are the test's own).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RequestError } from '@agentclientprotocol/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AcpSidecar,
  type AcpSidecarOptions,
  ScriptedModel,
  modelRequests,
  say,
  waitFor,
  startAcpSidecar,
  tempDir,
  toolResult,
  toolUse,
} from './acpClient';

let sidecar: AcpSidecar | undefined;
let model: ScriptedModel | undefined;

afterEach(async () => {
  await sidecar?.stop();
  await model?.stop();
  sidecar = undefined;
  model = undefined;
});

/** A workspace, a HOME, the scripted model (recording) with `turns(ws)`, and a connected sidecar. */
async function setup(turns: (ws: string) => unknown[], opts: Partial<AcpSidecarOptions> = {}) {
  const root = tempDir('sidecar-acp-');
  const ws = path.join(root, 'ws');
  const home = path.join(root, 'home');
  fs.mkdirSync(ws);
  fs.mkdirSync(home);
  const m = new ScriptedModel();
  model = m;
  const modelUrl = await m.start(turns(ws), root, { record: true });
  const s = await startAcpSidecar({ cwd: ws, home, modelUrl, ...opts });
  sidecar = s;
  return { ws, sidecar: s, model: m };
}

describe('ACP through the official TypeScript SDK', () => {
  it('initializes with fs and terminal offered and advertises what the sidecar supports', async () => {
    const { sidecar: s } = await setup(() => [], { fs: true, terminal: true });
    const init = s.initializeResponse;
    expect(init.protocolVersion).toBe(1);
    expect(init.agentCapabilities?.loadSession).toBe(true);
    expect(init.agentCapabilities?.promptCapabilities).toEqual({ image: true, audio: false, embeddedContext: true });
    expect(init.agentCapabilities?.mcpCapabilities).toEqual({ http: true, sse: true });
    expect(init.agentCapabilities?.sessionCapabilities).toEqual({ list: {}, additionalDirectories: {} });
    // the OS keychain (sidecar login) and the env var: the agent's authMethods (issue 26)
    expect((init.authMethods ?? []).map((m) => m.id)).toEqual(['keychain', 'anthropic-api-key']);
  });

  it("Read gets the editor's unsaved buffer through fs/read_text_file, and Edit lands in it with fs/write_text_file", async () => {
    const { ws, sidecar: s, model: m } = await setup((ws) => [
      toolUse('toolu_r1', 'Read', { file_path: path.join(ws, 'notes.txt') }),
      toolUse('toolu_e1', 'Edit', { file_path: path.join(ws, 'notes.txt'), old_string: 'gamma', new_string: 'delta' }),
      say('done'),
    ]);
    const file = path.join(ws, 'notes.txt');
    fs.writeFileSync(file, 'alpha\nbeta\ngamma\n');
    // The user typed on line 2 and has not saved: the editor's buffer differs from disk.
    s.buffers.set(file, 'alpha\nbeta, typed in the editor\ngamma\n');
    const session = await s.newSession();
    expect(await s.prompt(session, 'change gamma')).toBe('end_turn');

    expect(await toolResult(m, 'toolu_r1')).toEqual({
      text:
        '     1\talpha\n     2\tbeta, typed in the editor\n     3\tgamma\n\nNote: this is notes.txt as it is open in the ' +
        'editor, with changes that are not saved to disk. Edit and Write change it in the editor; commands you run ' +
        '(Bash) see the version on disk until it is saved.',
      isError: false,
    });
    expect(await toolResult(m, 'toolu_e1')).toEqual({
      text:
        "The file notes.txt has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n" +
        '     1\talpha\n     2\tbeta, typed in the editor\n     3\tdelta\n\n' +
        // this editor keeps the edit in its buffer (no save), so the model hears that Bash sees the old disk
        'Note: the editor has not saved notes.txt to disk yet; commands you run (Bash) see the version on disk ' +
        'until it is saved.',
      isError: false,
    });
    // The edit arrived as fs/write_text_file (after the user approved it), built on the buffer's text.
    const writes = s.clientRequests.filter((r) => r.method === 'fs/write_text_file');
    expect(writes.map((r) => r.params)).toEqual([{ sessionId: session, path: file, content: 'alpha\nbeta, typed in the editor\ndelta\n' }]);
    expect(s.clientRequests.map((r) => r.method)).toEqual([
      'fs/read_text_file',
      'fs/read_text_file',
      'session/request_permission',
      'fs/read_text_file',
      'fs/write_text_file',
    ]);
    // The permission question showed the diff against the buffer.
    const asked = s.clientRequests.find((r) => r.method === 'session/request_permission')?.params as {
      toolCall: { content?: { type: string; oldText?: string; newText?: string }[] };
    };
    expect(asked.toolCall.content?.find((c) => c.type === 'diff')).toMatchObject({
      oldText: 'alpha\nbeta, typed in the editor\ngamma\n',
      newText: 'alpha\nbeta, typed in the editor\ndelta\n',
    });
    expect(s.buffers.get(file)).toBe('alpha\nbeta, typed in the editor\ndelta\n');
    expect(fs.readFileSync(file, 'utf8')).toBe('alpha\nbeta\ngamma\n'); // disk untouched
  });

  it("an error answered to fs/read_text_file reaches the model as a tool error; the session goes on", async () => {
    const { ws, sidecar: s, model: m } = await setup(
      (ws) => [toolUse('toolu_r1', 'Read', { file_path: path.join(ws, 'notes.txt') }), say('could not read it')],
      {
        handlers: (app, sc) =>
          app.onRequest('fs/read_text_file', ({ params }) => {
            sc.clientRequests.push({ method: 'fs/read_text_file', params: params as unknown as Record<string, unknown> });
            throw new RequestError(-32002, 'Resource not found', { reason: 'the buffer was closed' });
          }),
      },
    );
    fs.writeFileSync(path.join(ws, 'notes.txt'), 'alpha\n');
    const session = await s.newSession();
    expect(await s.prompt(session, 'read it')).toBe('end_turn');
    expect(await toolResult(m, 'toolu_r1')).toEqual({
      text:
        'The editor could not read notes.txt: fs/read_text_file failed (Resource not found). Nothing was read. ' +
        'Try again; if it keeps failing, ask the user to check the file in the editor.',
      isError: true,
    });
    expect(s.clientRequests.map((r) => r.method)).toEqual(['fs/read_text_file']);
  });

  it('without fs capabilities an Edit writes the file on disk, as before', async () => {
    const { ws, sidecar: s, model: m } = await setup(
      (ws) => [
        toolUse('toolu_r1', 'Read', { file_path: path.join(ws, 'notes.txt') }),
        toolUse('toolu_e1', 'Edit', { file_path: path.join(ws, 'notes.txt'), old_string: 'beta', new_string: 'BETA' }),
        say('done'),
      ],
      { fs: false },
    );
    const file = path.join(ws, 'notes.txt');
    fs.writeFileSync(file, 'alpha\nbeta\ngamma\n');
    const session = await s.newSession();
    await s.connection.agent.request('session/set_mode', { sessionId: session, modeId: 'acceptEdits' });
    expect(await s.prompt(session, 'change beta')).toBe('end_turn');
    expect(await toolResult(m, 'toolu_r1')).toEqual({ text: '     1\talpha\n     2\tbeta\n     3\tgamma', isError: false });
    const edit = await toolResult(m, 'toolu_e1');
    expect(edit.isError).toBe(false);
    expect(edit.text).toContain('The file notes.txt has been updated.');
    expect(fs.readFileSync(file, 'utf8')).toBe('alpha\nBETA\ngamma\n');
    expect(s.clientRequests.map((r) => r.method)).toEqual([]);
  });

  it('cancels a running prompt with $/cancel_request (the SDK sends it when the request is aborted)', async () => {
    const { sidecar: s, model: m } = await setup(() => [{ ...say('too late'), delay: 30 }, say('after the cancel')]);
    const session = await s.newSession();
    const abort = new AbortController();
    const running = s.prompt(session, 'think for a long time', abort.signal);
    await waitFor(() => modelRequests(m).length === 1); // the model is thinking
    const t0 = performance.now();
    abort.abort();
    expect(await running).toBe('cancelled');
    expect(performance.now() - t0).toBeLessThan(3000);
    const promptId = s.sent.find((msg) => msg.method === 'session/prompt')?.id;
    expect(s.sent.filter((msg) => typeof msg.method === 'string' && msg.method.includes('cancel'))).toEqual([
      { jsonrpc: '2.0', method: '$/cancel_request', params: { requestId: promptId } },
    ]);
    // The session is usable again: the next prompt gets the next turn.
    expect(await s.prompt(session, 'again')).toBe('end_turn');
    const said = s.updates
      .filter((n) => n.sessionId === session && n.update.sessionUpdate === 'agent_message_chunk')
      .map((n) => (n.update.sessionUpdate === 'agent_message_chunk' && n.update.content.type === 'text' ? n.update.content.text : ''))
      .join('');
    expect(said).toContain('after the cancel');
  });
});
