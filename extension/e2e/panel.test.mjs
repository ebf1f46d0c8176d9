// The chat panel's rough edges of issue 30, one step each, in a real VS Code (code-server) on the scripted
// model: an @ mention sent once, clickable paths in tool output, the Copy button beside short answers, one
// primary approval button and the command shown once, the approval notification that closes and whose
// "Always allow" saves the rule, the status line that moves nothing, the plan that folds and leaves, an
// Edit "waiting for your review — Open diff", a proposed create shown alone (no phantom removed line),
// Ctrl+Esc into the prompt box, the newest content in view after approving from the notification while the
// panel was hidden (with the extension host held up, as on a loaded machine), no Retry for an HTTP 400, and
// "You chose: …" on the answered cards after a reload. Screenshots of every step go to
// artifacts/e2e/panel-*.png, light first, then dark in a ~170 px side bar.
/* global document, ResizeObserver -- used inside evaluate, in the browser */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before } from 'node:test';
import { Harness, chatFrame, pickQuickInput, runCommand, stepper } from './harness.mjs';

const h = new Harness('panel');
const step = stepper(h);
const ws = h.workspace;
const pricing = path.join(ws, 'pricing.py');
const pricingText = 'def price(amount, discount):\n    # apply the discount\n    return amount - discount\n';
const notes = path.join(ws, 'notes.txt');
const notesText = 'alpha\nbeta\n';
const created = path.join(ws, 'created.py');
const createdText = 'def created():\n    return 1\n';
const awayLines = Array.from({ length: 60 }, (_, i) => `- away line ${i + 1}`).join('\n');

const turns = [
  // 1. an @ mention and a Grep whose hits are absolute paths; a short answer
  { content: [{ type: 'tool_use', id: 'toolu_grep', name: 'Grep', input: { pattern: 'discount', output_mode: 'content', '-n': true } }] },
  { content: [{ type: 'text', text: 'Done.' }] },
  // 2. a command approved from the notification ("Always allow")
  { content: [{ type: 'tool_use', id: 'toolu_touch', name: 'Bash', input: { command: 'touch toast.txt', description: 'Create the toast marker' } }] },
  { content: [{ type: 'text', text: 'Marker made.' }] },
  // 3. a plan, an unrelated turn, the plan finished
  {
    content: [
      {
        type: 'tool_use',
        id: 'toolu_todo1',
        name: 'TodoWrite',
        input: {
          todos: [
            { content: 'Write the tests', status: 'in_progress', activeForm: 'Writing the tests' },
            { content: 'Fix the bug', status: 'pending', activeForm: 'Fixing the bug' },
          ],
        },
      },
    ],
  },
  { content: [{ type: 'text', text: 'Planned.' }] },
  { content: [{ type: 'text', text: 'Unrelated answer.' }] },
  {
    content: [
      {
        type: 'tool_use',
        id: 'toolu_todo2',
        name: 'TodoWrite',
        input: {
          todos: [
            { content: 'Write the tests', status: 'completed', activeForm: 'Writing the tests' },
            { content: 'Fix the bug', status: 'completed', activeForm: 'Fixing the bug' },
          ],
        },
      },
    ],
  },
  { content: [{ type: 'text', text: 'All done.' }] },
  // 4. an Edit that waits for the user's review
  { content: [{ type: 'tool_use', id: 'toolu_read', name: 'Read', input: { file_path: notes } }] },
  { content: [{ type: 'tool_use', id: 'toolu_edit', name: 'Edit', input: { file_path: notes, old_string: 'beta\n', new_string: 'beta (reviewed)\n' } }] },
  { content: [{ type: 'text', text: 'Edited.' }] },
  // 4b. a Write of a new file: its review is the new file alone
  { content: [{ type: 'tool_use', id: 'toolu_create', name: 'Write', input: { file_path: created, content: createdText } }] },
  { content: [{ type: 'text', text: 'Created.' }] },
  // 5. approved from the notification while the panel is hidden, then a long answer
  { content: [{ type: 'tool_use', id: 'toolu_away', name: 'Bash', input: { command: 'touch away.txt', description: 'Leave a mark while away' } }] },
  { content: [{ type: 'text', text: `Back:\n\n${awayLines}\n\nThe end of the away answer.` }] },
  // 6. a request the provider refuses
  { fault: 'http', status: 400, error_type: 'invalid_request_error', message: 'messages: the conversation is malformed' },
];

