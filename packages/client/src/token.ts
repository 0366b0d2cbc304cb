/**
 * Credentials that may change while a client lives: a token is a string, or a function asked for
 * the current one before every HTTP request and every RPC connect (a refresh, a rotation). The SDK
 * keeps no copy of a token a function answered.
 */
import { RivuletError } from '@rivulet/contract';

export type TokenSource = string | (() => string | Promise<string>);

/** The token to send now, or undefined for none. A function's failure rejects unchanged. */
export async function currentToken(source: TokenSource | undefined): Promise<string | undefined> {
  if (typeof source !== 'function') return source;
  const token: unknown = await source();
  if (typeof token !== 'string' || token === '') {
    throw new RivuletError('INVALID_INPUT', `the token function must answer a non-empty string, got ${token === '' ? 'an empty string' : typeof token}`);
  }
  return token;
}
