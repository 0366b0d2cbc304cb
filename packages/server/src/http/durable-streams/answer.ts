/**
 * Answers of the Durable Streams routes: a plain-text refusal with its status (the protocol's
 * clients read the status, not the body), or an empty answer with the protocol's header fields.
 */
export type Fields = Record<string, string>;

export function refuse(status: number, message: string, fields: Fields = {}): Response {
  return new Response(message, { status, headers: { 'content-type': 'text/plain; charset=utf-8', ...fields } });
}

export function empty(status: number, fields: Fields): Response {
  return new Response(null, { status, headers: fields });
}

export const notFound = (): Response => refuse(404, 'stream not found');

/** A stream deleted while forks still read it (docs/durable-streams.md "Forks"). */
export const gone = (): Response => refuse(410, 'the stream was deleted; only its forks still read it');
