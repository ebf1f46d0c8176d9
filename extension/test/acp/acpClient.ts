/**
 * Drives the real sidecar over ACP (`python -m sidecar serve --acp`, one JSON-RPC message per line on
 * stdio) with the official TypeScript ACP SDK (`@agentclientprotocol/sdk`), the way a third-party ACP
 * editor (Zed, JetBrains, Neovim plugins) does. The SDK validates every message against the ACP v1
 * schema, in both directions.
 *
 * The SDK 2.x replaced `ClientSideConnection` with its app API: `client()` registers the handlers of the
 * requests the agent sends (`fs/*`, `terminal/*`, `session/request_permission`), `connect(ndJsonStream)`
 * opens the connection, and `connection.agent.request(...)` calls the agent.
 *
 * The client here is a small editor: it keeps an in-memory buffer per path (`buffers`), serves
 * `fs/read_text_file` from it (from disk when no buffer holds the path, as an editor reads a file it
 * has not opened) and lands `fs/write_text_file` in it without saving, so a test can see that the
 * sidecar read the editor's unsaved text and that its edit went to the editor and not to disk.
 * Every request the sidecar sends is recorded in `clientRequests`; `handlers` adds or replaces
 * handlers (a terminal, a failing read) before the connection opens.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable, Writable } from 'node:stream';
import {
  type ClientApp,
  type ClientConnection,
  type ClientRequestHandlersByMethod,
  type InitializeResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
  client,
  ndJsonStream,
} from '@agentclientprotocol/sdk';
import { ScriptedModel, kill, python, repoRoot, tempDir } from '../protocol/sidecar';

export { ScriptedModel, python, repoRoot, tempDir };


export interface ClientRequest {
  method: string;
  params: Record<string, unknown>;
}

/** Answers `session/request_permission`; the default picks the `allow_once` option. */
export type PermissionPolicy = (params: RequestPermissionRequest) => RequestPermissionResponse | Promise<RequestPermissionResponse>;

export const allowOnce: PermissionPolicy = (params) => {
  const option = params.options.find((o) => o.kind === 'allow_once') ?? params.options[0];
  return option ? { outcome: { outcome: 'selected', optionId: option.optionId } } : { outcome: { outcome: 'cancelled' } };
};

export interface AcpSidecarOptions {
  /** The session's workspace (the sidecar's process cwd too). */
  cwd: string;
  /** A temp HOME; XDG dirs are made under it. */
  home: string;
  /** The scripted model server's base URL (`ScriptedModel.start`). */
  modelUrl: string;
  /** Offer `fs.readTextFile` + `fs.writeTextFile` (default true). */
  fs?: boolean;
  /** Offer `terminal` (default false: no terminal handlers here; add them with `handlers`). */
  terminal?: boolean;
  /** Extra `clientCapabilities` fields (merged over fs/terminal). */
  capabilities?: Record<string, unknown>;
  /** Settings in `initialize._meta.sidecar.settings`. */
  settings?: Record<string, unknown>;
  /** Extra environment for the sidecar process. */
  env?: Record<string, string>;
  /**
   * Handlers registered before the defaults (the SDK tries handlers in registration order, so these win):
   * terminal/*, a failing read … Record what they get with `sidecar.clientRequests` if the test needs it.
   */
  handlers?: (app: ClientApp, sidecar: AcpSidecar) => void;
}

export interface AcpSidecar {
  connection: ClientConnection;
  initializeResponse: InitializeResponse;
  /** Every `session/update` received, in order. */
  updates: SessionNotification[];
  /** Every JSON-RPC message this client sent to the sidecar, in order (requests, notifications, answers). */
  sent: Record<string, unknown>[];
  /** Every request the sidecar sent to this client (fs/*, terminal/*, permission …), in order. */
  clientRequests: ClientRequest[];
  /** The editor's open buffers: path → text (unsaved: disk is not written). */
  buffers: Map<string, string>;
  /** How `session/request_permission` is answered (default `allowOnce`). */
  permission: PermissionPolicy;
  stderr(): string;
  /** `session/new` in `cwd` (or the options' cwd); the session id. */
  newSession(cwd?: string, extra?: Record<string, unknown>): Promise<string>;
  /** `session/prompt` with one text block; the stop reason. `signal` aborts it with `$/cancel_request`. */
  prompt(sessionId: string, text: string, signal?: AbortSignal): Promise<string>;
  stop(): Promise<void>;
}


/** The lines `line` (1-based) … `line + limit - 1` of `text`, as ACP's `fs/read_text_file` defines them. */
export function sliceLines(text: string, line?: number | null, limit?: number | null): string {
  if (!line && !limit) return text;
  const lines = text.split(/(?<=\n)/);
  const start = Math.max(0, (line ?? 1) - 1);
  return lines.slice(start, limit ? start + limit : undefined).join('');
}

