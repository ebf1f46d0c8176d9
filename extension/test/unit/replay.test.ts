// Replayed turn ends and prompts, the retry line and the final error, as the panel words them.
import { describe, expect, it } from 'vitest';
import { errorView, readable, RetryLine, retryLineText, sentPrompt, turnEndOf, turnEndView } from '../../src/webview/replay';

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
