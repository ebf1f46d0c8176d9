// Issue 30 in a real editor: the composer's context mentions. `@problems` (the editor's diagnostics),
// `@terminal` (a terminal's last command through shell integration), `@git` (the working tree's diff, run by
// the sidecar) and `@url` (fetched by the sidecar through WebFetch: a loopback page a rule allows, a private
// address refused) each appear in the @ list with a description, become one chip or stay text, and reach the
// scripted model as the exact text the sidecar composes. Loopback only.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { chatFrame, Harness, runCommand } from './harness.mjs';

const h = new Harness('context');
const ws = h.workspace;
const PAGE = 'Release notes: version 2.1 ships on Friday.';
const turns = [{ content: [{ type: 'text', text: 'I have the problems, the terminal, the diff and the page.' }] }];

let page;
let chat;
let server;
let pageUrl;

function git(...args) {
  execFileSync('git', args, {
    cwd: ws,
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' },
  });
}

/** Waits until `check()` is true, polling; `what` names it in the error. */
async function until(check, what, timeoutMs = 60000) {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

before(async () => {
  server = http.createServer((req, res) => {
    res.writeHead(req.url === '/notes' ? 200 : 404, { 'Content-Type': 'text/plain' });
    res.end(req.url === '/notes' ? PAGE : 'not here');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  pageUrl = `http://127.0.0.1:${server.address().port}/notes`;
  // The user's own rule lets WebFetch reach this loopback host (as it would for the WebFetch tool).
  fs.mkdirSync(path.join(h.root, 'home', '.claude'), { recursive: true });
  fs.writeFileSync(path.join(h.root, 'home', '.claude', 'settings.json'), JSON.stringify({ permissions: { allow: ['WebFetch(domain:127.0.0.1)'] } }));
  fs.writeFileSync(path.join(ws, 'notes.txt'), 'alpha\nbeta\n');
  fs.writeFileSync(path.join(ws, 'bad.json'), '{\n  "name": "demo"\n  "version": 2\n}\n');
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'first');
  fs.writeFileSync(path.join(ws, 'notes.txt'), 'alpha\nbeta changed by the user\n');
  ({ page, chat } = await h.startWorkbench(turns, { settings: { 'terminal.integrated.defaultProfile.linux': 'bash' } }));
});

after(async () => {
  server?.close();
  await h.close();
});

test('@problems, @terminal, @git and @url reach the model once each, as the sidecar composes them', async () => {
  // The editor knows a problem: bad.json open, its missing comma underlined.
  await page.keyboard.press('Control+P');
  const quick = page.locator('.quick-input-widget input');
  await quick.waitFor({ state: 'visible' });
  await quick.fill('bad.json');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'bad.json' }).first().click();
  await page.locator('.editor-instance .squiggly-error').first().waitFor({ state: 'attached', timeout: 60000 });

  // A command in a terminal with shell integration (bash); it writes a file when it ran.
  await runCommand(page, 'Terminal: Create New Terminal');
  await page.locator('.terminal-wrapper.active .xterm').first().waitFor({ state: 'visible', timeout: 30000 });
  // The output comes a moment after the command starts: a command that prints at once can finish before the
  // extension host's read() of it begins (docs/extension.md "Mentions", left out).
  await page.keyboard.type('sleep 1; echo ctx-$((6*7)) | tee ran.txt');
  await page.keyboard.press('Enter');
  await until(() => fs.existsSync(path.join(ws, 'ran.txt')) && fs.readFileSync(path.join(ws, 'ran.txt'), 'utf8').includes('ctx-42'), 'the terminal command');
  await h.screenshot('terminal-ran');

  // The @ list offers every mention with its description.
  const box = chat.locator('#prompt');
  await box.click();
  await box.pressSequentially('@');
  for (const name of ['@problems', '@terminal', '@git', '@url']) {
    await chat.locator('#menu .menu-item', { hasText: name }).first().waitFor({ state: 'visible', timeout: 15000 });
  }
  const details = await chat.locator('#menu .menu-item').evaluateAll((rows) => rows.slice(0, 4).map((r) => r.textContent));
  assert.match(details[0], /^@problemserrors and warnings in the workspace \(at most 50, errors first\)$/);
  assert.match(details[1], /^@terminalthe active terminal's last 5 commands/);
  assert.match(details[2], /^@gitworking tree changes \(git diff HEAD\)/);
  assert.match(details[3], /^@urla web page the agent fetches/);
  await h.screenshot('at-list');

  // Picked, each becomes a chip and leaves the text.
  await box.pressSequentially('prob');
  await chat.locator('#menu .menu-item.active', { hasText: '@problems' }).waitFor({ state: 'visible', timeout: 15000 });
  await box.press('Enter');
  await chat.locator('#context .chip.problems', { hasText: /^Problems \(1\)/ }).waitFor({ timeout: 15000 });
  await box.pressSequentially('@ter');
  await chat.locator('#menu .menu-item.active', { hasText: '@terminal' }).waitFor({ state: 'visible', timeout: 15000 });
  await box.press('Enter');
  const terminalChip = chat.locator('#context .chip.terminal').first();
  await terminalChip.waitFor({ timeout: 15000 });
  assert.ok(!(await terminalChip.evaluate((e) => e.classList.contains('chip-error'))), `the terminal chip is an error: ${await terminalChip.textContent()}`);
  await box.pressSequentially('@gi');
  await chat.locator('#menu .menu-item.active', { hasText: '@git' }).waitFor({ state: 'visible', timeout: 15000 });
  await box.press('Enter');
  await chat.locator('#context .chip.git', { hasText: 'Git changes' }).waitFor({ timeout: 15000 });
  assert.equal(await box.inputValue(), '', 'the picked mentions left the text');
  const refused = 'http://10.1.2.3/admin';
  await box.fill(`What is wrong? @url ${pageUrl} and @url ${refused}`);
  await h.screenshot('chips');
  await chat.locator('#send').click();

  await chat.locator('.msg.agent', { hasText: 'I have the problems' }).waitFor({ timeout: 90000 });
  const request = await h.modelRequest((b) => JSON.stringify(b.messages ?? []).includes('<context source=\\"problems\\">'));
  const user = request.messages.filter((m) => m.role === 'user').at(-1);
  const texts = user.content.filter((b) => b.type === 'text' && !b.text.startsWith('<system-reminder>')).map((b) => b.text);
  assert.equal(texts.length, 6, JSON.stringify(texts, null, 1));
  assert.equal(texts[0], `What is wrong? @url ${pageUrl} and @url ${refused}`);
  assert.match(texts[1], /^<context source="problems">\n1 problem in the workspace \(1 error, 0 warnings\):\nbad\.json:3:3 error \(json[^)]*\): Expected comma\n<\/context>$/);
  assert.match(texts[2], /^<context source="terminal">\nTerminal "bash": the last command, oldest first\n\n\$ sleep 1; echo ctx-\$\(\(6\*7\)\) \| tee ran\.txt\nctx-42\n\(exit code 0\)\n<\/context>$/);
  assert.ok(texts[3].startsWith(`<git-diff cwd="${ws}" command="git diff HEAD">\n notes.txt | 2 +-\n`), texts[3]);
  assert.ok(texts[3].includes('-beta\n+beta changed by the user\n'), texts[3]);
  assert.ok(texts[4].startsWith(`<fetched-url url="${pageUrl}">\n${pageUrl} (200, text/plain`), texts[4]);
  assert.ok(texts[4].endsWith(`\n\n${PAGE}\n</fetched-url>`), texts[4]);
  assert.ok(texts[5].startsWith(`<fetched-url url="${refused}" error="true">\nThe user attached this URL, but it was not fetched: Refused to fetch https://10.1.2.3/admin: 10.1.2.3 is a private address.`), texts[5]);

  // The chat shows the fetches and the diff as cards; the refusal says why.
  const failed = chat.locator('.tool-card[data-status="failed"]', { hasText: '10.1.2.3' });
  await failed.waitFor({ timeout: 15000 });
  await chat.locator('.tool-card[data-status="completed"]', { hasText: '127.0.0.1' }).waitFor({ timeout: 15000 });
  await chat.locator('.tool-card[data-status="completed"]', { hasText: 'git diff HEAD' }).waitFor({ timeout: 15000 });
  await failed.locator('summary').first().click();
  const reason = failed.locator('.output pre.text', { hasText: 'private address' }).first();
  await reason.waitFor({ timeout: 15000 });
  // The whole reason is readable in the narrow panel (wrapped, not cut at the card's edge).
  assert.ok(await reason.evaluate((e) => e.scrollWidth <= e.clientWidth + 1), 'the refusal wraps');
  // The sent message shows the chips once and the URLs once (in its text).
  const sent = chat.locator('.msg.user').last();
  assert.deepEqual(await sent.locator('.chip').allTextContents(), ['Problems (1)', 'Terminal (bash)', 'Git changes']);
  await h.screenshot('sent');
});

