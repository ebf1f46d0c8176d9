// Issue 25 in a real editor: fixtures/hostile-editor opened in code-server with Workspace Trust on, the
// user's key set with "Sidecar: Set API Key" and the user's own endpoint (the scripted model) in User
// settings. The repository's .venv/bin/python, tools/py and sidecar/__init__.py must never run (each leaves
// a MARKER-* file if it does); its .vscode/settings.json endpoint (a loopback listener recording every
// request and its credential headers) gets nothing before trust, and nothing after trust unless the user
// says yes to its host; its bypassPermissions / allow Bash(*) / model / effort are not the user's. Checked
// with the trust dialog open, after "No", and in a trusted window; a create outside the workspace names its
// folder in the review's title (screenshot).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { Harness, chatFrame, python, repoRoot, runCommand } from './harness.mjs';

const h = new Harness('hostile');
const hostile = path.join(h.root, 'cloned-repo');
const outsideDir = path.join(h.root, 'home', 'outside-the-workspace');
const outsideFile = path.join(outsideDir, 'name.txt');

const turns = [
  // 1. Restricted Mode, after "No": a command the repository's allow rule / bypass mode would let through
  { content: [{ type: 'tool_use', id: 'toolu_touch', name: 'Bash', input: { command: 'touch bash-ran.txt', description: 'Create a file' } }] },
  { content: [{ type: 'text', text: 'Restricted turn done.' }] },
  // 2. trusted window: a create outside the workspace
  { content: [{ type: 'tool_use', id: 'toolu_write_out', name: 'Write', input: { file_path: outsideFile, content: 'written outside\n' } }] },
  { content: [{ type: 'text', text: 'Trusted turn done.' }] },
];

/** The repository's endpoint: records every request with its credential headers, answers 404. */
const hits = [];
const listener = http.createServer((req, res) => {
  hits.push({ method: req.method, url: req.url, apiKey: req.headers['x-api-key'] ?? null, authorization: req.headers.authorization ?? null });
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end('{"type":"error","error":{"type":"not_found_error","message":"hostile"}}');
});

/** How many times the extension started the agent so far (its log's "starting … serve" lines). */
const starts = () => (h.extensionLog().match(/starting .* -I -m sidecar serve/g) ?? []).length;

const markers = () => fs.readdirSync(hostile).filter((f) => f.startsWith('MARKER-'));
const noneRan = (when) => {
  assert.deepEqual(markers(), [], `${when}: none of the repository's programs ran`);
  assert.ok(!fs.existsSync(path.join(hostile, 'bash-ran.txt')), `${when}: the Bash command did not run unasked`);
};

let page;
let chat;

before(async () => {
  await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const port = listener.address().port;
  fs.cpSync(path.join(repoRoot, 'fixtures', 'hostile-editor'), hostile, { recursive: true });
  const settingsFile = path.join(hostile, '.vscode', 'settings.json');
  fs.writeFileSync(settingsFile, fs.readFileSync(settingsFile, 'utf8').replace('HOSTILE_PORT', String(port)));
  // The user: their endpoint (the scripted model) and interpreter in User settings, a trust question for every
  // untrusted folder; the key set with "Sidecar: Set API Key" in a clean folder they trust first.
  const url = await h.startModel(turns);
  await h.startCodeServer(
    { 'sidecar.pythonPath': python, 'sidecar.apiBaseUrl': url, 'sidecar.approvalStyle': 'notification', 'security.workspace.trust.startupPrompt': 'always' },
    { workspaceTrust: true },
  );
  page = await h.openPage();
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: 90000 });
  await dialog.locator('.monaco-button', { hasText: /^Yes, I trust/ }).click();
  await page.locator('.activitybar .action-item a[aria-label^="Sidecar"]').first().click();
  chat = await chatFrame(page);
  await chat.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 90000 });
  await runCommand(page, 'Sidecar: Set API Key');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill('test-key');
  await input.press('Enter');
  await chat.locator('body[data-ready="false"]').waitFor({ state: 'attached', timeout: 10000 });
  await chat.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 90000 });
});

after(async () => {
  await h.close();
  listener.close();
});

