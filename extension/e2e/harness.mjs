// The end-to-end harness: a scripted model server, code-server on 127.0.0.1 with the built .vsix
// installed, and headless Debian Chromium driven by playwright-core. Everything lives in one temp dir.
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const extensionDir = path.dirname(here);
export const repoRoot = path.dirname(extensionDir);
export const python = process.env.SIDECAR_PYTHON ?? path.join(repoRoot, '.venv', 'bin', 'python');
export const artifacts = path.join(repoRoot, 'artifacts', 'e2e');
const codeServer =
  process.env.CODE_SERVER ??
  // the same cache scripts/setup-e2e.sh installs into (SIDECAR_E2E_CACHE, else extension/.e2e-cache)
  path.join(process.env.SIDECAR_E2E_CACHE ?? path.join(extensionDir, '.e2e-cache'), 'code-server-4.100.3', 'node_modules', '.bin', 'code-server');
export const vsix = path.join(extensionDir, 'dist', 'sidecar-vscode.vsix');

const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
];

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Spawns a child whose output goes to a log file; returns it with a stop() that ends its process group. */
function spawnLogged(name, command, args, options) {
  const log = fs.openSync(path.join(options.logDir, `${name}.log`), 'a');
  const child = spawn(command, args, { ...options, detached: true, stdio: ['ignore', options.pipeStdout ? 'pipe' : log, log] });
  child.stopGroup = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      return;
    }
    const exited = once(child, 'exit');
    const t = sleep(5000).then(() => 'timeout');
    if ((await Promise.race([exited, t])) === 'timeout') {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  };
  return child;
}

async function waitForHttp(url, timeoutMs) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {
      /* not yet */
    }
    await sleep(250);
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

/** How long the workbench's start may go without any sign of progress before it is a failure. */
const STALL_MS = 90000;

/**
 * Waits for `ready` (a promise) as long as the start makes progress: bytes added to the logs in `logDir`
 * (code-server, the sidecar, the page) or requests made by `page`. A loaded machine slows the start and
 * the wait follows it; only a start with no progress for `STALL_MS` fails, naming `what`.
 */
async function whileProgressing(ready, { logDir, page, what }) {
  let requests = 0;
  const onRequest = () => {
    requests += 1;
  };
  page?.on('request', onRequest);
  const size = () => fs.readdirSync(logDir).reduce((n, f) => n + fs.statSync(path.join(logDir, f)).size, 0);
  let settled = false;
  const done = ready.finally(() => {
    settled = true;
  });
  try {
    let seen = `${size()}/${requests}`;
    let since = performance.now();
    while (!settled) {
      await Promise.race([done.catch(() => undefined), sleep(1000)]);
      if (settled) break;
      const now = `${size()}/${requests}`;
      if (now !== seen) {
        seen = now;
        since = performance.now();
      } else if (performance.now() - since > STALL_MS) {
        throw new Error(`${what}: no progress for ${STALL_MS / 1000} s (logs and page requests unchanged)`);
      }
    }
    return await done;
  } finally {
    page?.off('request', onRequest);
  }
}

