// The chat panel under load (issue 18), measured in a real editor and printed, not asserted: a long session
// replayed into the webview by session/load, and a 10,000-delta answer streamed into it while the user types.
// `npm run bench:panel` (after `npm run package`), or `bench/panel_load.py`, which also puts the rows into
// bench/run's closing table. Every time is taken inside the chat webview's frame (performance.now()).
//
//   node e2e/panel-load.mjs [--turns 300] [--deltas 10000] [--runs 3] [--json FILE]
/* global document, window, requestAnimationFrame, PerformanceObserver, Event */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Harness, python, repoRoot } from './harness.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
};
const TURNS = Number(opt('turns', 300));
const DELTAS = Number(opt('deltas', 10000));
const RUNS = Math.max(1, Number(opt('runs', 3)));
const jsonOut = opt('json', '');

const GOALS = { loadMs: 1000, inputP95Ms: 100, frameGapMs: 200, finalMs: 100 };
const END = 'End of the long answer.';

/** A long Markdown answer of exactly `n` characters (one delta each), ending with END. */
function longAnswer(n) {
  const lines = [];
  let size = 0;
  for (let i = 1; size < n; i++) {
    const line = i % 12 === 0 ? `\n### Part ${i / 12}\n` : i % 4 === 0 ? `- item ${i} with \`code\` and **bold** text` : `Line ${i} of the streamed answer, plain words to fill the paragraph.`;
    lines.push(line);
    size += line.length + 1;
  }
  const body = lines.join('\n');
  return `${body.slice(0, Math.max(0, n - END.length - 2))}\n\n${END}`.slice(-n);
}

const h = new Harness('panel-load');
const rows = [];
const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : '-');
const load = () => os.loadavg().map((x) => x.toFixed(1)).join(' ');

function report(key, measure, value, goal, ok) {
  rows.push({ key, measure, value, goal, ok });
  console.log(`-> ${measure}: ${value}   goal ${goal}   ${ok ? 'OK' : 'MISSED'}`);
}

/** Installed once in the chat frame: message arrival times, long tasks, frames, key events. */
function instrument() {
  const w = window;
  if (w.__pl) return;
  const pl = { msgs: [], longtasks: [], frames: [], keys: [], framing: false };
  w.__pl = pl;
  // The extension host sends what one tick posted as one `batch`.
  window.addEventListener('message', (ev) => {
    const now = performance.now();
    for (const m of ev.data?.type === 'batch' ? ev.data.messages : [ev.data]) {
      const t = m?.type;
      if (t === 'update' || t === 'clear' || t === 'turnEnd' || t === 'replayDone') pl.msgs.push([t, now, m.update?.sessionUpdate]);
    }
    pl.events = (pl.events ?? 0) + 1;
  });
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pl.longtasks.push([e.startTime, e.duration]);
  }).observe({ entryTypes: ['longtask'] });
  const frame = (t) => {
    if (!pl.framing) return;
    pl.frames.push(t);
    requestAnimationFrame(frame);
  };
  pl.startFrames = () => {
    pl.frames = [];
    pl.framing = true;
    requestAnimationFrame(frame);
  };
  pl.stopFrames = () => {
    pl.framing = false;
  };
  // Key event → the next frame: how long the user waits to see the key take effect.
  document.getElementById('prompt').addEventListener('keydown', (ev) => {
    const start = performance.now();
    const queued = start - ev.timeStamp;
    requestAnimationFrame(() => pl.keys.push({ queued, toFrame: performance.now() - ev.timeStamp }));
  });
  /** Resolves (per animation frame) when `done()` holds; returns the time it was seen. */
  pl.when = (done, timeoutMs = 180000) =>
    new Promise((resolve, reject) => {
      const start = performance.now();
      const check = () => {
        if (done()) resolve(performance.now());
        else if (performance.now() - start > timeoutMs) reject(new Error('the panel did not get there in time'));
        else requestAnimationFrame(check);
      };
      check();
    });
}

