/**
 * Types only (see modelRetry.ts for why they live here): ACP's session config options, which the sidecar
 * answers on `session/new` / `session/load` and sends in `config_option_update` (docs/protocol.md,
 * "Config options"): a `model` select and, when the model has effort levels, an `effort` select.
 */

export interface SessionConfigSelectOption {
  value: string;
  name: string;
  description?: string | null;
}

export interface SessionConfigOption {
  id: string;
  name: string;
  description?: string | null;
  /** `model`, `thought_level`, `mode`, … (UX only) */
  category?: string | null;
  type: 'select' | 'boolean';
  currentValue: string | boolean;
  options?: SessionConfigSelectOption[];
}