let page;
let chat;

before(async () => {
  fs.writeFileSync(pricing, pricingText);
  fs.writeFileSync(notes, notesText);
  ({ page, chat } = await h.startWorkbench(turns));
});

after(async () => {
  await h.close();
});

async function turnsFinished() {
  return chat.locator('.turn-marker').count();
}

async function send(text) {
  await chat.locator('#prompt').fill(text);
  await chat.locator('#send').click();
}

async function waitTurns(n, timeout = 60000) {
  await chat.locator('.turn-marker').nth(n - 1).waitFor({ state: 'attached', timeout });
  return chat.locator('.turn-marker').nth(n - 1).getAttribute('data-stop-reason');
}

step('an @ mention is sent once: the text names the file, one link goes with it, no chip repeats it', async () => {
  const box = chat.locator('#prompt');
  await box.pressSequentially('look at @pri');
  await chat.locator('#menu .menu-item', { hasText: 'pricing.py' }).first().waitFor({ state: 'visible', timeout: 15000 });
  await box.press('Enter');
  await box.pressSequentially('and grep discount');
  assert.equal(await box.inputValue(), 'look at @pricing.py and grep discount');
  assert.equal(await chat.locator('#context .chip').count(), 0, 'no chip repeats the mention');
  await h.screenshot('mention-in-text');
  await chat.locator('#send').click();
  assert.equal(await waitTurns(1), 'end_turn');
  const req = await h.modelRequest((b) => JSON.stringify(b.messages).includes('grep discount'));
  const user = req.messages.find((m) => m.role === 'user' && JSON.stringify(m.content).includes('grep discount'));
  const text = JSON.stringify(user.content);
  assert.equal(text.split('look at @pricing.py and grep discount').length - 1, 1, 'the text goes once');
  assert.equal(text.split(`${pricing}`).length - 1 <= 2, true, `the file is attached once: ${text}`);
  const echo = chat.locator('.msg.user').first();
  assert.equal(await echo.locator('.body').textContent(), 'look at @pricing.py and grep discount');
  assert.equal(await echo.locator('.chip').count(), 0, 'the echo shows the mention once, in the text');
});

step('paths in tool output are workspace-relative file:line links, file name first; the model got them absolute', async () => {
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_grep"]');
  await card.locator('> summary').click();
  const link = card.locator('.output a.out-path').first();
  await link.waitFor({ state: 'visible', timeout: 10000 });
  assert.match(await link.locator('.loc-name').textContent(), /^pricing\.py:\d+$/);
  assert.ok(!(await card.locator('.output pre').textContent()).includes(ws), 'the card shows no absolute path');
  await h.screenshot('output-path-links');
  // the model's tool_result still names the file by its absolute path
  const req = await h.modelRequest((b) => JSON.stringify(b.messages).includes('toolu_grep') && JSON.stringify(b.messages).includes('tool_result'));
  assert.ok(JSON.stringify(req.messages).includes(`${pricing}:`), 'the model got the absolute path');
  const line = Number(/:(\d+)$/.exec(await link.locator('.loc-name').textContent())[1]);
  await link.click();
  await page.locator('.tab.active', { hasText: 'pricing.py' }).waitFor({ timeout: 15000 });
  await page.locator('.statusbar-item', { hasText: new RegExp(`Ln ${line},`) }).waitFor({ timeout: 10000 });
  await h.screenshot('output-path-opened');
});

