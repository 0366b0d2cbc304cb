/**
 * A strict reader of one HTTP/1.1 request head, for the front of the Node host (hosts/node/front.ts).
 * Pure: bytes in, a verdict out.
 *
 * It recognises one narrow, plain form only: `POST <target> HTTP/1.1`, CRLF line ends, header
 * fields `name: value` of visible ASCII, every name at most once, a `Content-Length` of digits
 * within the body limit, a plain `Host`, no `Transfer-Encoding`, `Expect` or `Upgrade`, and a
 * `Connection` of `keep-alive` or `close` if any. Everything else (another method or version,
 * folded or duplicated fields, bytes outside ASCII, a bare CR or LF, a head above 16 KiB, …) is
 * `other`: the front then hands the connection to node:http untouched, whose parser answers it,
 * errors included. The reader never has to judge a doubtful request, so it never has to agree with
 * llhttp on one: on anything it does not recognise it steps aside.
 */

/** Longest request line plus header section read here (node:http's default `maxHeaderSize`). */
export const MAX_REQUEST_HEAD_BYTES = 16 * 1024;
/** More header fields than this: not a plain request. */
const MAX_FIELDS = 64;

export interface PlainRequest {
  /** The request target as sent (origin form). */
  target: string;
  /** Header fields by lower-case name, values trimmed. */
  fields: Map<string, string>;
  contentLength: number;
  /** The client asked to close the connection after this answer. */
  close: boolean;
  /** Bytes of the head, the blank line included: the body starts here. */
  headBytes: number;
}

export type HeadVerdict = PlainRequest | 'incomplete' | 'other';

export interface HeadRules {
  maxBodyBytes: number;
  /** Whether the front answers this target (and Host) itself. */
  accepts(target: string, host: string): boolean;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const POST = Buffer.from('POST ');
const VERSION = Buffer.from(' HTTP/1.1\r\n');
const CR = 13;
const LF = 10;
const COLON = 58;
const SPACE = 32;
const TAB = 9;

/** Bytes of a field name (RFC 9110 token). */
const TOKEN = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") TOKEN[c.charCodeAt(0)] = 1;
/** Bytes of a plain field value and of a request target: visible ASCII, and (values only) space and tab. */
const VALUE = new Uint8Array(256);
for (let c = 0x21; c <= 0x7e; c++) VALUE[c] = 1;
VALUE[SPACE] = 1;
VALUE[TAB] = 1;
const DIGITS = /^\d{1,15}$/;

/**
 * Reads the head at the start of `buffer`: `incomplete` until its blank line has arrived (and it is
 * still within the size limit), `other` for anything but the plain form, else the request.
 */
export function readRequestHead(buffer: Buffer, rules: HeadRules): HeadVerdict {
  const end = buffer.indexOf(HEAD_END);
  if (end < 0) return buffer.length > MAX_REQUEST_HEAD_BYTES ? 'other' : 'incomplete';
  const headBytes = end + 4;
  if (headBytes > MAX_REQUEST_HEAD_BYTES || !bytesAt(buffer, 0, POST)) return 'other';
  // The request line: "POST " target " HTTP/1.1" CRLF, the target of visible ASCII.
  let i = 5;
  while (i < end && buffer[i] !== SPACE) {
    if (VALUE[buffer[i]!] !== 1 || buffer[i] === TAB) return 'other';
    i++;
  }
  if (i === 5 || !bytesAt(buffer, i, VERSION)) return 'other';
  // One string of the whole head, sliced below: a native call per field cost more than the rest.
  const head = buffer.toString('latin1', 0, headBytes);
  const target = head.slice(5, i);
  i += VERSION.length;
  // Fields: name ":" OWS value OWS CRLF, each name once.
  const fields = new Map<string, string>();
  while (i < headBytes - 2) {
    const nameStart = i;
    let upper = false;
    for (let c = buffer[i]!; TOKEN[c] === 1; c = buffer[++i]!) if (c >= 0x41 && c <= 0x5a) upper = true;
    if (i === nameStart || buffer[i] !== COLON) return 'other';
    const name = upper ? head.slice(nameStart, i).toLowerCase() : head.slice(nameStart, i);
    i++;
    const rawStart = i;
    while (buffer[i] === SPACE || buffer[i] === TAB) i++;
    const valueStart = i;
    while (VALUE[buffer[i]!] === 1) i++;
    if (buffer[i] !== CR || buffer[i + 1] !== LF) return 'other';
    // llhttp reads Content-Length strictly and refuses a tab anywhere around it (a space it skips):
    // such a request is node:http's to refuse, never ours to frame (net/http1-request.differential.test.ts).
    if (name === 'content-length' && buffer.subarray(rawStart, i).includes(TAB)) return 'other';
    let valueEnd = i;
    while (valueEnd > valueStart && (buffer[valueEnd - 1] === SPACE || buffer[valueEnd - 1] === TAB)) valueEnd--;
    if (fields.has(name) || fields.size === MAX_FIELDS) return 'other';
    fields.set(name, head.slice(valueStart, valueEnd));
    i += 2;
  }
  if (fields.has('transfer-encoding') || fields.has('expect') || fields.has('upgrade')) return 'other';
  const length = fields.get('content-length');
  if (length === undefined || !DIGITS.test(length)) return 'other';
  const contentLength = Number(length);
  if (contentLength > rules.maxBodyBytes) return 'other';
  const host = fields.get('host');
  if (host === undefined || !rules.accepts(target, host)) return 'other';
  const connection = fields.get('connection')?.toLowerCase();
  if (connection !== undefined && connection !== 'keep-alive' && connection !== 'close') return 'other';
  return { target, fields, contentLength, close: connection === 'close', headBytes };
}

/** Whether `bytes` appear in `buffer` at `at` (a few bytes: cheaper than a native compare). */
function bytesAt(buffer: Buffer, at: number, bytes: Buffer): boolean {
  if (buffer.length < at + bytes.length) return false;
  for (let k = 0; k < bytes.length; k++) if (buffer[at + k] !== bytes[k]) return false;
  return true;
}
