/**
 * Drives the real sidecar (`.venv/bin/python -m sidecar serve`, LSP framing on stdio) with vscode-jsonrpc,
 * the way the extension's language client does, against the scripted model server.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { type MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import { clientCapabilities } from '../../src/protocol';

/** A `session/update` as it arrives: the tests read any field of any kind (protocol.ts types the known ones). */
export interface SessionNotification {
  sessionId: string;
  update: { sessionUpdate: string } & Record<string, unknown>;
}

export const repoRoot = path.resolve(__dirname, '../../..');
export const python = process.env.SIDECAR_PYTHON ?? path.join(repoRoot, '.venv', 'bin', 'python');

type Child = ChildProcessByStdio<Writable | null, Readable, Readable>;

/** SIGTERM, then SIGKILL after 5 s; resolves when the process has exited. */
export function kill(child: Child | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export class ScriptedModel {
  private child: Child | undefined;
  url = '';

  /** The file every request is appended to (`--record`), when `start` was asked to record. */
  recordFile: string | undefined;

  async start(turns: unknown[], dir: string, opts: { record?: boolean } = {}): Promise<string> {
    const script = path.join(dir, 'turns.json');
    fs.writeFileSync(script, JSON.stringify(turns));
    const args = ['-m', 'sidecar.testing.scripted_server', '--script', script];
    if (opts.record) {
      this.recordFile = path.join(dir, 'requests.jsonl');
      args.push('--record', this.recordFile);
    }
    const child = spawn(python, args, {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stderr.resume();
    this.url = await new Promise<string>((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        const nl = buf.indexOf('\n');
        if (nl >= 0) resolve(buf.slice(0, nl).trim());
      });
      child.once('exit', (code) => reject(new Error(`scripted model server exited with ${code}`)));
    });
    return this.url;
  }

  stop(): Promise<void> {
    return kill(this.child);
  }
}

export interface Sidecar {
  connection: MessageConnection;
  updates: SessionNotification[];
  initializeResult: { capabilities: Record<string, unknown> & { experimental?: { acp?: Record<string, unknown> } } };
  stderr: () => string;
  stop(): Promise<void>;
}

/** Spawns `sidecar serve`, performs the LSP handshake with our ACP client capabilities, collects updates. */
export async function startSidecar(opts: { cwd: string; home: string; modelUrl: string; settings?: Record<string, unknown> }): Promise<Sidecar> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: opts.home,
    XDG_DATA_HOME: path.join(opts.home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(opts.home, '.cache'),
    XDG_CONFIG_HOME: path.join(opts.home, '.config'),
    ANTHROPIC_BASE_URL: opts.modelUrl,
    ANTHROPIC_API_KEY: 'test-key',
  };
  const child = spawn(python, ['-m', 'sidecar', 'serve'], { cwd: opts.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] }) as Child;
  let err = '';
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin as Writable));
  const updates: SessionNotification[] = [];
  connection.onNotification('session/update', (n: SessionNotification) => updates.push(n));
  if (process.env.SIDECAR_TRACE) {
    child.stdout.on('data', (d: Buffer) => {
      const t = d.toString();
      if (t.includes('cancel')) process.stderr.write(`<<< ${JSON.stringify(t.slice(0, 400))}\n`);
    });
  }
  connection.listen();
  const initializeResult = (await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: `file://${opts.cwd}`,
    workspaceFolders: [{ uri: `file://${opts.cwd}`, name: path.basename(opts.cwd) }],
    capabilities: { workspace: { applyEdit: true }, window: { showMessage: {} } },
    initializationOptions: { acp: { clientCapabilities: clientCapabilities() }, settings: opts.settings ?? {} },
  })) as Sidecar['initializeResult'];
  await connection.sendNotification('initialized', {});
  return {
    connection,
    updates,
    initializeResult,
    stderr: () => err,
    async stop() {
      try {
        await Promise.race([connection.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 3000))]);
        await connection.sendNotification('exit');
      } catch {
        /* already gone */
      }
      connection.dispose();
      await kill(child);
    },
  };
}

export function tempDir(prefix: string): string {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
}

/** Text of every content block in a session's tool_call_update(s) for one tool call. */
export function toolOutput(updates: SessionNotification[], toolCallId: string): string {
  const parts: string[] = [];
  for (const n of updates) {
    const u = n.update;
    if (u.toolCallId !== toolCallId || !Array.isArray(u.content)) continue;
    for (const c of u.content as { type: string; content?: { type: string; text?: string } }[]) {
      if (c.type === 'content' && c.content?.type === 'text') parts.push(c.content.text ?? '');
    }
  }
  return parts.join('\n');
}

export function lastStatus(updates: SessionNotification[], toolCallId: string): string | undefined {
  let s: string | undefined;
  for (const n of updates) if (n.update.toolCallId === toolCallId && typeof n.update.status === 'string') s = n.update.status;
  return s;
}
