// Issue 30 in a real editor: a checkpoint's Compare (VS Code's diff editor: the multi-file diff for a
// message, one diff for a tool call), Restore on a writing tool call's card, the cost of a turn and of the
// session, and a second conversation in an editor tab ("Open in New Tab") running beside the side bar's —
// both live at once, each with its own transcript and approvals — that comes back with its session after
// Reload Window. Screenshots in artifacts/e2e/compare-*.png (light, dark, a ~170 px side bar).
/* global document */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Harness, pickQuickInput, runCommand, stepper } from './harness.mjs';

const h = new Harness('compare');
const notes = path.join(h.workspace, 'notes.txt');
const made = path.join(h.workspace, 'new.txt');
const touched = path.join(h.workspace, 'from-tab.txt');
// Every request of the first turn reports this usage: 4 requests, 4 × $0.0165 at Sonnet's price.
const usage = { input_tokens: 1000, output_tokens: 200, cache_read_input_tokens: 10000, cache_creation_input_tokens: 2000 };

const turns = [
  // the side bar: "Edit the notes" (acceptEdits)
  { content: [{ type: 'tool_use', id: 'toolu_c_read', name: 'Read', input: { file_path: notes } }], usage },
  { content: [{ type: 'tool_use', id: 'toolu_c_edit', name: 'Edit', input: { file_path: notes, old_string: 'beta\n', new_string: 'BETA\n' } }], usage },
  { content: [{ type: 'tool_use', id: 'toolu_c_write', name: 'Write', input: { file_path: made, content: 'made by the agent\n' } }], usage },
  { content: [{ type: 'text', text: 'Edited the notes and made new.txt.' }], usage },
  // the tab: a writing Bash asks first (default mode), in the tab
  { content: [{ type: 'tool_use', id: 'toolu_t_bash', name: 'Bash', input: { command: 'touch from-tab.txt', description: 'Touch a file' } }] },
  { content: [{ type: 'text', text: 'Touched it from the tab.' }] },
  // the tab streams slowly while the side bar's turn runs and ends
  { content: [{ type: 'text', text: `Tab counting: ${Array.from({ length: 120 }, (_, i) => i + 1).join(' ')}` }], text_chunk: 4, chunk_delay: 0.08 },
  { content: [{ type: 'text', text: 'The side bar answers meanwhile.' }] },
];

let page;
let chat;
let tab;

before(async () => {
  fs.writeFileSync(notes, 'alpha\nbeta\ngamma\n');
  ({ page, chat } = await h.startWorkbench(turns, { settings: { 'sidecar.model': 'claude-sonnet-5-5' } }));
});

after(async () => {
  await h.close();
});

const step = stepper(h);

/** The chat webview's frame on `surface` ("view": the side bar's, "tab": an editor tab's). */
async function chatOn(surface, timeoutMs = 60000) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    for (const f of page.frames()) {
      try {
        if ((await f.locator(`body[data-surface="${surface}"] #transcript`).count()) > 0) return f;
      } catch {
        /* frame detached */
      }
    }
    await sleep(250);
  }
  throw new Error(`no chat webview on the ${surface}`);
}

async function sendAndWait(frame, text) {
  const n = await frame.locator('.turn-marker').count();
  await frame.locator('#prompt').fill(text);
  await frame.locator('#send').click();
  await frame.locator('.turn-marker').nth(n).waitFor({ state: 'attached', timeout: 60000 });
  return frame.locator('.turn-marker').nth(n).getAttribute('data-stop-reason');
}

/** The labels of the editor tabs. */
async function editorTabs() {
  return page.locator('.tabs-container .tab .label-name').allTextContents();
}

step('a turn that edits: its cost under it, the session total beside the context meter', async () => {
  await chat.locator('#mode').selectOption('acceptEdits');
  assert.equal(await sendAndWait(chat, 'Edit the notes'), 'end_turn');
  assert.equal(fs.readFileSync(notes, 'utf8'), 'alpha\nBETA\ngamma\n');
  assert.equal(fs.readFileSync(made, 'utf8'), 'made by the agent\n');
  const cost = chat.locator('.turn-cost').first();
  await cost.waitFor({ state: 'attached', timeout: 10000 });
  assert.equal(await cost.textContent(), '4.0k in · 800 out · 40.0k cache read · 8.0k cache write · $0.07');
  assert.equal(await chat.locator('#session-cost').textContent(), '$0.07');
  assert.match(await chat.locator('#session-cost').getAttribute('title'), /^This session so far: \$0\.07 \(52\.8k tokens\)$/);
  // the writing calls offer Compare and Restore; the Read does not
  await chat.locator('.tool-card[data-tool-call-id="toolu_c_write"] .restore-point .compare-tool').waitFor({ state: 'visible', timeout: 10000 });
  assert.equal(await chat.locator('.tool-card[data-tool-call-id="toolu_c_edit"][data-restore-point="true"]').count(), 1);
  assert.equal(await chat.locator('.tool-card[data-tool-call-id="toolu_c_read"] .restore-point:not([hidden])').count(), 0);
  await h.screenshot('turn-cost-and-restore-points');
});

