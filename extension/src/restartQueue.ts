/**
 * The agent's restarts, one after another (docs/extension.md, "Restarts").
 *
 * A restart asked for because something the agent starts with *may* have changed (a settings change, a
 * Workspace Trust grant) runs only if what it would start with now differs from what the last start read:
 * granting trust both fires the trust event and changes the effective settings, a few milliseconds apart,
 * and the second of the two used to restart the agent again right after the first (re-opening the chat
 * session under the user's hands). A restart the user asks for (Restart, Set API Key, Retry Setup) always
 * runs. A request made while another waits to begin joins it.
 */
export class RestartQueue<Inputs> {
  private tail: Promise<void> = Promise.resolve();
  private waiting: { force: boolean; done: Promise<void> } | undefined;
  private startedWith: Inputs | undefined;

  /**
   * `job` stops and starts the agent (and calls `started` when it reads its inputs); `inputs` is what a start
   * would read now (compared as JSON).
   */
  constructor(
    private readonly job: () => Promise<void>,
    private readonly inputs: () => Inputs,
    private readonly log: (line: string) => void,
  ) {}

  /** Called by the start itself with the inputs it read (the comparison is against this). */
  started(inputs: Inputs): void {
    this.startedWith = inputs;
  }

  /**
   * The running agent was told of a change without a restart (a trust grant: `_sidecar/workspace_trust`): it
   * now runs as if started with `change(inputs it started with)`. The settings change the same grant fires
   * next is compared with that, so it does not restart the agent for what the agent knows already.
   */
  told(change: (startedWith: Inputs) => Inputs): void {
    if (this.startedWith !== undefined) this.startedWith = change(this.startedWith);
  }

  /** Always restarts (after any restart under way). */
  restart(): Promise<void> {
    return this.enqueue(true, '');
  }

  /** Restarts if what the agent would start with changed since the last start read it. */
  restartIfChanged(why: string): Promise<void> {
    return this.enqueue(false, why);
  }

  private enqueue(force: boolean, why: string): Promise<void> {
    if (this.waiting) {
      this.waiting.force ||= force;
      return this.waiting.done;
    }
    const entry = { force, done: Promise.resolve() };
    const run = async (): Promise<void> => {
      this.waiting = undefined;
      if (!entry.force && this.startedWith !== undefined && JSON.stringify(this.inputs()) === JSON.stringify(this.startedWith)) {
        this.log(`${why}: the agent already runs with these settings; not restarted`);
        return;
      }
      await this.job();
    };
    entry.done = this.tail.then(run, run);
    this.waiting = entry;
    this.tail = entry.done;
    return entry.done;
  }
}
