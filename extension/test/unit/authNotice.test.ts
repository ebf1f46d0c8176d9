import { describe, expect, it } from 'vitest';
import { authNotice } from '../../src/authNotice';

describe('an authentication failure names the key and the endpoint, with Set API Key', () => {
  it('a refused key from secret storage', () => {
    const error = { code: -32000, data: { retryable: false, sidecar: { reason: 'auth_failed', endpoint: 'http://127.0.0.1:9', keySource: 'ANTHROPIC_API_KEY', status: 401 } } };
    expect(authNotice(error, true)).toEqual({ text: 'http://127.0.0.1:9 refused the key set with "Sidecar: Set API Key" (HTTP 401). Set another with Set API Key.', buttons: ['Set API Key'] });
    expect(authNotice(error, false)?.text).toBe('http://127.0.0.1:9 refused the key in ANTHROPIC_API_KEY (HTTP 401). Set another with Set API Key.');
  });

  it('an endpoint that wanted a key when none was set', () => {
    expect(authNotice({ code: -32000, data: { sidecar: { reason: 'auth_failed', endpoint: 'http://127.0.0.1:9', keySource: null, status: 401 } } }, false)?.text).toBe(
      'http://127.0.0.1:9 asked for an API key and none was set (HTTP 401). Set one with Set API Key.',
    );
  });

  it('no key at all', () => {
    expect(authNotice({ code: -32000, data: { sidecar: { reason: 'auth_missing', endpoint: 'https://api.anthropic.com' } } }, false)).toEqual({
      text: 'Sidecar has no API key to send to https://api.anthropic.com. Set one with Set API Key, or point Sidecar at an endpoint that needs none.',
      buttons: ['Set API Key', 'Set a Custom Endpoint'],
    });
  });

  it('any other failure is left to the chat', () => {
    expect(authNotice({ code: -32603, data: {} }, true)).toBeUndefined();
    expect(authNotice(undefined, true)).toBeUndefined();
  });
});