step('Compare on the message: the multi-file diff of what "Restore code" would change, nothing written', async () => {
  const msg = chat.locator('.msg.user', { hasText: 'Edit the notes' });
  await msg.locator('.msg-actions-toggle').waitFor({ state: 'attached', timeout: 10000 });
  await msg.hover();
  await msg.locator('.msg-actions-toggle').click();
  const menu = chat.locator('.msg-menu[role="menu"]');
  await menu.locator('[data-action="compare"]').click();
  await menu.waitFor({ state: 'detached', timeout: 5000 });
  await page.locator('.tabs-container .tab', { hasText: 'Now ↔ before this message' }).waitFor({ timeout: 30000 });
  // both files, each with its change: notes.txt's BETA against beta
  const editor = page.locator('.editor-group-container .editor-instance').first();
  await editor.locator('text=notes.txt').first().waitFor({ timeout: 15000 });
  await editor.locator('text=new.txt').first().waitFor({ timeout: 15000 });
  await page.locator('.view-line', { hasText: 'BETA' }).first().waitFor({ timeout: 15000 });
  await h.screenshot('compare-message-multi-diff');
  assert.equal(fs.readFileSync(notes, 'utf8'), 'alpha\nBETA\ngamma\n', 'Compare writes nothing');
  assert.ok(fs.existsSync(made));
  await runCommand(page, 'View: Close All Editors');
});

step('Compare and Restore on the Write card: back to before that call; the Edit before it stays', async () => {
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_c_write"]');
  await card.locator('.compare-tool').click();
  const title = 'new.txt: now ↔ before that tool call (created by the agent: a restore deletes it)';
  await page.locator('.tabs-container .tab', { hasText: 'new.txt: now ↔ before that tool call' }).waitFor({ timeout: 30000 });
  assert.ok((await editorTabs()).some((t) => t === title), `the diff tab is named: ${JSON.stringify(await editorTabs())}`);
  await page.locator('.view-line', { hasText: 'made by the agent' }).first().waitFor({ timeout: 15000 });
  await h.screenshot('compare-tool-call-diff');
  await runCommand(page, 'View: Close All Editors');
  await card.locator('.restore-tool').click();
  const ask = card.locator('.restore-point-ask');
  await ask.waitFor({ state: 'visible', timeout: 5000 });
  await h.screenshot('restore-tool-call-ask');
  await card.locator('.confirm-restore-tool').click();
  await chat.locator('.notice', { hasText: 'Restored new.txt.' }).waitFor({ timeout: 15000 });
  assert.equal(fs.existsSync(made), false, 'the Write is undone');
  assert.equal(fs.readFileSync(notes, 'utf8'), 'alpha\nBETA\ngamma\n', 'the Edit before the Write stays');
  assert.equal(await chat.locator('.msg.agent', { hasText: 'Edited the notes' }).count(), 1, 'the conversation stays');
});

step('"Undo restore" on the tool call\'s line puts the file back; nothing is left to undo', async () => {
  const line = chat.locator('.notice', { hasText: 'Restored new.txt.' });
  await line.locator('.undo-restore').click();
  await chat.locator('.notice', { hasText: 'Undid the restore: new.txt is as before it.' }).waitFor({ timeout: 15000 });
  assert.equal(fs.readFileSync(made, 'utf8'), 'made by the agent\n');
  assert.equal(await chat.locator('.undo-restore').count(), 0);
});

step('Open in New Tab: a second conversation with its own approval, beside the side bar', async () => {
  await runCommand(page, 'Sidecar: Open in New Tab');
  tab = await chatOn('tab');
  await tab.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 60000 });
  assert.equal(await tab.locator('.msg').count(), 0, 'the tab starts a conversation of its own');
  await tab.locator('#prompt').fill('Touch a file from the tab');
  await tab.locator('#send').click();
  // the question is on the tab's card, not in the side bar's transcript
  const card = tab.locator('.tool-card[data-tool-call-id="toolu_t_bash"]');
  const allow = card.locator('.approval button', { hasText: /^Allow/ }).first();
  await allow.waitFor({ state: 'visible', timeout: 30000 });
  assert.equal(await chat.locator('.tool-card[data-tool-call-id="toolu_t_bash"]').count(), 0);
  await h.screenshot('tab-approval');
  await allow.click();
  await tab.locator('.turn-marker').first().waitFor({ state: 'attached', timeout: 60000 });
  assert.ok(fs.existsSync(touched));
  assert.equal(await chat.locator('.msg.user', { hasText: 'Touch a file from the tab' }).count(), 0);
  const tabSession = await tab.locator('body').getAttribute('data-session-id');
  const viewSession = await chat.locator('body').getAttribute('data-session-id');
  assert.ok(tabSession && viewSession && tabSession !== viewSession, `two sessions: ${tabSession} / ${viewSession}`);
});

