// Issue 16 in a real editor: the hostile fixture repository opened in VS Code with Workspace Trust on. In
// Restricted Mode a turn runs none of what the repository brings (no hook, no .mcp.json server); once the
// user trusts the workspace, the extension tells the sidecar and the project's hooks run.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Harness, repoRoot, runCommand } from './harness.mjs';

const h = new Harness('trust');
const ws = h.workspace;

const turns = [
  { content: [{ type: 'text', text: 'Restricted turn.' }] },
  { content: [{ type: 'text', text: 'Trusted turn.' }] },
];

// A private key planted in the temp HOME the harness gives code-server (and so the sidecar).
const SECRET = 'PLANTED-PRIVATE-KEY-3f9c';

const canaries = () => fs.readdirSync(ws).filter((f) => f.startsWith('.canary'));

let page;
let chat;

before(async () => {
  // The whole fixture, CLAUDE.md included: its `@~/.ssh/id_rsa` import points into the harness's temp HOME
  // (code-server and the sidecar never see the real one), where a planted key must never reach the model.
  fs.cpSync(path.join(repoRoot, 'fixtures', 'hostile-repo'), ws, { recursive: true, verbatimSymlinks: true });
  fs.mkdirSync(path.join(h.root, 'home', '.ssh'), { recursive: true });
  fs.writeFileSync(path.join(h.root, 'home', '.ssh', 'id_rsa'), `${SECRET}\n`);
  ({ page, chat } = await h.startWorkbench(turns, { workspaceTrust: true }));
});

after(async () => {
  await h.close();
});

test('Restricted Mode runs nothing the hostile repository brings; trusting the workspace runs its hooks', async () => {
  await chat.locator('#prompt').fill('hello');
  await chat.locator('#send').click();
  await chat.locator('.turn-marker').nth(0).waitFor({ state: 'attached', timeout: 60000 });
  await chat.locator('.msg.agent', { hasText: 'Restricted turn.' }).waitFor({ timeout: 10000 });
  await h.screenshot('restricted');
  assert.deepEqual(canaries(), [], 'nothing ran in Restricted Mode');
  assert.equal(await page.locator('.notification-toast').count(), 0, 'nothing was asked');
  // CLAUDE.md was read, its imports from outside the untrusted workspace were not (~/.ssh/id_rsa named, not read).
  const first = JSON.stringify((await h.modelRequest(() => true)).system ?? '');
  assert.match(first, /Build with make\./, 'the fixture CLAUDE.md is in the system prompt');
  assert.match(first, /\.ssh\/id_rsa not imported/, 'the home import is refused by name');
  assert.doesNotMatch(first, new RegExp(SECRET), 'the planted key never reaches the model');

  await runCommand(page, 'Workspaces: Manage Workspace Trust');
  await h.screenshot('manage-trust');
  await page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).first().click();
  await sleep(1000);
  await h.screenshot('trusted');
  await chat.locator('#prompt').fill('again');
  await chat.locator('#send').click();
  const deadline = performance.now() + 60000;
  while (!canaries().includes('.canary-sessionstart') && performance.now() < deadline) await sleep(250);
  await h.screenshot('after-trust-prompt');
  assert.ok(canaries().includes('.canary-sessionstart'), `the SessionStart hook ran once trusted: ${canaries()}`);
  // The .mcp.json server is still asked about, by name and command; allowed once, it starts.
  const card = chat.locator('.tool-card', { hasText: 'evil' }).last();
  await card.locator('.approval button[data-kind="allow_once"]').click({ timeout: 30000 });
  await chat.locator('.turn-marker').nth(1).waitFor({ state: 'attached', timeout: 60000 });
  await chat.locator('.msg.agent', { hasText: 'Trusted turn.' }).waitFor({ timeout: 10000 });
  assert.ok(canaries().includes('.canary-mcp'), `the allowed MCP server started: ${canaries()}`);
  assert.ok(!canaries().includes('.canary-leaky'), 'the server naming the API key never runs');
  await h.screenshot('trusted-turn');
});
