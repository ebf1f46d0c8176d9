/**
 * Bash through the ACP client's terminal (`terminal/*`) with the official TypeScript SDK's client against
 * the real sidecar and the scripted model. The client's terminal is implemented here as an editor would:
 * Node's child_process runs the argv `terminal/create` hands it (with the editor's own environment, which
 * holds a secret), keeps the output up to `outputByteLimit`, answers `terminal/output`,
 * `terminal/wait_for_exit`, `terminal/kill` and `terminal/release`.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import type { ClientApp, SessionNotification } from '@agentclientprotocol/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AcpSidecar,
  ScriptedModel,
  say,
  startAcpSidecar,
  tempDir,
  toolResult,
  toolUse,
} from './acpClient';

type ToolCallUpdate = Extract<SessionNotification['update'], { sessionUpdate: 'tool_call_update' }>;

const EDITOR_SECRET = 'editor-only-secret-5d1e';

interface Terminal {
  child: ChildProcessByStdio<null, Readable, Readable>;
  output: Buffer;
  truncated: boolean;
  limit: number;
  exited: Promise<{ exitCode: number | null; signal: string | null }>;
  status?: { exitCode: number | null; signal: string | null };
}

/** An editor's terminal: runs what it is given, streams what it prints, records every call. */
class EditorTerminals {
  terminals = new Map<string, Terminal>();
  /** What `terminal/output` answered, in order (the output as the editor showed it at that moment). */
  outputs: string[] = [];
  private created = 0;

  install(app: ClientApp, sidecar: AcpSidecar): void {
    const record = (method: string, params: unknown) =>
      sidecar.clientRequests.push({ method, params: params as Record<string, unknown> });
    app.onRequest('terminal/create', ({ params }) => {
      record('terminal/create', params);
      const env: NodeJS.ProcessEnv = { ...process.env, EDITOR_TOKEN: EDITOR_SECRET };
      for (const v of params.env ?? []) env[v.name] = v.value;
      const child = spawn(params.command, params.args ?? [], {
        cwd: params.cwd ?? undefined,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true, // its own process group, so kill reaches what it started
      });
      const term: Terminal = {
        child,
        output: Buffer.alloc(0),
        truncated: false,
        limit: params.outputByteLimit ?? Number.MAX_SAFE_INTEGER,
        exited: new Promise((resolve) => {
          child.on('close', (exitCode, signal) => {
            term.status = { exitCode, signal };
            resolve(term.status);
          });
          child.on('error', () => {
            term.status = { exitCode: 127, signal: null };
            resolve(term.status);
          });
        }),
      };
      const add = (data: Buffer) => {
        term.output = Buffer.concat([term.output, data]);
        if (term.output.length > term.limit) {
          let cut = term.output.length - term.limit;
          while (cut < term.output.length && (term.output[cut] & 0xc0) === 0x80) cut++; // a character boundary
          term.output = term.output.subarray(cut);
          term.truncated = true;
        }
      };
      child.stdout.on('data', add);
      child.stderr.on('data', add);
      this.created += 1;
      const terminalId = `term-${this.created}`;
      this.terminals.set(terminalId, term);
      return { terminalId };
    });
    app.onRequest('terminal/output', ({ params }) => {
      record('terminal/output', params);
      const term = this.get(params.terminalId);
      const output = term.output.toString('utf8');
      this.outputs.push(output);
      return { output, truncated: term.truncated, ...(term.status ? { exitStatus: term.status } : {}) };
    });
    app.onRequest('terminal/wait_for_exit', async ({ params }) => {
      record('terminal/wait_for_exit', params);
      return await this.get(params.terminalId).exited;
    });
    app.onRequest('terminal/kill', ({ params }) => {
      record('terminal/kill', params);
      this.kill(this.get(params.terminalId));
      return {};
    });
    app.onRequest('terminal/release', ({ params }) => {
      record('terminal/release', params);
      const term = this.get(params.terminalId);
      this.kill(term);
      this.terminals.delete(params.terminalId);
      return {};
    });
  }

  private get(id: string): Terminal {
    const term = this.terminals.get(id);
    if (!term) throw new Error(`no terminal ${id}`);
    return term;
  }