async function main() {
  // 1. The long session, made by the real sidecar into the data dir code-server's sidecar will read.
  const made = spawnSync(python, [path.join(repoRoot, 'bench', 'panel_load.py'), '--make-session', '--data', path.join(h.root, 'xdg-data'), '--cwd', h.workspace, '--turns', String(TURNS)], {
    cwd: repoRoot,
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: repoRoot },
  });
  if (made.status !== 0) throw new Error(`making the session failed: ${made.stderr}`);
  const { sessionId, seconds, sidecarLoadMs } = JSON.parse(made.stdout.trim().split('\n').pop());
  const logFile = path.join(h.root, 'xdg-data', 'sidecar', 'sessions', `${sessionId}.jsonl`);
  console.log(`session ${sessionId}: ${TURNS} turns made by the sidecar in ${seconds} s (${(fs.statSync(logFile).size / 1e6).toFixed(1)} MB log)`);
  console.log(`reference: session/load of it by a fresh sidecar alone (request → response, no editor): ${sidecarLoadMs[0]} ms cold, then ${sidecarLoadMs.slice(1).join(', ')} ms`);

  // 2. The editor; the model answers the one prompt of the stream step with DELTAS one-character deltas.
  const text = longAnswer(DELTAS);
  const { chat, page } = await h.startWorkbench([{ content: [{ type: 'text', text }], text_chunk: 1 }], { apiKey: false });
  await chat.locator(`#sessions option[value="${sessionId}"]`).waitFor({ state: 'attached', timeout: 30000 });
  await chat.evaluate(instrument);

  // 3. session/load, RUNS times: the pick → the last turn's answer rendered in the DOM, the view at the bottom.
  console.log(`== session/load of ${TURNS} turns into the panel (cpus ${os.cpus().length}, load ${load()})`);
  const loads = [];
  for (let run = 0; run < RUNS; run++) {
    const r = await chat.evaluate(
      async ({ id, turns, last }) => {
        const pl = window.__pl;
        pl.msgs = [];
        pl.longtasks = [];
        pl.events = 0;
        const transcript = document.getElementById('transcript');
        const sel = document.getElementById('sessions');
        const t0 = performance.now();
        sel.value = id;
        sel.dispatchEvent(new Event('change'));
        const markers = transcript.getElementsByClassName('turn-marker');
        const agents = transcript.getElementsByClassName('agent');
        const cleared = () => pl.msgs.some(([t]) => t === 'clear');
        // Shown: the last turn's answer rendered (Markdown) and the view at the bottom, where it is. The panel
        // draws the newest turns first and the older ones after, above them: all of them in the DOM is `t2`.
        const atBottom = () => transcript.scrollHeight - transcript.clientHeight - transcript.scrollTop <= 24;
        const t1 = await pl.when(() => cleared() && (agents[agents.length - 1]?.textContent ?? '').includes(last) && atBottom());
        const t2 = await pl.when(() => markers.length >= turns);
        const updates = pl.msgs.filter(([t]) => t === 'update').map(([, t]) => t);
        const tasks = pl.longtasks.filter(([s]) => s >= t0);
        const done = pl.msgs.find(([t]) => t === 'replayDone');
        return {
          replayDone: (done?.[1] ?? NaN) - t0,
          total: t1 - t0,
          whole: t2 - t0,
          firstUpdate: (updates[0] ?? NaN) - t0,
          lastUpdate: (updates[updates.length - 1] ?? NaN) - t0,
          updates: updates.length,
          events: pl.events,
          nodes: transcript.getElementsByTagName('*').length,
          longTasks: tasks.length,
          longTaskMs: tasks.reduce((a, [, d]) => a + d, 0),
          longestTask: Math.max(0, ...tasks.map(([, d]) => d)),
        };
      },
      { id: sessionId, turns: TURNS, last: `Done with step ${TURNS}.` },
    );
    loads.push(r);
    console.log(
      `run ${run + 1}: ${f0(r.total)} ms to the last answer rendered at the bottom, all ${TURNS} turns in the DOM after ${f0(r.whole)} ms; first update after ${f0(r.firstUpdate)} ms, last after ${f0(r.lastUpdate)} ms, replayDone after ${f0(r.replayDone)} ms ` +
        `(${r.updates} updates in ${r.events} webview messages, ${r.nodes} elements); long tasks ${r.longTasks}, ${f0(r.longTaskMs)} ms in all, longest ${f0(r.longestTask)} ms`,
    );
    await sleep(500);
  }
  await h.screenshot('loaded');
  const first = loads[0].total;
  const again = loads.length > 1 ? pct(loads.slice(1).map((l) => l.total), 50) : NaN;
  const after = loads.map((l) => l.total - l.lastUpdate);
  console.log(`the panel's own share: last update → rendered ${after.map(f0).join(', ')} ms; the sidecar alone took ${sidecarLoadMs.join(', ')} ms for the same load`);
  report('panel_load', `panel: session/load of ${TURNS} turns, pick to the last turn shown`, `${f0(first)} ms (all turns in the DOM ${f0(loads[0].whole)} ms; again ${f0(again)} ms; sidecar alone ${sidecarLoadMs[0]}/${sidecarLoadMs[1]} ms)`, `<= ${GOALS.loadMs} ms`, first <= GOALS.loadMs);

  // 4. The stream into the long transcript, typing into the prompt box meanwhile.
  console.log(`== a ${DELTAS}-delta answer streamed into the ${TURNS}-turn transcript, typing meanwhile (load ${load()})`);
  await chat.locator('#prompt').fill('Write a long answer');
  await chat.evaluate((end) => {
    const pl = window.__pl;
    pl.msgs = [];
    pl.longtasks = [];
    pl.keys = [];
    pl.startFrames();
    // Watched from now, once per frame: the moment the whole answer (its last words) is in the DOM.
    const agents = document.getElementById('transcript').getElementsByClassName('agent');
    const before = agents.length;
    pl.rendered = null;
    void pl.when(() => agents.length > before && (agents[agents.length - 1]?.querySelector('.body')?.textContent ?? '').trimEnd().endsWith(end)).then((t) => (pl.rendered = t));
  }, END);
  await chat.locator('#send').click();
  const streamStart = performance.now();
  // Type into the prompt box while the answer streams (one key every 50 ms); the box stays editable.
  await chat.locator('#prompt').fill('');
  await chat.locator('#prompt').focus();
  let typed = 0;
  const finished = chat.locator('.turn-marker').nth(TURNS).waitFor({ state: 'attached', timeout: 300000 });
  let done = false;
  void finished.then(() => (done = true));
  while (!done && performance.now() - streamStart < 300000) {
    await page.keyboard.type('x');
    typed++;
    await sleep(50);
  }
  await finished;
  const s = await chat.evaluate(async () => {
    const pl = window.__pl;
    const agents = document.getElementById('transcript').getElementsByClassName('agent');
    await pl.when(() => pl.rendered !== null);
    const rendered = pl.rendered;
    pl.stopFrames();
    const updates = pl.msgs.filter(([t, , kind]) => t === 'update' && kind === 'agent_message_chunk').map(([, t]) => t);
    const first = updates[0] ?? NaN;
    const last = updates[updates.length - 1] ?? NaN;
    const frames = pl.frames.filter((t) => t >= first && t <= rendered);
    const gaps = frames.slice(1).map((t, i) => t - frames[i]);
    const tasks = pl.longtasks.filter(([st]) => st >= first - 50);
    return {
      updates: updates.length,
      streamMs: last - first,
      final: rendered - last,
      gaps,
      keys: pl.keys,
      longTasks: tasks.length,
      longTaskMs: tasks.reduce((a, [, d]) => a + d, 0),
      longestTask: Math.max(0, ...tasks.map(([, d]) => d)),
      chars: agents[agents.length - 1]?.textContent?.length ?? 0,
    };
  });
  await h.screenshot('streamed');
  const toFrame = s.keys.map((k) => k.toFrame);
  const queued = s.keys.map((k) => k.queued);
  const maxGap = Math.max(0, ...s.gaps);
  console.log(
    `${s.updates} agent_message_chunk updates (the sidecar coalesces deltas per 20 ms) reached the webview over ${f0(s.streamMs)} ms (${f0(s.updates / (s.streamMs / 1000))}/s); ` +
      `${s.gaps.length + 1} frames, gap p50 ${f0(pct(s.gaps, 50))} ms, p95 ${f0(pct(s.gaps, 95))} ms, longest ${f0(maxGap)} ms; ` +
      `long tasks ${s.longTasks}, ${f0(s.longTaskMs)} ms in all, longest ${f0(s.longestTask)} ms`,
  );
  console.log(
    `${typed} keys typed, ${s.keys.length} seen: key → handler p50 ${f0(pct(queued, 50))} ms, p95 ${f0(pct(queued, 95))} ms; ` +
      `key → next frame p50 ${f0(pct(toFrame, 50))} ms, p95 ${f0(pct(toFrame, 95))} ms, max ${f0(Math.max(0, ...toFrame))} ms`,
  );
  const inputP95 = pct(toFrame, 95);
  report('panel_input', `panel: key to next frame while ${DELTAS} deltas stream`, `p95 ${f0(inputP95)} ms (${s.keys.length} keys)`, `p95 <= ${GOALS.inputP95Ms} ms`, inputP95 <= GOALS.inputP95Ms);
  report('panel_frames', `panel: longest frame gap while ${DELTAS} deltas stream`, `${f0(maxGap)} ms (p95 ${f0(pct(s.gaps, 95))} ms)`, `<= ${GOALS.frameGapMs} ms`, maxGap <= GOALS.frameGapMs);
  report('panel_final', 'panel: last delta to the whole answer rendered', `${f0(s.final)} ms`, `<= ${GOALS.finalMs} ms`, s.final <= GOALS.finalMs);
  console.log(`(load ${load()})`);
}

let failed = false;
try {
  await main();
} catch (e) {
  failed = true;
  console.error(e);
  await h.screenshot('failed').catch(() => undefined);
} finally {
  await h.close();
}
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ rows, load: os.loadavg() }, null, 2));
process.exit(failed ? 1 : 0);
