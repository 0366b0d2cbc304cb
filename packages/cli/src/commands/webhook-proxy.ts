/**
 * Which egress proxy `rivulet serve` sends webhooks through (protocol §17.4): `--webhook-proxy URL`
 * (or RIVULET_WEBHOOK_PROXY) for both schemes, else the standard HTTP_PROXY and HTTPS_PROXY
 * variables (lower-case spellings first, as curl reads them); NO_PROXY names the hosts reached
 * directly either way. Read here from the command's environment, never by the server itself, so
 * that embedding the server never picks up a proxy by surprise.
 */
import { UsageError } from '../command.js';

export interface WebhookProxyChoice {
  http?: string;
  https?: string;
  noProxy?: string;
}

function proxyUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${name} must be an http:// or https:// URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${name} must be an http:// or https:// URL, got "${value}"`);
  return value;
}

export function webhookProxy(flag: string | undefined, env: NodeJS.ProcessEnv): WebhookProxyChoice | undefined {
  const noProxy = env.no_proxy ?? env.NO_PROXY;
  const withNoProxy = (choice: WebhookProxyChoice) => (noProxy ? { ...choice, noProxy } : choice);
  const given = flag ?? env.RIVULET_WEBHOOK_PROXY;
  if (given) {
    const url = proxyUrl(flag !== undefined ? '--webhook-proxy' : 'RIVULET_WEBHOOK_PROXY', given);
    return withNoProxy({ http: url, https: url });
  }
  const http = env.http_proxy || env.HTTP_PROXY;
  const https = env.https_proxy || env.HTTPS_PROXY;
  if (!http && !https) return undefined;
  return withNoProxy({
    ...(http ? { http: proxyUrl(env.http_proxy ? 'http_proxy' : 'HTTP_PROXY', http) } : {}),
    ...(https ? { https: proxyUrl(env.https_proxy ? 'https_proxy' : 'HTTPS_PROXY', https) } : {}),
  });
}
