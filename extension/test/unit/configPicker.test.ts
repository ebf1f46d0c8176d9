import { beforeEach, describe, expect, it } from 'vitest';
import { type Connection, Sessions } from '../../src/panel/sessions';
import type { ToView } from '../../src/shared/panelProtocol';
import type { SessionConfigOption } from '../../src/shared/configOptions';
import { pickerSelects } from '../../src/webview/configPicker';

/** What the sidecar answers (docs/protocol.md, "Config options"), cut to three models. */
function options(model: string, effort: string | null): SessionConfigOption[] {
  const out: SessionConfigOption[] = [
    {
      id: 'model', name: 'Model', category: 'model', type: 'select', currentValue: model, description: 'The model that answers in this session',
      options: [
        { value: 'claude-opus-4-8', name: 'Claude Opus 4.8', description: '1M context' },
        { value: 'claude-sonnet-5-5', name: 'Claude Sonnet 5.5', description: '1M context' },
        { value: 'claude-3-5-haiku', name: 'Claude 3.5 Haiku', description: '200K context' },
      ],
    },
  ];
  if (effort) {
    out.push({
      id: 'effort', name: 'Effort', category: 'thought_level', type: 'select', currentValue: effort,
      options: [{ value: 'low', name: 'Low' }, { value: 'medium', name: 'Medium' }, { value: 'high', name: 'High' }],
    });
  }
  return out;
}

describe('pickerSelects: what the prompt footer shows', () => {
  it('the model first, then the effort, readable names, the context in the tooltip', () => {
    const selects = pickerSelects([...options('claude-sonnet-5-5', 'medium')].reverse());
    expect(selects.map((s) => [s.id, s.value])).toEqual([['model', 'claude-sonnet-5-5'], ['effort', 'medium']]);
    expect(selects[0].choices[0]).toEqual({ value: 'claude-opus-4-8', name: 'Claude Opus 4.8', title: 'Claude Opus 4.8 — 1M context' });
    expect(selects[0].title).toBe('Model: The model that answers in this session');
    expect(selects[1].choices.map((c) => c.name)).toEqual(['Low', 'Medium', 'High']);
  });

  it('a model without effort shows only the model; nothing offered shows nothing', () => {
    expect(pickerSelects(options('claude-3-5-haiku', null)).map((s) => s.id)).toEqual(['model']);
    expect(pickerSelects(undefined)).toEqual([]);
    expect(pickerSelects([{ id: 'fast', name: 'Fast', type: 'boolean', currentValue: true }])).toEqual([]);
  });

  it('a current value the list lacks (a model set with /model) is added first, not replaced', () => {
    const [model] = pickerSelects(options('my-local-model', null));
    expect(model.value).toBe('my-local-model');
    expect(model.choices[0]).toEqual({ value: 'my-local-model', name: 'my-local-model', title: 'my-local-model' });
  });
});

class FakeConnection implements Connection {
  requests: { method: string; params: unknown }[] = [];
  answers = new Map<string, (params: any) => unknown>(); // eslint-disable-line @typescript-eslint/no-explicit-any
  async sendRequest<P, R>(type: { method: string }, params: P): Promise<R> {
    this.requests.push({ method: type.method, params });
    const f = this.answers.get(type.method);
    return (f ? await f(params) : null) as R;
  }
  async sendNotification(): Promise<void> {}
}

describe('Sessions: the picker state', () => {
  let posted: ToView[];
  let conn: FakeConnection;
  let sessions: Sessions;
  const current = (): Record<string, unknown> => {
    const state = posted.filter((m): m is Extract<ToView, { type: 'state' }> => m.type === 'state').at(-1);
    return Object.fromEntries((state?.configOptions ?? []).map((o) => [o.id, o.currentValue]));
  };

  beforeEach(async () => {
    posted = [];
    conn = new FakeConnection();
    conn.answers.set('session/list', () => ({ sessions: [] }));
    conn.answers.set('session/new', () => ({ sessionId: 'S1', modes: { currentModeId: 'default', availableModes: [] }, configOptions: options('claude-sonnet-5-5', 'medium') }));
    conn.answers.set('session/set_config_option', (p: { configId: string; value: string }) =>
      p.configId === 'model' ? { configOptions: options(p.value, p.value === 'claude-3-5-haiku' ? null : 'medium') } : { configOptions: options('claude-sonnet-5-5', p.value) });
    sessions = new Sessions({ post: (m) => posted.push(m) }, () => '/ws', 'default');
    await sessions.attach(conn);
  });

  it('session/new fills the selects; a pick sends session/set_config_option and shows its answer', async () => {
    await sessions.newSession();
    expect(current()).toEqual({ model: 'claude-sonnet-5-5', effort: 'medium' });
    await sessions.setConfigOption('model', 'claude-3-5-haiku');
    expect(conn.requests.at(-1)).toEqual({ method: 'session/set_config_option', params: { sessionId: 'S1', configId: 'model', value: 'claude-3-5-haiku' } });
    expect(current()).toEqual({ model: 'claude-3-5-haiku' }); // no effort for that model
  });

  it('a pick before any session is shown at once and sent after session/new', async () => {
    await sessions.newSession();
    (sessions as unknown as { sessionId: string | null }).sessionId = null; // as after a restart with no session
    await sessions.setConfigOption('effort', 'high');
    expect(current()).toEqual({ model: 'claude-sonnet-5-5', effort: 'high' });
    expect(conn.requests.some((r) => r.method === 'session/set_config_option')).toBe(false);
    await sessions.newSession();
    expect(conn.requests.filter((r) => r.method === 'session/set_config_option').map((r) => r.params)).toEqual([{ sessionId: 'S1', configId: 'effort', value: 'high' }]);
    expect(current()).toEqual({ model: 'claude-sonnet-5-5', effort: 'high' });
  });

  it('session/load and config_option_update (/model, the Config tool) replace the state; a refusal is shown', async () => {
    conn.answers.set('session/load', () => ({ modes: { currentModeId: 'plan', availableModes: [] }, configOptions: options('claude-opus-4-8', 'low') }));
    await sessions.load('S0');
    expect(current()).toEqual({ model: 'claude-opus-4-8', effort: 'low' });
    sessions.onUpdate({ sessionId: 'S0', update: { sessionUpdate: 'config_option_update', configOptions: options('claude-sonnet-5-5', 'medium') } });
    expect(current()).toEqual({ model: 'claude-sonnet-5-5', effort: 'medium' });
    conn.answers.set('session/set_config_option', () => {
      throw Object.assign(new Error("Unknown model 'gpt-9'; use one of claude-opus-4-8"), { code: -32602 });
    });
    await sessions.setConfigOption('model', 'gpt-9');
    expect(posted).toContainEqual({ type: 'error', message: "Unknown model 'gpt-9'; use one of claude-opus-4-8" });
    expect(current()).toEqual({ model: 'claude-sonnet-5-5', effort: 'medium' });
  });
});
