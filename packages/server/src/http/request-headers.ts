/**
 * Reading request headers at the edge. On Node the adapter's web `Headers` object is built on first
 * access and costs more than the rest of a small append's routing; the incoming message already has
 * the headers as a plain object, so they are read from there when the host provides it.
 */

export interface HeaderReader {
  get(name: string): string | null;
}

interface IncomingLike {
  headers?: Record<string, string | string[] | undefined>;
}

/** `name` must be lower case. */
export function headerReader(request: Request, incoming: IncomingLike | undefined): HeaderReader {
  const raw = incoming?.headers;
  return raw ? plainHeaders(raw) : request.headers;
}

/** Headers kept as a plain object of lower-case names (Node's incoming message). */
export function plainHeaders(raw: Record<string, string | string[] | undefined>): HeaderReader {
  return {
    get(name) {
      const value = raw[name];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
}
