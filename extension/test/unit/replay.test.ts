// Replayed turn ends and prompts, the retry line and the final error, as the panel words them.
import { describe, expect, it } from 'vitest';
import { errorView, OlderTurns, REFUSED_HINT, planReplay, readable, replayCuts, replayState, RetryLine, retryLineText, sentPrompt, noticeOf, turnEndOf, turnEndView } from '../../src/webview/replay';

const chunk = (text: string, turnEnd?: unknown) => ({
  sessionUpdate: 'agent_message_chunk',
  content: { type: 'text', text },
  ...(turnEnd ? { _meta: { sidecar: { turnEnd } } } : {}),
});

describe('turn ends in a replay', () => {
  it('a marker chunk is a turn end, not agent text; a plain chunk is text', () => {
    expect(turnEndOf(chunk('\n\n_Stopped._', { stopReason: 'cancelled' }))).toEqual({ stopReason: 'cancelled' });
    expect(turnEndOf(chunk('Hello'))).toBeUndefined();
    expect(turnEndOf({ sessionUpdate: 'agent_message_chunk', _meta: { sidecar: { turnEnd: 'x' } } })).toBeUndefined();
  });

  it("a replayed restore's line (worded by the host) is a notice, not agent text; anything else there is not", () => {
    const line = { text: 'Restored new.txt.', level: 'info', messageId: 'msg_1' };
    expect(noticeOf({ sessionUpdate: 'agent_message_chunk', _meta: { sidecar: { notice: line } } })).toEqual(line);
    expect(noticeOf({ sessionUpdate: 'agent_message_chunk', _meta: { sidecar: { notice: { text: 'x', level: 'loud' } } } })).toBeUndefined();
    expect(noticeOf({ sessionUpdate: 'agent_message_chunk', _meta: null })).toBeUndefined();
  });

  it('drawn as live: nothing but the marker for end_turn, "Stopped." for cancelled, the reason otherwise', () => {
    expect(turnEndView({ stopReason: 'end_turn' })).toEqual({ reason: 'end_turn' });
    expect(turnEndView({ stopReason: 'cancelled' })).toEqual({ reason: 'cancelled', note: 'Stopped.' });
    expect(turnEndView({ stopReason: 'max_tokens' })).toEqual({ reason: 'max_tokens', note: 'Turn ended: max tokens' });
  });

  it('an error ends the turn with one error line, Retry offered when the failure may pass', () => {
    const message = 'The model API answered HTTP 500 (api_error): Internal server error after 7 attempts. The provider at http://127.0.0.1:9 is failing; retry later.';
    const v = turnEndView({ stopReason: 'error', error: { code: -32050, message, data: { kind: 'model_unavailable', retryable: true, status: 500 } } });
    expect(v).toEqual({ reason: 'error', error: { message, retry: true } });
    expect(turnEndView({ stopReason: 'error', error: { code: -32050, message: 'A prompt is running.', data: { kind: 'prompt_running', retryable: false } } }).error?.retry).toBe(false);
  });

  it('no Python repr or JSON reaches the user', () => {
    expect(readable("{'type': 'error', 'error': {'type': 'api_error'}}")).toMatch(/^The turn failed with an unexpected error/);
    expect(readable('[{"a": 1}]')).toMatch(/^The turn failed with an unexpected error/);
    expect(readable('Traceback (most recent call last):\n  File "x"')).toMatch(/Show Log/);
    expect(readable('')).toMatch(/Show Log/);
    expect(errorView('The model API at http://x is unreachable.', null)).toEqual({ message: 'The model API at http://x is unreachable.', retry: false });
  });

  it('an HTTP 400 the provider refused offers no Retry, and says to restore the conversation', () => {
    const message = 'The model API answered HTTP 400 (invalid_request_error): prompt is too long.';
    const v = errorView(message, { kind: 'model_unavailable', retryable: false, status: 400 });
    expect(v).toEqual({ message, retry: false, hint: REFUSED_HINT });
    expect(REFUSED_HINT).toMatch(/Restore conversation/);
    // a 401 is not the conversation's fault: no hint, no Retry
    expect(errorView('bad key', { kind: 'model_unavailable', retryable: false, status: 401 })).toEqual({ message: 'bad key', retry: false });
    // a sidecar too old to say whether it may pass: its kind decides, as before
    expect(errorView('down', { kind: 'model_unavailable' }).retry).toBe(true);
  });
});

