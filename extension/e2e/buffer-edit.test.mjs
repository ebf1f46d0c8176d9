// Issue 19 in a real editor: an Edit to a file with unsaved changes lands in the editor's buffer (applied by
// VS Code through workspace/applyEdit), the file on disk stays as it was until the user saves, and Undo in
// the editor takes the agent's edit back while the user's own unsaved change stays.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Harness, runCommand } from './harness.mjs';

const h = new Harness('buffer-edit');
const draft = path.join(h.workspace, 'draft.txt');
const original = Array.from({ length: 30 }, (_, i) => `entry ${i + 1}`).join('\n') + '\n';

const turns = [
  { content: [{ type: 'tool_use', id: 'toolu_b_read', name: 'Read', input: { file_path: draft } }] },
  { content: [{ type: 'tool_use', id: 'toolu_b_edit', name: 'Edit', input: { file_path: draft, old_string: 'entry 25\n', new_string: 'entry 25 (agent edit)\n' } }] },
  { content: [{ type: 'text', text: 'Edited the open buffer.' }] },
];

let page;
let chat;

before(async () => {
  fs.writeFileSync(draft, original);
  ({ page, chat } = await h.startWorkbench(turns));
});

after(async () => {
  await h.close();
});

/** The text of the active editor as the editor shows it (every line is on screen: 30 short lines). */
async function editorLines() {
  const lines = page.locator('.editor-instance .view-lines .view-line');
  const items = await lines.evaluateAll((els) => els.map((e) => ({ top: parseFloat(e.style.top), text: e.textContent.replace(/\u00a0/g, ' ') })));
  return items.sort((a, b) => a.top - b.top).map((i) => i.text);
}

async function waitEditor(pred, what, timeoutMs = 30000) {
  const deadline = performance.now() + timeoutMs;
  let lines = [];
  while (performance.now() < deadline) {
    lines = await editorLines();
    if (pred(lines)) return lines;
    await sleep(200);
  }
  throw new Error(`${what}; the editor shows: ${JSON.stringify(lines)}`);
}

test('an Edit to a file with unsaved changes lands in the buffer, disk untouched, and Undo reverts it', async () => {
  // The user opens draft.txt and types on its first line without saving.
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill('draft.txt');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'draft.txt' }).first().click();
  await page.locator('.tab.active', { hasText: 'draft.txt' }).waitFor({ timeout: 15000 });
  await waitEditor((l) => l[0] === 'entry 1', 'draft.txt did not open');
  await page.locator('.editor-instance .view-lines').first().click();
  await page.keyboard.press('Control+Home');
  await page.keyboard.type('UNSAVED ');
  await page.locator('.tab.active.dirty', { hasText: 'draft.txt' }).waitFor({ timeout: 10000 });
  await waitEditor((l) => l[0] === 'UNSAVED entry 1', 'the typed change is not in the buffer');
  await sleep(500); // the didChange reaches the sidecar

  await chat.locator('#prompt').fill('Mark entry 25 in draft.txt');
  await chat.locator('#send').click();
  const accept = page.locator('.codelens-decoration a', { hasText: 'Accept hunk 1/1' }).first();
  await accept.waitFor({ state: 'visible', timeout: 30000 }).catch(async (e) => {
    await h.screenshot('buffer-edit-no-lens');
    throw e;
  });
  await h.screenshot('buffer-edit-review');
  assert.equal(fs.readFileSync(draft, 'utf8'), original, 'nothing changes before the review answers');
  await accept.click();
  await chat.locator('.turn-marker').first().waitFor({ state: 'attached', timeout: 60000 });
  assert.equal(await chat.locator('.turn-marker').first().getAttribute('data-stop-reason'), 'end_turn');
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_b_edit"]');
  assert.equal(await card.getAttribute('data-status'), 'completed');

  // The buffer holds both changes; the file on disk holds neither.
  await page.locator('.tab', { hasText: 'draft.txt' }).first().click();
  const lines = await waitEditor((l) => l[24] === 'entry 25 (agent edit)', 'the agent edit is not in the buffer');
  assert.equal(lines[0], 'UNSAVED entry 1');
  assert.equal(lines.length, 31);
  await page.locator('.tab.active.dirty', { hasText: 'draft.txt' }).waitFor({ timeout: 5000 });
  assert.equal(fs.readFileSync(draft, 'utf8'), original, 'disk is untouched until the user saves');
  await h.screenshot('buffer-edit-landed');

  // Undo takes back the agent's edit, and only it.
  await page.locator('.editor-instance .view-lines').first().click();
  await runCommand(page, 'Undo');
  const undone = await waitEditor((l) => l[24] === 'entry 25', 'Undo did not revert the agent edit');
  assert.equal(undone[0], 'UNSAVED entry 1', "the user's unsaved change stays");
  assert.equal(fs.readFileSync(draft, 'utf8'), original);
  await h.screenshot('buffer-edit-undone');
});