step('the Copy button of a short answer covers none of its text', async () => {
  const msg = chat.locator('.msg.agent', { hasText: 'Done.' }).last();
  await msg.hover();
  const copy = msg.locator('.copy-msg');
  await copy.waitFor({ state: 'visible' });
  const overlap = await msg.evaluate((m) => {
    const b = m.querySelector('.copy-msg').getBoundingClientRect();
    // the rectangles of the text itself (its lines), not of the blocks holding it
    const walker = document.createTreeWalker(m.querySelector('.body'), 4 /* NodeFilter.SHOW_TEXT */);
    const rects = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(n);
      rects.push(...range.getClientRects());
    }
    return rects.length === 0 || rects.some((r) => r.width > 0 && r.left < b.right && r.right > b.left && r.top < b.bottom && r.bottom > b.top);
  });
  assert.equal(overlap, false, 'the button is beside the text, not over it');
  await h.screenshot('copy-beside-short-answer', { clip: await msg.boundingBox().then((r) => ({ x: 0, y: r.y - 8, width: 1280, height: r.height + 16 })).catch(() => undefined) });
});

step('an approval has one primary button and shows the command once; the status line moves nothing', async () => {
  const transcript = chat.locator('#transcript');
  const topBefore = await transcript.evaluate((t) => t.getBoundingClientRect().top);
  const firstBefore = await chat.locator('.msg.user').first().evaluate((e) => e.getBoundingClientRect().top);
  await send('Create the toast marker');
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_touch"]');
  await card.locator('.approval button[data-kind="allow_always"]').waitFor({ state: 'visible', timeout: 60000 });
  await chat.locator('#status', { hasText: '1 waiting for you' }).waitFor({ timeout: 10000 });
  const primary = card.locator('.approval .approval-buttons button:not(.secondary)');
  assert.equal(await primary.count(), 1, 'one primary button');
  assert.equal(await primary.textContent(), 'Allow');
  const shown = await card.evaluate((c) => [...c.querySelectorAll('pre, code, .field-value')].filter((e) => e.textContent.includes('touch toast.txt') && !e.querySelector('pre, code')).length);
  assert.equal(shown, 1, 'the command is shown once');
  assert.equal(await transcript.evaluate((t) => t.getBoundingClientRect().top), topBefore, 'the transcript did not move when something waited');
  await chat.locator('#transcript').evaluate((t) => (t.scrollTop = 0));
  assert.equal(await chat.locator('.msg.user').first().evaluate((e) => e.getBoundingClientRect().top), firstBefore);
  await h.screenshot('approval-one-primary');
});

step('the notification\'s "Always allow" saves the rule, and the answered notification is gone', async () => {
  const toast = page.locator('.notification-toast', { hasText: 'touch toast.txt' });
  await toast.waitFor({ state: 'visible', timeout: 15000 });
  await h.screenshot('approval-notification');
  await toast.locator('a', { hasText: /^Always allow$/ }).click();
  assert.equal(await waitTurns(2), 'end_turn');
  assert.ok(fs.existsSync(path.join(ws, 'toast.txt')), 'the command ran');
  const local = JSON.parse(fs.readFileSync(path.join(ws, '.claude', 'settings.local.json'), 'utf8'));
  assert.ok(local.permissions.allow.some((r) => r.startsWith('Bash(touch')), `the rule is saved: ${JSON.stringify(local.permissions.allow)}`);
  await toast.waitFor({ state: 'detached', timeout: 10000 });
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_touch"]');
  await card.locator('.decision', { hasText: /^You chose: Always allow/ }).waitFor({ timeout: 10000 });
  await chat.locator('#status').waitFor({ state: 'hidden', timeout: 10000 });
  await page.locator('.codicon-bell, .codicon-bell-dot').first().click();
  await page.locator('.notifications-center').waitFor({ state: 'visible', timeout: 5000 });
  assert.equal(await page.locator('.notifications-center .notification-list-item', { hasText: 'touch toast.txt' }).count(), 0, 'nothing answered piles up');
  await h.screenshot('notification-centre-empty');
  await page.keyboard.press('Escape');
});