describe('the retry line', () => {
  const retry = { attempt: 1, maxAttempts: 7, delayMs: 4000, status: 529, errorType: 'overloaded_error', message: 'The model API failed …' };

  it('names the next attempt, the wait and the failure', () => {
    expect(retryLineText(retry, 4000)).toBe('Retrying… attempt 2 of 7 in 4 s: HTTP 529 overloaded');
    expect(retryLineText({ ...retry, status: undefined, errorType: 'connection_error' }, 1200)).toBe('Retrying… attempt 2 of 7 in 2 s: connection failed');
    expect(retryLineText({ ...retry, agent: 'Explore' }, 0)).toBe('Retrying (Explore)… attempt 2 of 7 now: HTTP 529 overloaded');
  });

  it('counts down, follows each new attempt, and is cleared when the turn proceeds', () => {
    let now = 1000;
    const line = new RetryLine(() => now);
    expect(line.visible).toBe(false);
    expect(line.text()).toBe('');
    line.show(retry);
    expect(line.text()).toBe('Retrying… attempt 2 of 7 in 4 s: HTTP 529 overloaded');
    now += 2500;
    expect(line.text()).toBe('Retrying… attempt 2 of 7 in 2 s: HTTP 529 overloaded');
    now += 5000;
    expect(line.text()).toBe('Retrying… attempt 2 of 7 now: HTTP 529 overloaded');
    line.show({ ...retry, attempt: 2, delayMs: 8000, status: 500, errorType: 'api_error' });
    expect(line.text()).toBe('Retrying… attempt 3 of 7 in 8 s: HTTP 500 server error');
    expect(line.clear()).toBe(true);
    expect(line.visible).toBe(false);
    expect(line.clear()).toBe(false);
  });
});

describe('a replayed prompt', () => {
  it('comes back as the text and the chips the user sent', () => {
    const sent = sentPrompt(
      [
        { type: 'text', text: 'Fix this\n\nplease' },
        { type: 'resource_link', uri: 'file:///ws/src/app.ts', name: 'src/app.ts' },
        { type: 'text', text: 'Selected lines 3-4 of /ws/a.py:\n```python\nx = 1\ny = 2\n```' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      ],
      ['/ws'],
    );
    expect(sent).toEqual({
      text: 'Fix this\n\nplease',
      context: [
        { kind: 'file', uri: 'file:///ws/src/app.ts', label: 'src/app.ts' },
        { kind: 'selection', uri: '/ws/a.py', label: 'a.py:3-4', text: 'x = 1\ny = 2' },
        { kind: 'image', uri: '', label: 'image 1', data: 'AAAA', mimeType: 'image/png' },
      ],
    });
  });

  it('a mention without a name shows its workspace-relative path; a lone text is the text', () => {
    expect(sentPrompt([{ type: 'resource_link', uri: 'file:///ws/a%20b.txt', name: '' }], ['/ws']).context[0].label).toBe('a b.txt');
    expect(sentPrompt([{ type: 'text', text: 'Selected lines 1-2 of /x:\n```\nq\n```' }], []).text).toMatch(/^Selected/);
  });
});

// ------------------------------------------------------------------------------------ long replays

type U = Record<string, unknown> & { sessionUpdate: string; turn?: number };

/** A replayed turn as the sidecar sends it: the prompt (one chunk per block), usage, tool calls, the answer, the end. */
function turn(n: number, opts: { blocks?: number; extra?: U[] } = {}): U[] {
  const us: U[] = [];
  for (let b = 0; b < (opts.blocks ?? 1); b++) us.push({ sessionUpdate: 'user_message_chunk', messageId: `p${n}`, content: { type: 'text', text: `Step ${n}.${b}` } });
  us.push({ sessionUpdate: 'usage_update', used: 1000 + n, size: 200000 });
  us.push({ sessionUpdate: 'tool_call', toolCallId: `t${n}`, title: 'Read' }, { sessionUpdate: 'tool_call_update', toolCallId: `t${n}`, status: 'completed' });
  us.push(...(opts.extra ?? []));
  us.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `Answer ${n}` } });
  us.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '' }, _meta: { sidecar: { turnEnd: { stopReason: 'end_turn' } } } });
  return us.map((u) => ({ ...u, turn: n }));
}