step('both live at once: the side bar answers while the tab still streams', async () => {
  const tabMarkers = await tab.locator('.turn-marker').count();
  await tab.locator('#prompt').fill('Count in the tab');
  await tab.locator('#send').click();
  await tab.locator('.msg.agent', { hasText: 'Tab counting:' }).waitFor({ timeout: 30000 });
  assert.equal(await sendAndWait(chat, 'Answer in the side bar'), 'end_turn');
  await chat.locator('.msg.agent', { hasText: 'The side bar answers meanwhile.' }).waitFor({ timeout: 10000 });
  assert.equal(await tab.locator('.turn-marker').count(), tabMarkers, 'the tab was still streaming');
  await h.screenshot('both-live');
  await tab.locator('.turn-marker').nth(tabMarkers).waitFor({ state: 'attached', timeout: 60000 });
  assert.equal(await tab.locator('.msg.agent', { hasText: 'The side bar answers' }).count(), 0);
  assert.equal(await chat.locator('.msg.agent', { hasText: 'Tab counting' }).count(), 0);
});

step("one session, one chat: picking the side bar's session in the tab brings the side bar forward", async () => {
  const tabSession = await tab.locator('body').getAttribute('data-session-id');
  const viewSession = await chat.locator('body').getAttribute('data-session-id');
  await tab.locator(`#sessions option[value="${viewSession}"]`).waitFor({ state: 'attached', timeout: 15000 });
  await tab.locator('#sessions').selectOption(viewSession);
  await chat.locator('#prompt:focus').waitFor({ state: 'attached', timeout: 15000 });
  // the tab stays on its own conversation, its picker back on it
  await tab.waitForFunction((id) => document.querySelector('#sessions')?.value === id, tabSession, { timeout: 10000 });
  assert.equal(await tab.locator('body').getAttribute('data-session-id'), tabSession);
  assert.equal(await tab.locator('.msg.agent', { hasText: 'Edited the notes' }).count(), 0);
});

step('Reload Window: the tab comes back with its session, the side bar with its own', async () => {
  const tabSession = await tab.locator('body').getAttribute('data-session-id');
  const viewSession = await chat.locator('body').getAttribute('data-session-id');
  await sleep(500); // the webview's state (its session id) is kept
  await runCommand(page, 'Developer: Reload Window');
  await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
  tab = await chatOn('tab', 120000);
  await tab.locator(`body[data-session-id="${tabSession}"]`).waitFor({ state: 'attached', timeout: 120000 });
  await tab.locator('.msg.agent', { hasText: 'Touched it from the tab.' }).waitFor({ timeout: 60000 });
  await tab.locator('.msg.user', { hasText: 'Count in the tab' }).waitFor({ timeout: 30000 });
  chat = await chatOn('view', 120000);
  await chat.locator(`body[data-session-id="${viewSession}"]`).waitFor({ state: 'attached', timeout: 120000 });
  await chat.locator('.turn-cost').first().waitFor({ state: 'attached', timeout: 30000 });
  // the replayed turn's footer reads as it did live; the session total came back too
  assert.equal(await chat.locator('.turn-cost').first().textContent(), '4.0k in · 800 out · 40.0k cache read · 8.0k cache write · $0.07');
  assert.match(await chat.locator('#session-cost').textContent(), /^\$0\.\d\d$/);
  // The tool call's restore and its undo left lines; the replay draws them again, in order, with no button.
  await chat.locator('.notice', { hasText: 'Undid the restore: new.txt is as before it.' }).waitFor({ timeout: 30000 });
  const lines = (await chat.locator('.notice').allTextContents()).filter((t) => /^(Restored|Undid the restore)/.test(t));
  assert.deepEqual(lines, ['Restored new.txt.', 'Undid the restore: new.txt is as before it.']);
  assert.equal(await chat.locator('.undo-restore').count(), 0);
  await h.screenshot('after-reload-tab-and-view');
});

// Last: it changes the theme and the layout.
step('dark theme, ~170 px side bar: restore points and the cost line fit', async () => {
  await runCommand(page, 'Preferences: Color Theme');
  await pickQuickInput(page, 'Dark Modern', 'Dark Modern');
  await chat.locator('body.vscode-dark').waitFor({ state: 'attached', timeout: 15000 });
  const sidebar = page.locator('.part.sidebar');
  const box = await sidebar.boundingBox();
  await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + 170, box.y + box.height / 2, { steps: 10 });
  await page.mouse.up();
  await page.waitForTimeout(300);
  assert.ok((await sidebar.boundingBox()).width < 260);
  const overflow = await chat.locator('body').evaluate(() => document.body.scrollWidth - document.body.clientWidth);
  assert.ok(overflow <= 1, `nothing overflows the narrow panel (${overflow}px)`);
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_c_edit"]');
  await card.scrollIntoViewIfNeeded();
  await page.waitForTimeout(300);
  const b = await sidebar.boundingBox();
  await h.screenshot('dark-narrow-restore-points', { clip: { x: b.x, y: b.y, width: b.width, height: b.height } });
  await chat.locator('.turn-cost').first().scrollIntoViewIfNeeded();
  await page.waitForTimeout(300);
  await h.screenshot('dark-narrow-cost', { clip: { x: b.x, y: b.y, width: b.width, height: b.height } });
});