step('the plan folds, folds itself when another turn starts, and leaves once every step is done', async () => {
  const plan = chat.locator('#plan');
  await send('Plan it');
  assert.equal(await waitTurns(3), 'end_turn');
  await plan.locator('.plan-entry', { hasText: 'Fix the bug' }).waitFor({ timeout: 10000 });
  assert.equal(await plan.locator('.plan-count').textContent(), '0/2');
  await h.screenshot('plan-open');
  await plan.locator('.plan-head').click();
  await plan.locator('.plan-entry').first().waitFor({ state: 'detached', timeout: 5000 });
  assert.equal(await plan.locator('.plan-current').textContent(), 'Write the tests');
  await h.screenshot('plan-folded');
  await plan.locator('.plan-head').click();
  await plan.locator('.plan-entry').first().waitFor({ timeout: 5000 });
  await send('Something unrelated');
  assert.equal(await waitTurns(4), 'end_turn');
  assert.equal(await plan.getAttribute('data-collapsed'), 'true', 'an unrelated turn folds the earlier plan');
  await h.screenshot('plan-folded-by-next-turn');
  await send('Finish the plan');
  assert.equal(await waitTurns(5), 'end_turn');
  await plan.waitFor({ state: 'hidden', timeout: 10000 });
  await h.screenshot('plan-gone-when-done');
});

step('an Edit waiting for review says so, and "Open diff" brings the diff back', async () => {
  await send('Edit the notes');
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_edit"]');
  await card.locator('.tool-status', { hasText: 'waiting for your review' }).waitFor({ timeout: 60000 });
  await page.locator('.tab', { hasText: 'proposed edit' }).waitFor({ timeout: 15000 });
  await h.screenshot('edit-waiting-review');
  // another editor in front, then back to the diff from the card
  await runCommand(page, 'View: Open Previous Editor');
  await card.locator('.review-wait .open-review').click();
  await page.locator('.tab.active', { hasText: 'proposed edit' }).waitFor({ timeout: 15000 });
  await runCommand(page, 'Sidecar: Accept Proposed Edit');
  assert.equal(await waitTurns(6), 'end_turn');
  assert.equal(fs.readFileSync(notes, 'utf8'), 'alpha\nbeta (reviewed)\n');
  await card.locator('.review-wait').waitFor({ state: 'detached', timeout: 10000 });
  assert.equal(await card.locator('.tool-status').textContent(), 'done');
});

step('a proposed create shows the new file alone: no removed line, accepted from its title bar', async () => {
  const n = await turnsFinished();
  await send('Create a file');
  const tab = page.locator('.tab.active', { hasText: 'created.py: proposed create' });
  await tab.waitFor({ timeout: 60000 });
  const editor = page.locator('.editor-instance .monaco-editor', { hasText: 'def created' }).first();
  await editor.waitFor({ timeout: 15000 });
  assert.equal(await page.locator('.editor-instance .monaco-diff-editor').count(), 0, 'not a diff editor');
  assert.equal(await page.locator('.editor-instance .line-delete, .editor-instance .char-delete').count(), 0, 'no removed line');
  await page.locator('.codelens-decoration', { hasText: 'Accept hunk 1/1' }).waitFor({ timeout: 15000 });
  // the breadcrumb names the file, not the review's number ("1 › created.py" before)
  const crumbs = page.locator('.editor-group-container.active .breadcrumbs-control .monaco-breadcrumb-item');
  await crumbs.filter({ hasText: 'created.py' }).first().waitFor({ timeout: 15000 });
  const crumbTexts = (await crumbs.allTextContents()).map((t) => t.trim());
  assert.ok(!crumbTexts.some((t) => /^\d+$/.test(t)), `breadcrumb: ${JSON.stringify(crumbTexts)}`);
  await h.screenshot('create-review-alone');
  await runCommand(page, 'Sidecar: Accept Proposed Edit');
  assert.equal(await waitTurns(n + 1), 'end_turn');
  assert.equal(fs.readFileSync(created, 'utf8'), createdText);
  await tab.waitFor({ state: 'detached', timeout: 10000 });
});

