/**
 * Raw HTTP/1.1 requests, spelled out byte for byte, for the tests of the Node host's connection
 * front (src/hosts/node/front*.test.ts): an append to a stream and a GET, with extra header lines.
 */

/** POST /v1/streams/<path> with a JSON body and its Content-Length. */
export function appendRequest(path: string, body: string, extra: string[] = []): string {
  return [
    `POST /v1/streams/${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...extra,
    '',
    body,
  ].join('\r\n');
}

/** GET <path> with no body. */
export function getRequest(path: string, extra: string[] = []): string {
  return [`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...extra, '', ''].join('\r\n');
}