const replay = (turns: number): U[] => Array.from({ length: turns }, (_, i) => turn(i + 1)).flat();

/** Every `[start, end)` of the plan, oldest first, then the tail: must be the replay, in order, once. */
function drawOrder(us: U[], plan: ReturnType<typeof planReplay>): [number, number][] {
  return [...[...plan.pieces].reverse(), [plan.tailStart, us.length]];
}

describe('a long replay drawn newest turns first', () => {
  it('the last 20 turns at once, the older ones in pieces of whole turns that put back together make the replay', () => {
    const us = replay(60);
    const plan = planReplay(us);
    expect(us[plan.tailStart]).toMatchObject({ sessionUpdate: 'user_message_chunk', turn: 41 });
    const ranges = drawOrder(us, plan);
    let at = 0;
    for (const [start, end] of ranges) {
      expect(start).toBe(at);
      expect(end).toBeGreaterThan(start);
      expect(us[start]).toMatchObject({ sessionUpdate: 'user_message_chunk' });
      at = end;
    }
    expect(at).toBe(us.length);
    // newest first: the piece just above the tail is drawn first
    expect(us[plan.pieces[0][0]].turn).toBe(37);
    expect(plan.pieces.at(-1)?.[0]).toBe(0);
  });

  it('a short replay is drawn whole at once; an empty one is nothing', () => {
    const us = replay(5);
    expect(planReplay(us)).toMatchObject({ tailStart: 0, pieces: [] });
    expect(planReplay([])).toMatchObject({ tailStart: 0, pieces: [] });
  });

  it('the tail stops at 400 updates when turns are long, and keeps at least the last turn', () => {
    const long = (n: number): U[] => turn(n, { extra: Array.from({ length: 150 }, (_, k) => ({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: `${k}` } })) });
    const us = [...replay(10), ...[11, 12, 13, 14].map(long).flat()];
    const plan = planReplay(us);
    expect(us.length - plan.tailStart).toBeLessThanOrEqual(400);
    expect(us[plan.tailStart].turn).toBe(13);
    const huge = [...replay(3), ...turn(4, { extra: Array.from({ length: 900 }, () => ({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'x' } })) })];
    expect(huge[planReplay(huge).tailStart].turn).toBe(4);
  });

  it('a prompt of several blocks is one message; two prompts in a row are two turns', () => {
    const us = [...turn(1, { blocks: 3 }), ...turn(2, { blocks: 2 })];
    expect(replayCuts(us)).toEqual([0, 3 + 5]);
    const twoPrompts: U[] = [
      { sessionUpdate: 'user_message_chunk', messageId: 'a', content: { type: 'text', text: 'one' } },
      { sessionUpdate: 'user_message_chunk', messageId: 'b', content: { type: 'text', text: 'two' } },
    ];
    expect(replayCuts(twoPrompts)).toEqual([0, 1]);
  });

  it('no cut between a tool call and a later update of it (a card is made by its first update)', () => {
    const us = [...replay(30), ...turn(31, { extra: [{ sessionUpdate: 'tool_call_update', toolCallId: 't24', status: 'failed' }] }), ...replay(60).slice(replay(31).length)];
    const cuts = replayCuts(us);
    const startOf = (n: number): number => us.findIndex((u) => u.turn === n);
    for (let n = 25; n <= 31; n++) expect(cuts).not.toContain(startOf(n));
    expect(cuts).toContain(startOf(24));
    expect(cuts).toContain(startOf(32));
    const plan = planReplay(us, { tailTurns: 20, pieceTurns: 4 });
    for (const [start, end] of drawOrder(us, plan)) {
      const made = new Set(us.slice(start, end).filter((u) => u.sessionUpdate === 'tool_call').map((u) => u.toolCallId));
      for (const u of us.slice(start, end)) if (u.sessionUpdate === 'tool_call_update') expect(made.has(u.toolCallId)).toBe(true);
    }
  });

  it('the panel state is what the replay leaves: the last usage with a count, the last plan, mode and commands, in order', () => {
    const us: U[] = [
      { sessionUpdate: 'plan', entries: [{ content: 'a', status: 'pending' }] },
      ...replay(3),
      { sessionUpdate: 'available_commands_update', availableCommands: [] },
      { sessionUpdate: 'current_mode_update', currentModeId: 'plan' },
      { sessionUpdate: 'plan', entries: [{ content: 'a', status: 'completed' }] },
      { sessionUpdate: 'usage_update', size: 5 },
      { sessionUpdate: 'current_mode_update' },
    ];
    expect(replayState(us)).toEqual([
      { sessionUpdate: 'usage_update', used: 1003, size: 200000, turn: 3 },
      { sessionUpdate: 'available_commands_update', availableCommands: [] },
      { sessionUpdate: 'current_mode_update', currentModeId: 'plan' },
      { sessionUpdate: 'plan', entries: [{ content: 'a', status: 'completed' }] },
    ]);
  });
});