step('Ctrl+Esc ("Focus the Chat") puts the keyboard in the prompt box, not in the editor', async () => {
  await runCommand(page, 'View: Close All Editors');
  // a file open from the Grep card's link, the keyboard in its editor
  await chat.locator('.tool-card[data-tool-call-id="toolu_grep"] .output a.out-path').first().click();
  await page.locator('.tab.active', { hasText: 'pricing.py' }).waitFor({ timeout: 15000 });
  await page.locator('.monaco-editor .view-lines').first().click();
  await page.locator('.monaco-editor.focused').first().waitFor({ timeout: 10000 });
  await page.keyboard.press('Control+Escape');
  await chat.locator('body[data-ready="true"]').waitFor({ state: 'attached' });
  await chat.locator('#prompt:focus').waitFor({ state: 'attached', timeout: 10000 });
  await page.keyboard.type('typed after Ctrl+Esc');
  assert.equal(await chat.locator('#prompt').inputValue(), 'typed after Ctrl+Esc');
  assert.equal(await page.locator('.tab.dirty').count(), 0, 'the editor got no keystroke');
  assert.equal(fs.readFileSync(pricing, 'utf8'), pricingText);
  await h.screenshot('focus-chat-prompt');
  await chat.locator('#prompt').fill('');
});

step('approved from the notification while the panel was hidden: coming back shows the newest content', async () => {
  const n = await turnsFinished();
  // What the transcript went through (scrolls, resizes, the host's messages), told if the step fails.
  await chat.locator('#transcript').evaluate((t) => {
    const trace = (globalThis.awayTrace = []);
    const t0 = performance.now();
    const rec = (what) => trace.push(`${Math.round(performance.now() - t0)} ${what} top=${Math.round(t.scrollTop)} h=${t.scrollHeight} c=${t.clientHeight} f=${document.body.dataset.following}`);
    t.addEventListener('scroll', () => rec('scroll'));
    new ResizeObserver(() => rec('resize')).observe(t);
    globalThis.addEventListener('message', (ev) => rec(`msg ${ev.data.type === 'batch' ? ev.data.messages.map((m) => m.type).join(',') : ev.data.type}`));
  });
  await send('Run it while I am away');
  await chat.locator('.msg.user', { hasText: 'Run it while I am away' }).waitFor({ timeout: 30000 });
  // The extension host held up while the panel hides (a loaded machine): its "hidden" message reaches the
  // webview well after the frame shrank, and the scroll the shrinking made must not count as the user's.
  const resume = h.pauseExtensionHost();
  try {
    await page.locator('.activitybar .action-item a[aria-label^="Explorer"]').first().click();
    // the frame has shrunk (the hiding's scroll is done), then the host is held past the moment it used to have
    const shrunk = () => chat.locator('#transcript').evaluate((t) => t.clientHeight < 40);
    for (let i = 0; i < 100 && !(await shrunk()); i++) await page.waitForTimeout(50);
    await page.waitForTimeout(1500);
  } finally {
    resume();
  }
  const toast = page.locator('.notification-toast', { hasText: 'touch away.txt' });
  await toast.waitFor({ state: 'visible', timeout: 60000 });
  await toast.locator('a', { hasText: /^Allow$/ }).click();
  assert.equal(await waitTurns(n + 1), 'end_turn');
  await page.locator('.activitybar .action-item a[aria-label^="Sidecar"]').first().click();
  const end = chat.locator('.msg.agent', { hasText: 'The end of the away answer.' });
  await end.waitFor({ timeout: 10000 });
  const inView = async () =>
    chat.locator('#transcript').evaluate((t) => {
      const last = [...t.querySelectorAll('.msg.agent')].at(-1).getBoundingClientRect();
      const view = t.getBoundingClientRect();
      return last.bottom <= view.bottom + 2 && last.bottom > view.top && t.scrollHeight - t.clientHeight - t.scrollTop < 30;
    });
  for (let i = 0; i < 50 && !(await inView()); i++) await page.waitForTimeout(100);
  const where = await chat.locator('#transcript').evaluate((t) => ({ top: t.scrollTop, height: t.scrollHeight, client: t.clientHeight, following: document.body.dataset.following, hidden: document.body.dataset.hiddenFollowing }));
  const trace = await chat.locator('body').evaluate(() => globalThis.awayTrace.join('\n'));
  assert.ok(await inView(), `the newest content is in view: ${JSON.stringify(where)}\n${trace}`);
  assert.equal(where.following, 'true', 'the view follows again');
  assert.equal(await chat.locator('#new-activity').isHidden(), true, 'no "new activity" pill: nothing was missed');
  await h.screenshot('back-after-hidden-approval');
});

