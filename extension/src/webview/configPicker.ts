/**
 * The model picker in the prompt footer: one compact select per session config option the sidecar offers
 * (the model, then the thinking effort when the model has one), beside the permission mode. Filled from the
 * `configOptions` the extension keeps in its state (session/new, session/load, config_option_update);
 * a change posts `setConfigOption`, which the extension sends as `session/set_config_option`.
 */
import type { SessionConfigOption } from '../shared/configOptions';

export interface PickerChoice {
  value: string;
  name: string;
  title: string;
}

export interface PickerSelect {
  id: string;
  label: string;
  title: string;
  value: string;
  choices: PickerChoice[];
}

/** Shown first: the model, then the effort; other selects after, in the sidecar's order. */
const ORDER: Record<string, number> = { model: 0, thought_level: 1 };

/**
 * What the footer shows for `options`: the select options (booleans and the mode, which has its own
 * control, are left out), each with its choices and current value (a current value missing from the
 * choices is added first, so the select never shows another one).
 */
export function pickerSelects(options: readonly SessionConfigOption[] | null | undefined): PickerSelect[] {
  const selects = (options ?? []).filter(
    (o) => o.type === 'select' && o.category !== 'mode' && typeof o.currentValue === 'string' && Array.isArray(o.options),
  );
  const rank = (o: SessionConfigOption): number => ORDER[String(o.category)] ?? 2;
  return selects
    .map((o, i) => ({ o, i }))
    .sort((a, b) => rank(a.o) - rank(b.o) || a.i - b.i)
    .map(({ o }) => {
      const value = String(o.currentValue);
      const choices: PickerChoice[] = (o.options ?? []).map((c) => ({
        value: c.value,
        name: c.name || c.value,
        title: c.description ? `${c.name || c.value} — ${c.description}` : c.name || c.value,
      }));
      if (!choices.some((c) => c.value === value)) choices.unshift({ value, name: value, title: value });
      const title = o.description ? `${o.name}: ${o.description}` : o.name;
      return { id: o.id, label: o.name, title, value, choices };
    });
}

/**
 * Keeps `container`'s selects in step with `selects`: one `<select data-config-id>` each, refilled only
 * when its choices changed (an open dropdown is not rebuilt by an unrelated state message), removed when
 * the option is gone (a model without effort).
 */
export function renderPicker(
  container: HTMLElement,
  selects: readonly PickerSelect[],
  onChange: (configId: string, value: string) => void,
): void {
  const existing = new Map<string, HTMLSelectElement>();
  for (const node of Array.from(container.querySelectorAll<HTMLSelectElement>('select[data-config-id]'))) {
    existing.set(node.dataset.configId ?? '', node);
  }
  const keep = new Set<string>();
  for (const s of selects) {
    keep.add(s.id);
    let sel = existing.get(s.id);
    if (!sel) {
      sel = document.createElement('select');
      sel.dataset.configId = s.id;
      const id = s.id;
      sel.addEventListener('change', () => onChange(id, (sel as HTMLSelectElement).value));
    }
    container.appendChild(sel); // in order
    sel.title = s.title;
    sel.setAttribute('aria-label', s.label);
    const key = JSON.stringify(s.choices);
    if (sel.dataset.choices !== key) {
      sel.textContent = '';
      for (const c of s.choices) {
        const o = document.createElement('option');
        o.value = c.value;
        o.textContent = c.name;
        o.title = c.title;
        sel.appendChild(o);
      }
      sel.dataset.choices = key;
    }
    sel.value = s.value;
  }
  for (const [id, node] of existing) if (!keep.has(id)) node.remove();
  container.hidden = selects.length === 0;
}