describe('the older turns, drawn in idle time', () => {
  /** A transcript of update indices: the tail drawn, then the older pieces put above it as idle time comes. */
  function setUp(turns: number, budget: number) {
    const us = replay(turns);
    const plan = planReplay(us, { tailTurns: 5, pieceTurns: 2 });
    const transcript: (number | string)[] = [];
    for (let i = plan.tailStart; i < us.length; i++) transcript.push(i);
    const idle: ((budgetMs: number) => void)[] = [];
    let clock = 0;
    const prepends: number[] = [];
    const older = new OlderTurns<number[]>(
      {
        draw: (start, end) => {
          clock += 1; // each piece costs 1 ms
          return Array.from({ length: end - start }, (_, k) => start + k);
        },
        prepend: (pieces) => {
          prepends.push(pieces.length);
          transcript.unshift(...pieces.flat());
        },
        idle: (run) => idle.push(run),
        now: () => clock,
      },
      plan.pieces,
    );
    const tick = (): boolean => {
      const run = idle.shift();
      run?.(budget);
      return run !== undefined;
    };
    return { us, plan, transcript, older, tick, prepends, idle };
  }

  it('ends as the replay in order, with live updates that came meanwhile after it', () => {
    const { us, transcript, older, tick, prepends } = setUp(40, 3);
    older.start();
    transcript.push('live 1');
    let ticks = 0;
    while (tick()) {
      ticks++;
      if (ticks === 2) transcript.push('live 2');
    }
    expect(older.done).toBe(true);
    expect(transcript).toEqual([...us.keys(), 'live 1', 'live 2']);
    // 35 older turns in pieces of 2: 18 pieces, three per idle call (1 ms each, 3 ms budget)
    expect(prepends).toEqual([3, 3, 3, 3, 3, 3]);
  });

  it('at least one piece per idle call; drain draws the rest at once; cancel draws nothing more', () => {
    const a = setUp(40, 0);
    a.older.start();
    a.tick();
    expect(a.prepends).toEqual([1]);
    a.older.drain();
    expect(a.older.done).toBe(true);
    expect(a.transcript).toEqual([...a.us.keys()]);
    expect(a.tick()).toBe(true); // the idle call already asked for finds nothing to do
    expect(a.prepends).toEqual([1, 17]);

    const b = setUp(40, 3);
    b.older.start();
    b.tick();
    b.older.cancel();
    while (b.tick());
    expect(b.prepends).toEqual([3]);
    expect(b.older.done).toBe(true);
  });
});
