/** The egress proxy `rivulet serve` picks from its flag and environment (webhook-proxy.ts). */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../command.js';
import { serveCommand } from './serve.js';
import { webhookProxy } from './webhook-proxy.js';

function refusal(run: () => unknown): UsageError {
  try {
    run();
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error('expected a UsageError');
}

describe('webhookProxy', () => {
  it('none without a flag or a proxy variable', () => {
    expect(webhookProxy(undefined, {})).toBeUndefined();
    expect(webhookProxy(undefined, { NO_PROXY: 'inside.test' })).toBeUndefined();
  });

  it('--webhook-proxy serves both schemes and wins over the standard variables; NO_PROXY still applies', () => {
    const env = { HTTP_PROXY: 'http://env:1', HTTPS_PROXY: 'http://env:2', NO_PROXY: 'inside.test' };
    expect(webhookProxy('http://flag:3128', env)).toEqual({ http: 'http://flag:3128', https: 'http://flag:3128', noProxy: 'inside.test' });
    expect(webhookProxy(undefined, { ...env, RIVULET_WEBHOOK_PROXY: 'https://var:443' })).toEqual({
      http: 'https://var:443',
      https: 'https://var:443',
      noProxy: 'inside.test',
    });
  });

  it('the standard variables, lower-case spellings first, each scheme on its own', () => {
    expect(webhookProxy(undefined, { HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:2' })).toEqual({ https: 'http://lower:2' });
    expect(webhookProxy(undefined, { HTTP_PROXY: 'http://p:1', no_proxy: 'a.test', NO_PROXY: 'b.test' })).toEqual({ http: 'http://p:1', noProxy: 'a.test' });
  });

  it.each([
    ['socks5://127.0.0.1:1080', '--webhook-proxy', {}, 'socks5://127.0.0.1:1080'],
    ['not a url', '--webhook-proxy', {}, 'not a url'],
    [undefined, 'RIVULET_WEBHOOK_PROXY', { RIVULET_WEBHOOK_PROXY: 'ftp://x' }, 'ftp://x'],
    [undefined, 'HTTPS_PROXY', { HTTPS_PROXY: 'proxy:3128' }, 'proxy:3128'],
    [undefined, 'http_proxy', { http_proxy: '::' }, '::'],
  ])('refuses %s (%s) with a usage error naming where it came from', (flag, name, env, value) => {
    expect(refusal(() => webhookProxy(flag, env)).message).toBe(`${name} must be an http:// or https:// URL, got "${value}"`);
  });

  it('rivulet serve --help documents --webhook-proxy', () => {
    expect(serveCommand.usage).toMatch(/^ {2}--webhook-proxy URL +send webhooks through this http:\/\/ or https:\/\/ proxy/m);
    expect(serveCommand.usage).toContain('RIVULET_WEBHOOK_PROXY');
  });
});