/** Spawns `python -m sidecar serve --acp` and connects the official SDK's client to it; `initialize` done. */
export async function startAcpSidecar(opts: AcpSidecarOptions): Promise<AcpSidecar> {
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ANTHROPIC_') && !k.startsWith('SIDECAR_'))),
    HOME: opts.home,
    XDG_DATA_HOME: path.join(opts.home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(opts.home, '.cache'),
    XDG_CONFIG_HOME: path.join(opts.home, '.config'),
    ANTHROPIC_BASE_URL: opts.modelUrl,
    ANTHROPIC_API_KEY: 'test-key',
    SIDECAR_MAX_BACKOFF: '0.2',
    NO_PROXY: '127.0.0.1,localhost',
    ...opts.env,
  };
  const child = spawn(python, ['-m', 'sidecar', 'serve', '--acp'], { cwd: opts.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const updates: SessionNotification[] = [];
  const clientRequests: ClientRequest[] = [];
  const buffers = new Map<string, string>();
  const record = (method: string, params: unknown) => clientRequests.push({ method, params: params as Record<string, unknown> });

  const app = client({ name: 'sidecar-acp-test-client' });
  // Filled once connected (the handlers below run only after that).
  const sidecar = { buffers, updates, clientRequests, permission: allowOnce } as AcpSidecar;
  // The SDK tries handlers in registration order: the test's own come first, so they replace the defaults.
  opts.handlers?.(app, sidecar);
  app.onNotification('session/update', ({ params }) => {
    updates.push(params);
  });
  app.onRequest('session/request_permission', async ({ params }) => {
    record('session/request_permission', params);
    return sidecar.permission(params);
  });
  const read: ClientRequestHandlersByMethod['fs/read_text_file'] = ({ params }) => {
    record('fs/read_text_file', params);
    const text = buffers.get(params.path) ?? fs.readFileSync(params.path, 'utf8');
    return { content: sliceLines(text, params.line, params.limit) };
  };
  const write: ClientRequestHandlersByMethod['fs/write_text_file'] = ({ params }) => {
    record('fs/write_text_file', params);
    buffers.set(params.path, params.content);
    return {};
  };
  app.onRequest('fs/read_text_file', read);
  app.onRequest('fs/write_text_file', write);

  // What this client writes passes through a recorder on its way to the sidecar's stdin.
  const sent: Record<string, unknown>[] = [];
  const decoder = new TextDecoder();
  let pending = '';
  const recorder = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (line.trim()) sent.push(JSON.parse(line) as Record<string, unknown>);
      }
      controller.enqueue(chunk);
    },
  });
  void recorder.readable.pipeTo(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>).catch(() => undefined);
  sidecar.sent = sent;
  const stream = ndJsonStream(recorder.writable, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>);
  const connection = app.connect(stream);
  const offerFs = opts.fs ?? true;
  let initializeResponse: InitializeResponse;
  try {
    initializeResponse = await connection.agent.request('initialize', {
      protocolVersion: 1,
      clientCapabilities: {
        fs: { readTextFile: offerFs, writeTextFile: offerFs },
        terminal: opts.terminal ?? false,
        ...opts.capabilities,
      },
      clientInfo: { name: 'sidecar-acp-test-client', version: '0.0.0' },
      ...(opts.settings ? { _meta: { sidecar: { settings: opts.settings } } } : {}),
    });
  } catch (e) {
    connection.close();
    await kill(child);
    throw new Error(`initialize failed: ${String(e)}\n${err}`);
  }
  Object.assign(sidecar, {
    connection,
    initializeResponse,
    stderr: () => err,
    async newSession(cwd?: string, extra?: Record<string, unknown>) {
      const r = await connection.agent.request('session/new', { cwd: cwd ?? opts.cwd, mcpServers: [], ...extra });
      return r.sessionId;
    },
    async prompt(sessionId: string, text: string, signal?: AbortSignal) {
      const r = await connection.agent.request(
        'session/prompt',
        { sessionId, prompt: [{ type: 'text', text }] },
        signal ? { cancellationSignal: signal } : undefined,
      );
      return r.stopReason;
    },
    async stop() {
      connection.close();
      await kill(child);
    },
  });
  return sidecar;
}

/** One recorded Messages API request (the scripted server's `--record` lines). */
export interface ModelRequest {
  path: string;
  body: { messages?: { role: string; content: unknown }[] } & Record<string, unknown>;
}

/** The requests the scripted model recorded so far (`ScriptedModel.start(turns, dir, { record: true })`). */
export function modelRequests(model: ScriptedModel): ModelRequest[] {
  if (!model.recordFile) throw new Error('start the ScriptedModel with { record: true }');
  if (!fs.existsSync(model.recordFile)) return [];
  return fs
    .readFileSync(model.recordFile, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as ModelRequest)
    .filter((r) => r.path === '/v1/messages');
}

export interface ToolResult {
  text: string;
  isError: boolean;
}

/**
 * The `tool_result` the model got for `toolUseId`: its text and `is_error`. The scripted server writes
 * its record every 0.2 s, so this waits (up to `timeoutMs`) for the request that carries it.
 */
export async function toolResult(model: ScriptedModel, toolUseId: string, timeoutMs = 10000): Promise<ToolResult> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    for (const req of modelRequests(model)) {
      for (const m of req.body.messages ?? []) {
        if (m.role !== 'user' || !Array.isArray(m.content)) continue;
        for (const block of m.content as { type: string; tool_use_id?: string; content?: unknown; is_error?: boolean }[]) {
          if (block.type !== 'tool_result' || block.tool_use_id !== toolUseId) continue;
          const content = block.content;
          const text = typeof content === 'string'
            ? content
            : Array.isArray(content)
              ? (content as { type: string; text?: string }[]).filter((c) => c.type === 'text').map((c) => c.text ?? '').join('')
              : '';
          return { text, isError: block.is_error === true };
        }
      }
    }
    if (performance.now() > deadline) throw new Error(`no tool_result for ${toolUseId} reached the model`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Polls `condition` every 50 ms until it holds; throws after `timeoutMs`. */
export async function waitFor(condition: () => boolean, timeoutMs = 15000, what = 'condition'): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A scripted model turn that calls one tool. */
export function toolUse(id: string, name: string, input: Record<string, unknown>): { content: unknown[] } {
  return { content: [{ type: 'tool_use', id, name, input }] };
}

/** A scripted model turn that says `text` and ends the turn. */
export function say(text: string): { content: unknown[] } {
  return { content: [{ type: 'text', text }] };
}