export class Harness {
  /** `name` prefixes the screenshots and the kept logs (several suites share artifacts/e2e). */
  constructor(name = '') {
    this.name = name;
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), 'sidecar-e2e-'));
    this.workspace = path.join(this.root, 'workspace');
    this.logDir = path.join(this.root, 'logs');
    this.children = [];
    this.shot = 0;
    fs.mkdirSync(this.workspace, { recursive: true });
    fs.mkdirSync(this.logDir, { recursive: true });
    fs.mkdirSync(artifacts, { recursive: true });
  }

  /** Starts the scripted model server on a script (a list of turns) and returns its base URL. */
  async startModel(turns) {
    const script = path.join(this.root, 'turns.json');
    fs.writeFileSync(script, JSON.stringify(turns, null, 2));
    this.requestsFile = path.join(this.root, 'requests.jsonl');
    const child = spawnLogged('model', python, ['-m', 'sidecar.testing.scripted_server', '--script', script, '--log', '--record', this.requestsFile], {
      cwd: repoRoot,
      logDir: this.logDir,
      pipeStdout: true,
    });
    this.children.push(child);
    let buf = '';
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the scripted model server printed no URL')), 20000);
      child.stdout.on('data', (d) => {
        buf += d.toString();
        const nl = buf.indexOf('\n');
        if (nl >= 0) {
          clearTimeout(timer);
          resolve(buf.slice(0, nl).trim());
        }
      });
      child.on('exit', (code) => reject(new Error(`the scripted model server exited (${code})`)));
    });
    child.stdout.resume();
    this.modelUrl = url;
    return url;
  }

  /** The Messages API requests the scripted model received so far (bodies, in arrival order). */
  modelRequests() {
    if (!fs.existsSync(this.requestsFile)) return [];
    return fs
      .readFileSync(this.requestsFile, 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l))
      .filter((r) => r.path === '/v1/messages')
      .map((r) => r.body);
  }

  /** Waits until a recorded request satisfies `pred`; returns it. */
  async modelRequest(pred, timeoutMs = 15000) {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const hit = this.modelRequests().find(pred);
      if (hit) return hit;
      if (performance.now() > deadline) throw new Error('no recorded model request matched');
      await sleep(200);
    }
  }

  /**
   * The environment of code-server (and so of the extension host and the sidecar it starts): HOME and the
   * XDG dirs in the temp dir, so nothing reads or writes the real user's files (`~/.ssh`, `~/.claude`,
   * sessions, trust grants), and no extension gallery (`EXTENSIONS_GALLERY={}`: code-server's default is
   * open-vsx.org; without a service URL the workbench makes no marketplace request).
   */
  env() {
    const home = path.join(this.root, 'home');
    fs.mkdirSync(home, { recursive: true });
    const dropped = this.dropEnvPrefixes ?? [];
    const inherited = Object.entries(process.env).filter(
      ([k]) => k !== 'VSCODE_IPC_HOOK_CLI' && !k.startsWith('ANTHROPIC_') && !k.startsWith('SIDECAR_') && !dropped.some((p) => k.startsWith(p)),
    );
    return {
      ...Object.fromEntries(inherited),
      // a suite's own additions (the install suite: pip's index, the endpoint in the environment)
      ...(this.extraEnv ?? {}),
      HOME: home,
      XDG_CONFIG_HOME: path.join(this.root, 'xdg-config'),
      XDG_DATA_HOME: path.join(this.root, 'xdg-data'),
      XDG_CACHE_HOME: path.join(this.root, 'xdg-cache'),
      EXTENSIONS_GALLERY: '{}',
    };
  }

  /**
   * What every suite starts with: the scripted model on `turns`, code-server with the sidecar's settings
   * (`sidecar.pythonPath`, `sidecar.apiBaseUrl`, approvals as notifications; `settings` on top), the browser
   * on the workspace and the chat webview ready. With `apiKey` the key is set through "Sidecar: Set API
   * Key" first, and the agent has restarted with it. Sets and returns `{page, chat}`.
   */
  async startWorkbench(turns, { settings = {}, workspaceTrust = false, apiKey = true } = {}) {
    assert.ok(fs.existsSync(python), `no Python at ${python}: run "uv sync" in ${repoRoot}`);
    const url = await this.startModel(turns);
    await this.startCodeServer(
      { 'sidecar.pythonPath': python, 'sidecar.apiBaseUrl': url, 'sidecar.approvalStyle': 'notification', ...settings },
      { workspaceTrust },
    );
    this.page = await this.openBrowser();
    this.chat = await chatFrame(this.page);
    await this.progressing(this.chat.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 0 }),
      'the chat view getting ready');
    if (apiKey) {
      // The key goes into SecretStorage through the command; the agent restarts with it in its env.
      await runCommand(this.page, 'Sidecar: Set API Key');
      const input = this.page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible' });
      await input.fill('test-key');
      await input.press('Enter');
      await this.chat.locator('body[data-ready="false"]').waitFor({ state: 'attached', timeout: 10000 });
      await this.progressing(this.chat.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 0 }),
        'the agent restarting with the key');
    }
    return { page: this.page, chat: this.chat };
  }

  /** `ready`, awaited while the workbench shows progress (`whileProgressing`): no fixed budget. */
  progressing(ready, what) {
    return whileProgressing(ready, { logDir: this.logDir, page: this.page, what });
  }

  /** User settings, the .vsix installed offline, code-server serving on loopback. */
  async startCodeServer(settings = {}, { workspaceTrust = false, vsix: vsixFile = vsix } = {}) {
    const userData = path.join(this.root, 'user-data');
    const extensions = path.join(this.root, 'extensions');
    const userDir = path.join(userData, 'User');
    fs.mkdirSync(userDir, { recursive: true });
    fs.writeFileSync(
      path.join(userDir, 'settings.json'),
      JSON.stringify(
        {
          'security.workspace.trust.enabled': workspaceTrust,
          ...(workspaceTrust ? { 'security.workspace.trust.startupPrompt': 'never' } : {}),
          'workbench.startupEditor': 'none',
          'workbench.tips.enabled': false,
          'workbench.enableExperiments': false,
          'telemetry.telemetryLevel': 'off',
          'extensions.autoUpdate': false,
          'extensions.autoCheckUpdates': false,
          'update.mode': 'none',
          'editor.codeLens': true,
          'diffEditor.codeLens': true,
          'diffEditor.renderSideBySide': true,
          'window.dialogStyle': 'custom',
          'files.autoSave': 'off',
          'chat.commandCenter.enabled': false,
          ...settings,
        },
        null,
        2,
      ),
    );
    const env = this.env();
    this.installExtension(vsixFile);
    this.port = await freePort();
    const args = [
      '--bind-addr', `127.0.0.1:${this.port}`,
      '--auth', 'none',
      '--disable-telemetry',
      '--disable-update-check',
      ...(workspaceTrust ? [] : ['--disable-workspace-trust']),
      '--disable-getting-started-override',
      '--user-data-dir', userData,
      '--extensions-dir', extensions,
      this.workspace,
    ];
    const child = spawnLogged('code-server', codeServer, args, { cwd: this.workspace, env, logDir: this.logDir });
    this.children.push(child);
    await this.progressing(waitForHttp(`http://127.0.0.1:${this.port}/healthz`, Infinity), 'code-server starting');
  }

  /** Installs a .vsix into this code-server's extensions folder (offline, as `code-server --install-extension`). */
  installExtension(vsixFile = vsix) {
    const log = path.join(this.logDir, 'install.log');
    execFileSync(codeServer, ['--user-data-dir', path.join(this.root, 'user-data'), '--extensions-dir', path.join(this.root, 'extensions'), '--install-extension', vsixFile, '--force'], {
      env: this.env(),
      stdio: ['ignore', fs.openSync(log, 'a'), fs.openSync(log, 'a')],
    });
  }

  /** The browser on `folder` (the workspace by default), the workbench loaded; nothing clicked yet. */
  async openPage(folder = this.workspace) {
    this.browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS });
    this.context = await this.browser.newContext({ viewport: { width: 1600, height: 1000 } });
    this.page = await this.context.newPage();
    this.page.on('pageerror', (e) => fs.appendFileSync(path.join(this.logDir, 'page.log'), `pageerror: ${e}\n`));
    await this.page.goto(`http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(folder)}`);
    await this.progressing(this.page.waitForSelector('.monaco-workbench', { timeout: 0 }), 'the workbench loading');
    return this.page;
  }

  async openBrowser() {
    await this.openPage();
    // The extension is activated once its activity bar entry is there; open the chat view with it.
    const item = this.page.locator('.activitybar .action-item a[aria-label^="Sidecar"]').first();
    await this.progressing(item.waitFor({ state: 'visible', timeout: 0 }), 'the Sidecar activity bar entry');
    await item.click();
    return this.page;
  }

  /** What the extension wrote to its "Sidecar" log channel so far (every window's log file, concatenated). */
  extensionLog() {
    const logs = path.join(this.root, 'user-data', 'logs');
    const out = [];
    const walk = (dir) => {
      let entries = [];
      try {
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/Sidecar\.log$/.test(e.name)) out.push(fs.readFileSync(p, 'utf8'));
      }
    };
    walk(logs);
    return out.join('\n');
  }

  /** Waits until the extension's log has `count` lines matching `re` (progress, not a time budget). */
  async waitForLog(re, { count = 1, timeoutMs = 120000 } = {}) {
    const deadline = performance.now() + timeoutMs;
    const g = new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`);
    for (;;) {
      const n = (this.extensionLog().match(g) ?? []).length;
      if (n >= count) return n;
      if (performance.now() > deadline) throw new Error(`the extension log never had ${count}× ${re}:\n${this.extensionLog().slice(-3000)}`);
      await sleep(250);
    }
  }

  /** Opens another folder in the same browser page (a new window state: its own trust, its own workspace state). */
  async openFolder(folder) {
    await this.page.goto(`http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(folder)}`);
    await this.page.waitForSelector('.monaco-workbench', { timeout: 90000 });
  }

  /** A screenshot of the page (or of `clip`, a rectangle on it) into artifacts/e2e. */
  async screenshot(name, { clip } = {}) {
    this.shot += 1;
    const file = path.join(artifacts, `${this.name ? `${this.name}-` : ''}${String(this.shot).padStart(2, '0')}-${name}.png`);
    await this.page.screenshot({ path: file, ...(clip ? { clip } : {}) });
    return file;
  }

  /**
   * Stops code-server's extension host (SIGSTOP) until the returned function resumes it: the late messages
   * between the workbench and the extension of a loaded machine, on purpose. `close` resumes it too.
   */
  pauseExtensionHost() {
    const server = this.children.find((c) => c.spawnargs.some((a) => a.includes('code-server')));
    const rows = execFileSync('ps', ['-eo', 'pid=,pgid=,args=']).toString().split('\n').map((l) => l.trim().split(/\s+/));
    const pids = rows.filter(([, pgid, ...args]) => pgid === String(server?.pid) && args.includes('--type=extensionHost')).map(([pid]) => Number(pid));
    assert.ok(pids.length > 0, 'no extension host process in code-server\'s process group');
    this.paused = pids;
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    return () => this.resumeExtensionHost();
  }

  resumeExtensionHost() {
    for (const pid of this.paused ?? []) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        /* gone */
      }
    }
    this.paused = [];
  }

  async close() {
    this.resumeExtensionHost();
    if (this.browser) await this.browser.close().catch(() => undefined);
    for (const c of this.children.reverse()) await c.stopGroup();
    // Keep the logs with the screenshots.
    const logsOut = path.join(artifacts, this.name ? `logs-${this.name}` : 'logs');
    fs.mkdirSync(logsOut, { recursive: true });
    for (const f of fs.readdirSync(this.logDir)) fs.copyFileSync(path.join(this.logDir, f), path.join(logsOut, f));
    const extLogs = path.join(this.root, 'user-data', 'logs');
    if (fs.existsSync(extLogs)) fs.cpSync(extLogs, path.join(logsOut, 'code-server-logs'), { recursive: true });
    if (!process.env.SIDECAR_E2E_KEEP) fs.rmSync(this.root, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------ workbench helpers

/**
 * Types `text` into the open quick input and clicks the row whose label is exactly `label`. Enter would take
 * the best fuzzy match, which is not always the row asked for ("Preferences: Color Theme" ranks "Browse Color
 * Themes in Marketplace" first, and that one goes to the network).
 */
export async function pickQuickInput(page, text, label) {
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(text);
  const exact = new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  const row = page
    .locator('.quick-input-list .monaco-list-row')
    .filter({ has: page.locator('.label-name', { hasText: exact }) })
    .first();
  await row.waitFor({ state: 'visible', timeout: 15000 });
  await row.click();
  await page.locator('.quick-input-list .monaco-list-row', { has: page.locator('.label-name', { hasText: exact }) }).first().waitFor({ state: 'hidden', timeout: 15000 }).catch(() => undefined);
}

/** Runs a command from the command palette by its exact label. */
export async function runCommand(page, label) {
  // F1 is sometimes swallowed right after a click moved focus (a diff editor, a notification centre closing):
  // the palette's input is the readiness signal; press again until it shows.
  const input = page.locator('.quick-input-widget input');
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('F1');
    const shown = await input.waitFor({ state: 'visible', timeout: 5000 }).then(() => true, () => false);
    if (shown) break;
    if (attempt >= 4) throw new Error(`the command palette did not open for "${label}"`);
    await page.keyboard.press('Escape');
  }
  await pickQuickInput(page, `>${label}`, label);
}

/** The chat webview's inner frame (VS Code nests the extension's document in iframe#active-frame). */
export async function chatFrame(page) {
  const deadline = performance.now() + 60000;
  while (performance.now() < deadline) {
    for (const f of page.frames()) {
      if (f.name() === 'active-frame' || f.url().includes('fake.html')) {
        try {
          if ((await f.locator('#transcript').count()) > 0) return f;
        } catch {
          /* frame detached */
        }
      }
    }
    await sleep(250);
  }
  throw new Error('the chat webview did not appear');
}

/**
 * A suite's steps, in order, each a `test`: once one fails (with a screenshot named "failed"), the later
 * ones are reported as not run instead of failing on the state it left.
 */
export function stepper(h) {
  let failedStep = null;
  return (name, fn) =>
    test(name, async () => {
      if (failedStep) throw new Error(`not run: the step "${failedStep}" failed`);
      try {
        await fn();
      } catch (e) {
        failedStep = name;
        await h.screenshot('failed').catch(() => undefined);
        throw e;
      }
    });
}