  kill(term: Terminal): void {
    if (term.status || term.child.pid === undefined) return;
    try {
      process.kill(-term.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

let sidecar: AcpSidecar | undefined;
let model: ScriptedModel | undefined;
let terminals: EditorTerminals | undefined;

afterEach(async () => {
  for (const term of terminals?.terminals.values() ?? []) terminals?.kill(term);
  await sidecar?.stop();
  await model?.stop();
  sidecar = undefined;
  model = undefined;
  terminals = undefined;
});

/** A workspace, a HOME, the scripted model (recording) with `turns`, and a sidecar whose client offers a terminal. */
async function setup(turns: unknown[]): Promise<{ ws: string; t: EditorTerminals }> {
  const root = tempDir('sidecar-acp-term-');
  const ws = path.join(root, 'ws');
  const home = path.join(root, 'home');
  fs.mkdirSync(ws);
  fs.mkdirSync(home);
  model = new ScriptedModel();
  const modelUrl = await model.start(turns, root, { record: true });
  const t = new EditorTerminals();
  terminals = t;
  sidecar = await startAcpSidecar({ cwd: ws, home, modelUrl, terminal: true, handlers: (app, sc) => t.install(app, sc) });
  return { ws, t };
}

describe("Bash through the ACP client's terminal (official TypeScript SDK)", () => {
  it('streams the output through the editor terminal, embeds it in the tool call, and the model gets the result', async () => {
    const command = 'echo first; sleep 1.5; echo second >&2; env';
    const { ws, t } = await setup([toolUse('toolu_b1', 'Bash', { command }), say('done')]);
    if (!sidecar || !model) throw new Error('not started');
    const session = await sidecar.newSession();
    expect(await sidecar.prompt(session, 'run it')).toBe('end_turn');

    // The model got the output, in order, bounded as the sidecar formats it; no secret of the sidecar
    // (ANTHROPIC_API_KEY) nor of the editor (EDITOR_TOKEN) reached the command.
    const result = await toolResult(model, 'toolu_b1');
    expect(result.isError).toBe(false);
    expect(result.text).toMatch(/^first\nsecond\n/);
    expect(result.text).toMatch(/\nExit code 0 \(\d+\.\d\d s\)$/);
    expect(result.text).toContain('TMPDIR=');
    expect(result.text).not.toContain('ANTHROPIC_API_KEY');
    expect(result.text).not.toContain('EDITOR_TOKEN');
    expect(result.text).not.toContain(EDITOR_SECRET);

    // Everything ran through the editor's terminal: created, read, waited for, released.
    const methods = sidecar.clientRequests.map((r) => r.method).filter((m) => m.startsWith('terminal/'));
    expect(methods[0]).toBe('terminal/create');
    expect(methods).toContain('terminal/wait_for_exit');
    expect(methods.slice(-2)).toEqual(['terminal/output', 'terminal/release']);
    expect(methods).not.toContain('terminal/kill');
    const create = sidecar.clientRequests[0].params as { command: string; args: string[]; cwd: string; outputByteLimit: number };
    expect(create.command).toMatch(/\/env$/);
    expect(create.args[0]).toBe('-i');
    expect(create.args).toContain('bash');
    expect(create.args.join(' ')).not.toContain('test-key'); // the sidecar's API key is not in what the editor runs
    expect(create.args.some((a) => a.startsWith('PATH='))).toBe(false); // nor any value of its environment
    expect(create.cwd).toBe(fs.realpathSync(ws));
    expect(create.outputByteLimit).toBeGreaterThan(0);

    // It streamed: while the command ran, the editor's terminal held "first" and not yet "second".
    expect(t.outputs.some((o) => o.includes('first') && !o.includes('second'))).toBe(true);

    // The tool call embeds the terminal while it runs and after it ended.
    const calls = sidecar.updates
      .map((u) => u.update)
      .filter((u): u is ToolCallUpdate => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'toolu_b1');
    const running = calls.find((u) => u.status === 'in_progress' && u.content?.length);
    expect(running?.content).toEqual([{ type: 'terminal', terminalId: 'term-1' }]);
    const final = calls[calls.length - 1];
    expect(final.status).toBe('completed');
    expect(final.content?.[0]).toMatchObject({ type: 'terminal', terminalId: 'term-1' });
    expect(final.content?.[1]).toMatchObject({ type: 'content', content: { type: 'text' } });
  });

  it('$/cancel_request of the prompt kills and releases the terminal, and the prompt ends cancelled', async () => {
    const { t } = await setup([toolUse('toolu_b1', 'Bash', { command: 'sleep 45.5' }), say('never')]);
    if (!sidecar) throw new Error('not started');
    const s = sidecar;
    const session = await s.newSession();
    const abort = new AbortController();
    const running = s.prompt(session, 'wait', abort.signal);
    let ended: string | undefined;
    running.then(
      (reason) => (ended = reason),
      (err: unknown) => (ended = String(err)),
    );
    // A monotonic clock: this machine's wall clock has been seen to step (a Date.now() deadline fired 1.5 s in).
    const deadline = performance.now() + 30000;
    while (![...t.terminals.values()].some((term) => term.child.pid !== undefined)) {
      if (ended !== undefined) throw new Error(`the prompt ended (${ended}) before a terminal was created`);
      if (performance.now() > deadline) throw new Error('no terminal was created');
      await new Promise((r) => setTimeout(r, 50));
    }
    const term = [...t.terminals.values()][0];
    const started = performance.now();
    abort.abort();
    expect(await running).toBe('cancelled');
    expect(performance.now() - started).toBeLessThan(1000);
    expect(s.clientRequests.map((r) => r.method).slice(-2)).toEqual(['terminal/kill', 'terminal/release']);
    expect((await term.exited).signal).toBe('SIGKILL');
  });
});
