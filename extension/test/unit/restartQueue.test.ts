// The restart queue (src/restartQueue.ts): a Workspace Trust grant fires the trust event and a settings
// change a few milliseconds apart; the agent restarts exactly once for the two (it restarted twice, and the
// second restart re-opened the chat under the user's hands: the flaky hostile-editor e2e).
import { setImmediate as nextTask } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { RestartQueue } from '../../src/restartQueue';

/** An agent whose start reads `settings.value` and then runs until `finish()` (which waits for that start). */
function agent(): {
  queue: RestartQueue<string>;
  starts: string[];
  log: string[];
  settings: { value: string };
  running: () => Promise<void>;
  finish: () => Promise<void>;
} {
  const settings = { value: 'restricted' };
  const starts: string[] = [];
  const log: string[] = [];
  const running: (() => void)[] = [];
  const queue: RestartQueue<string> = new RestartQueue<string>(
    async () => {
      // stop() first (the old agent takes a while to end), then the start reads its inputs
      await nextTask();
      queue.started(settings.value);
      starts.push(settings.value);
      await new Promise<void>((r) => running.push(r));
    },
    () => settings.value,
    (line) => log.push(line),
  );
  /** Until a start has read its inputs and runs. */
  const whenRunning = async (): Promise<void> => {
    while (!running.length) await nextTask();
  };
  const finish = async (): Promise<void> => {
    await whenRunning();
    running.shift()?.();
  };
  return { queue, starts, log, settings, running: whenRunning, finish };
}

describe('RestartQueue', () => {
  it('restarts once for a trust grant and the settings change it causes, in either order', async () => {
    for (const order of [['workspace trust granted', 'settings changed'], ['settings changed', 'workspace trust granted']]) {
      const a = agent();
      const first = a.queue.restart();
      await a.finish();
      await first;
      expect(a.starts).toEqual(['restricted']);
      // The grant: the settings change, then both events, each in its own task (as the extension host has them).
      a.settings.value = 'trusted';
      const one = a.queue.restartIfChanged(order[0]);
      await nextTask();
      const two = a.queue.restartIfChanged(order[1]);
      await a.finish();
      await Promise.all([one, two]);
      expect(a.starts).toEqual(['restricted', 'trusted']);
      expect(a.log).toEqual([`${order[1]}: the agent already runs with these settings; not restarted`]);
    }
  });

  it('does not restart for a trust grant the running agent was told of (the settings change comes after)', async () => {
    const a = agent();
    const first = a.queue.restart();
    await a.finish();
    await first;
    // The grant with nothing of the workspace's to ask about: the agent is told (ctx.ts), then the settings
    // change fires. It restarted the agent, whose start had read Restricted Mode.
    a.settings.value = 'trusted';
    a.queue.told(() => 'trusted');
    await a.queue.restartIfChanged('settings changed');
    expect(a.starts).toEqual(['restricted']);
    expect(a.log).toEqual(['settings changed: the agent already runs with these settings; not restarted']);
    // a setting the agent was not told of still restarts it
    a.settings.value = 'trusted, another model';
    const again = a.queue.restartIfChanged('settings changed');
    await a.finish();
    await again;
    expect(a.starts).toEqual(['restricted', 'trusted, another model']);
  });

  it('restarts again when the settings changed after the start read them', async () => {
    const a = agent();
    const first = a.queue.restartIfChanged('settings changed');
    await a.running();
    a.settings.value = 'changed while starting';
    const second = a.queue.restartIfChanged('settings changed');
    await a.finish();
    await first;
    await a.finish();
    await second;
    expect(a.starts).toEqual(['restricted', 'changed while starting']);
    expect(a.log).toEqual([]);
  });

  it('always runs a restart the user asks for; requests made before one begins join it', async () => {
    const a = agent();
    const first = a.queue.restart();
    await a.running();
    // All three wait behind the running start, as one; the user's request makes it run though unchanged.
    const joined = [a.queue.restartIfChanged('settings changed'), a.queue.restart(), a.queue.restartIfChanged('settings changed')];
    await a.finish();
    await first;
    await a.finish();
    await Promise.all(joined);
    expect(a.starts).toEqual(['restricted', 'restricted']);
    expect(a.log).toEqual([]);
  });
});