step('an HTTP 400 offers no Retry and says to restore the conversation', async () => {
  const n = await turnsFinished();
  await send('This one fails');
  assert.equal(await waitTurns(n + 1), 'error');
  const err = chat.locator('.error').last();
  await err.locator('.error-hint', { hasText: 'Restore conversation' }).waitFor({ timeout: 10000 });
  assert.equal(await err.locator('.retry-btn').count(), 0, 'no Retry for a request that cannot pass');
  await h.screenshot('http-400-no-retry');
});

// After the theme and layout changed: a reload replays the session.
step('dark theme, ~170 px side bar: the same panel', async () => {
  await runCommand(page, 'Preferences: Color Theme');
  await pickQuickInput(page, 'Dark Modern', 'Dark Modern');
  await chat.locator('body.vscode-dark').waitFor({ state: 'attached', timeout: 15000 });
  await runCommand(page, 'View: Close All Editors');
  const sidebar = page.locator('.part.sidebar');
  const box = await sidebar.boundingBox();
  await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + 170, box.y + box.height / 2, { steps: 10 });
  await page.mouse.up();
  await page.waitForTimeout(300);
  assert.ok((await sidebar.boundingBox()).width < 260);
  const overflow = await chat.locator('body').evaluate((b) => b.scrollWidth - b.clientWidth);
  assert.ok(overflow <= 1, `nothing overflows the narrow panel (${overflow}px)`);
  // what scrolls into view is painted in the next frames (content-visibility): the shots wait for it
  const settle = () => page.waitForTimeout(300);
  await chat.locator('.error').last().scrollIntoViewIfNeeded();
  await settle();
  await h.screenshot('dark-narrow-400');
  const grep = chat.locator('.tool-card[data-tool-call-id="toolu_grep"]');
  await grep.scrollIntoViewIfNeeded();
  await settle();
  await h.screenshot('dark-narrow-output-links');
  const touch = chat.locator('.tool-card[data-tool-call-id="toolu_touch"]');
  await touch.scrollIntoViewIfNeeded();
  await settle();
  await h.screenshot('dark-narrow-decision');
  // the footer at this width: Send shares its row (it never sits alone)
  const sendRow = await chat.locator('#send').evaluate((b) => {
    const r = b.getBoundingClientRect();
    return [...document.querySelectorAll('.composer .row.actions button:not([hidden])')].filter((x) => x !== b && Math.abs(x.getBoundingClientRect().top - r.top) < 4).length;
  });
  assert.ok(sendRow > 0, 'Send is not alone on its row');
  const done = chat.locator('.msg.agent', { hasText: 'Done.' }).last();
  await done.scrollIntoViewIfNeeded();
  await done.hover();
  await h.screenshot('dark-narrow-copy');
  await chat.locator('#transcript').evaluate((t) => t.scrollTo(0, t.scrollHeight));
});

step('after a reload the answered approvals still say what the user chose', async () => {
  const chosen = async () =>
    chat.locator('.tool-card .decision:not([hidden])').evaluateAll((ds) => ds.filter((d) => d.closest('details').open).map((d) => `${d.closest('.tool-card').dataset.toolCallId}: ${d.textContent}`));
  const before = await chosen();
  assert.deepEqual(before.map((d) => d.replace(/ Bash\(.*$/, '')), ['toolu_touch: You chose: Always allow', 'toolu_away: You chose: Allow once']);
  const count = await turnsFinished();
  const reloaded = page.waitForEvent('load', { timeout: 90000 });
  await runCommand(page, 'Developer: Reload Window');
  await reloaded;
  await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
  chat = await chatFrame(page);
  await chat.locator('.turn-marker').nth(count - 1).waitFor({ state: 'attached', timeout: 120000 });
  // the replay draws the older turns in idle time: the first card is there once they are
  await chat.locator('.tool-card[data-tool-call-id="toolu_touch"]').waitFor({ state: 'attached', timeout: 30000 });
  assert.deepEqual(await chosen(), before, 'the replayed cards say what the live ones said');
  const touch = chat.locator('.tool-card[data-tool-call-id="toolu_touch"]');
  await touch.scrollIntoViewIfNeeded();
  await page.waitForTimeout(300);
  await h.screenshot('reloaded-you-chose');
});
