/**
 * A prompt that failed for want of a key, or because the endpoint refused it (the sidecar's ACP -32000 with
 * `data.sidecar.reason` "auth_missing" | "auth_failed", docs/protocol.md): one notification saying which key
 * and which endpoint, with the button that fixes it. The chat keeps the sidecar's own sentence; no SDK text.
 */
export const AUTH_REQUIRED = -32000;

export interface AuthNotice {
  text: string;
  buttons: ('Set API Key' | 'Set a Custom Endpoint')[];
}

interface AuthDetail {
  reason?: unknown;
  endpoint?: unknown;
  keySource?: unknown;
  status?: unknown;
}

/** What to tell the user for a turn's error; undefined when it is not an authentication failure. */
export function authNotice(error: { code?: number; data?: unknown } | undefined, keyFromSecretStorage: boolean): AuthNotice | undefined {
  if (!error || error.code !== AUTH_REQUIRED) return undefined;
  const d = ((error.data as { sidecar?: AuthDetail } | undefined)?.sidecar ?? {}) as AuthDetail;
  const endpoint = typeof d.endpoint === 'string' && d.endpoint ? d.endpoint : 'https://api.anthropic.com';
  if (d.reason === 'auth_missing') {
    return { text: `Sidecar has no API key to send to ${endpoint}. Set one with Set API Key, or point Sidecar at an endpoint that needs none.`, buttons: ['Set API Key', 'Set a Custom Endpoint'] };
  }
  const source = d.keySource;
  const status = typeof d.status === 'number' ? ` (HTTP ${d.status})` : '';
  if (source === null || source === undefined || source === '') {
    return { text: `${endpoint} asked for an API key and none was set${status}. Set one with Set API Key.`, buttons: ['Set API Key'] };
  }
  const which =
    source === 'keychain'
      ? 'the key saved in the OS keychain (sidecar login)'
      : source === 'ANTHROPIC_API_KEY' && keyFromSecretStorage
        ? 'the key set with "Sidecar: Set API Key"'
        : typeof source === 'string' && source
          ? `the key in ${source}`
          : 'the API key';
  return { text: `${endpoint} refused ${which}${status}. Set another with Set API Key.`, buttons: ['Set API Key'] };
}