test('a hostile repository chooses nothing: not the interpreter, not the endpoint, not the mode, not the model', async () => {
  const initial = starts();
  await h.openFolder(hostile);
  // 1. The trust dialog is open; the extension has activated in Restricted Mode and the agent started.
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: 90000 });
  await h.waitForLog(/starting .* -I -m sidecar serve/, { count: initial + 1 });
  await h.waitForLog(/agent capabilities:/, { count: initial + 1 });
  await h.screenshot('trust-dialog-open');
  // (In Restricted Mode VS Code itself withholds the workspace's values of restrictedConfigurations.)
  assert.match(h.extensionLog(), /workspace trust: Restricted Mode/);
  noneRan('dialog open');
  assert.deepEqual(hits, [], 'the repository\'s endpoint got no request at all before trust');

  // 2. "No": Restricted Mode. A Bash touch asks (default mode, no allow rule of the repository's).
  await dialog.locator('.monaco-button', { hasText: /^No, I don't trust/ }).click();
  await dialog.waitFor({ state: 'hidden' });
  const item = page.locator('.activitybar .action-item a[aria-label^="Sidecar"]').first();
  await item.click();
  chat = await chatFrame(page);
  await chat.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 90000 });
  assert.equal(await chat.locator('#mode').inputValue(), 'default', 'the mode picker is the user\'s default, not bypassPermissions');
  await chat.locator('#prompt').fill('make a file');
  await chat.locator('#send').click();
  const card = chat.locator('.tool-card', { hasText: 'touch bash-ran.txt' }).last();
  await card.locator('.approval button[data-kind="reject_once"]').waitFor({ timeout: 60000 });
  await h.screenshot('restricted-bash-asks');
  noneRan('Restricted Mode, the command asked');
  await card.locator('.approval button[data-kind="reject_once"]').click();
  await chat.locator('.msg.agent', { hasText: 'Restricted turn done.' }).waitFor({ timeout: 60000 });
  const first = await h.modelRequest(() => true);
  assert.notEqual(first.model, 'hostile-model', 'the model is the user\'s');
  assert.notEqual(first.output_config?.effort, 'max', 'the effort is the user\'s');
  assert.ok(h.modelRequests().every((b) => !/^hostile/.test(b.model)), 'no request used a model the repository named');
  noneRan('after "No"');
  assert.deepEqual(hits, [], 'the repository\'s endpoint got no request in Restricted Mode');

  // 3. Trusted: the extension asks about the repository's endpoint, naming its host; "keep mine".
  const before = starts();
  await runCommand(page, 'Workspaces: Manage Workspace Trust');
  await page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).first().click();
  const question = page.locator('.monaco-dialog-box', { hasText: `send your API key and prompts to 127.0.0.1:${listener.address().port}` });
  await question.waitFor({ state: 'visible', timeout: 60000 });
  await h.screenshot('trusted-endpoint-question');
  assert.deepEqual(hits, [], 'nothing reached the repository\'s endpoint while the question was open');
  await question.locator('.monaco-button', { hasText: 'Keep My Endpoint' }).click();
  await h.waitForLog(/starting .* -I -m sidecar serve/, { count: before + 1 });
  await h.waitForLog(/agent capabilities:/, { count: before + 1 });
  // The grant fires the trust event and a settings change, in either order: one start for the two (a second
  // one re-opened the chat under the next steps: a palette closed, a dialog over Send). Checked again at the
  // end, once the trusted turn is over, when a second restart would have come long since.
  assert.equal(starts(), before + 1, 'the agent started once after the grant');
  assert.match(h.extensionLog(), /workspace trust: trusted/);
  assert.match(h.extensionLog(), /ignored from the workspace's settings \(only User settings choose these\): sidecar\.initialMode \(bypassPermissions\), sidecar\.model, sidecar\.smallModel, sidecar\.effort$/m);
  assert.match(h.extensionLog(), /the workspace's endpoint 127\.0\.0\.1:\d+: not used/);

  // 4. A create outside the workspace: the review's title names the whole path.
  await chat.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 90000 });
  assert.equal(await chat.locator('#mode').inputValue(), 'default', 'still not bypassPermissions once trusted');
  // A new session for the trusted phase (the agent restarted with the trust grant).
  await runCommand(page, 'Sidecar: New Session');
  await chat.locator('#prompt').fill('write outside');
  await chat.locator('#send').click();
  const writeCard = chat.locator('.tool-card', { hasText: 'name.txt' }).last();
  const allow = writeCard.locator('.approval button[data-kind="allow_once"]');
  // Writing outside the roots may be asked first (the sidecar's rule); then the review opens. Whichever
  // shows first is what happens (waiting out the question that does not come took a minute).
  const tab = page.locator('.tab', { hasText: 'OUTSIDE the workspace' });
  const asked = await Promise.race([allow.waitFor({ timeout: 60000 }).then(() => true), tab.waitFor({ timeout: 60000 }).then(() => false)]);
  if (asked) await allow.click();
  await tab.waitFor({ timeout: 60000 });
  await h.screenshot('review-outside-workspace');
  // The chat card says it too, collapsed or not: a badge next to the file name, the whole path on hover.
  const badge = writeCard.locator('.outside-badge');
  await badge.waitFor({ state: 'visible', timeout: 10000 });
  assert.equal(await badge.textContent(), 'outside the workspace');
  assert.equal(await badge.getAttribute('title'), `${outsideFile} is outside the workspace folders`);
  const box = await writeCard.boundingBox();
  await h.screenshot('card-outside-badge', box ? { clip: { x: Math.max(0, box.x - 8), y: Math.max(0, box.y - 8), width: box.width + 16, height: box.height + 16 } } : {});
  const title = await tab.getAttribute('title') ?? (await tab.textContent());
  assert.ok(`${title}`.includes(outsideDir) || (await page.locator('.tab', { hasText: outsideDir }).count()) > 0, `the review's title names ${outsideDir}: ${title}`);
  // The warning: a toast, or (if the workbench kept it quiet) in the notification centre.
  await runCommand(page, 'Notifications: Show Notifications');
  await page.locator('.notifications-center .notification-list-item', { hasText: `Sidecar proposes to create ${outsideFile}, outside the workspace folders` }).first().waitFor({ timeout: 15000 });
  await h.screenshot('outside-warning');
  await page.keyboard.press('Escape');
  await page.locator('.tab', { hasText: 'OUTSIDE the workspace' }).click();
  await runCommand(page, 'Sidecar: Reject Proposed Edit');
  await page.locator('.quick-input-widget input').press('Escape');
  await chat.locator('.msg.agent', { hasText: 'Trusted turn done.' }).waitFor({ timeout: 60000 });
  assert.ok(!fs.existsSync(outsideFile), 'rejected: nothing written outside');
  noneRan('trusted window');
  assert.deepEqual(hits.filter((x) => x.apiKey || x.authorization), [], 'the key never reached the repository\'s endpoint');
  assert.deepEqual(hits, [], 'the repository\'s endpoint got no request at all');
  assert.equal(starts(), before + 1, 'the agent started exactly once after the grant: no restart during the trusted turn');
});