test('@terminal with no terminal open is an error chip, and nothing is sent for it', async () => {
  await runCommand(page, 'Terminal: Kill All Terminals');
  await until(async () => (await page.locator('.terminal-wrapper .xterm').count()) === 0, 'the terminals to close', 30000);
  const box = chat.locator('#prompt');
  await box.click();
  await box.pressSequentially('@ter');
  await chat.locator('#menu .menu-item.active', { hasText: '@terminal' }).waitFor({ state: 'visible', timeout: 15000 });
  await box.press('Enter');
  const chip = chat.locator('#context .chip.terminal.chip-error');
  await chip.waitFor({ timeout: 15000 });
  assert.match(await chip.textContent(), /^Terminal: no terminal is open; run the command in a terminal first\./);
  await h.screenshot('terminal-error-chip');
  const before = h.modelRequests().length;
  await chat.locator('#send').click();
  // Only an error chip and no text: the prompt is not sent.
  assert.equal(await chip.count(), 1, 'the error chip stays, nothing was sent');
  assert.equal(h.modelRequests().length, before);
});

test('after Reload Window the replayed message shows the same chips and the URLs once', async () => {
  const sessionId = await chat.locator('body').getAttribute('data-session-id');
  assert.ok(sessionId);
  await runCommand(page, 'Developer: Reload Window');
  await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
  chat = await chatFrame(page);
  await chat.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 120000 });
  await chat.locator(`body[data-session-id="${sessionId}"]`).waitFor({ state: 'attached', timeout: 30000 });
  const sent = chat.locator('.msg.user').first();
  await sent.waitFor({ timeout: 30000 });
  await chat.locator('.tool-card[data-status="failed"]', { hasText: '10.1.2.3' }).waitFor({ timeout: 30000 });
  assert.deepEqual(await sent.locator('.chip').allTextContents(), ['Problems (1)', 'Terminal (bash)', 'Git changes']);
  assert.match(await sent.locator('.body').textContent(), /^What is wrong\? @url http:\/\/127\.0\.0\.1:\d+\/notes and @url http:\/\/10\.1\.2\.3\/admin$/);
  await h.screenshot('replayed');
});
