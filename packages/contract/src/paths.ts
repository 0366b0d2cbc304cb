/**
 * Canonical stream paths (protocol §2.3, §2.4). Pure: shared by the server's edges and the
 * SDK so both agree on what a path means.
 *
 * Canonical form: a leading "/", segments joined by "/", no empty, "." or ".." segment. The root
 * stream is "/". Surrounding whitespace of the whole path is trimmed; "." segments vanish; ".."
 * removes the previous segment and may not escape the root; "?", "#", "\\", ":" and control
 * characters are refused anywhere.
 */
import { RivuletError } from './errors.js';
import { Limits } from './limits.js';

const FORBIDDEN_CHAR = /[?#\\:\u0000-\u001f\u007f-\u009f]/u;
/** A UTF-16 surrogate standing alone (with the u flag a well-formed pair is one code point, not Cs). */
const LONE_SURROGATE = /\p{Cs}/u;

export interface CanonicalizeOptions {
  /** Percent-decode each segment (paths taken from a URL). */
  decode?: boolean;
}

function invalid(message: string, path: string): RivuletError {
  return new RivuletError('INVALID_INPUT', message, { path });
}

export function canonicalizePath(raw: string, options: CanonicalizeOptions = {}): string {
  if (typeof raw !== 'string') throw invalid('stream path must be a string', String(raw));
  const trimmed = raw.trim();
  if (trimmed.length > Limits.pathMaxLength * 3) {
    throw invalid(`stream path is longer than ${Limits.pathMaxLength} characters`, trimmed.slice(0, 64));
  }
  if (trimmed === '' || trimmed === '/') return '/';
  const body = trimmed.startsWith('/') ? trimmed.slice(1) : trimmed;
  const segments = body.split('/');
  if (options.decode) {
    for (let i = 0; i < segments.length; i++) {
      const rawSegment = segments[i]!;
      let decoded: string;
      try {
        decoded = decodeURIComponent(rawSegment);
      } catch {
        throw invalid(`stream path segment "${rawSegment}" is not valid percent-encoding`, raw);
      }
      if (decoded.includes('/')) {
        throw invalid(`stream path segment "${rawSegment}" decodes to a "/" inside one segment`, raw);
      }
      segments[i] = decoded;
    }
    // Surrounding whitespace of the whole (decoded) path is trimmed too.
    segments[0] = segments[0]!.trimStart();
    segments[segments.length - 1] = segments[segments.length - 1]!.trimEnd();
    if (segments.length === 1 && segments[0] === '') return '/';
  }
  const out: string[] = [];
  for (const segment of segments) {
    // Text that is not well-formed Unicode has no UTF-8 form: such a stream could be created but no
    // URL could ever name it again (protocol §2).
    if (LONE_SURROGATE.test(segment)) {
      throw invalid(`stream path ${JSON.stringify(raw)} is not well-formed Unicode: it holds a lone UTF-16 surrogate`, raw);
    }
    if (FORBIDDEN_CHAR.test(segment)) {
      throw invalid(
        `stream path "${raw}" contains a character that paths may not use (?, #, \\, : or a control character)`,
        raw,
      );
    }
    if (segment === '') throw invalid(`stream path "${raw}" has an empty segment`, raw);
    if (segment === '.') continue;
    if (segment === '..') {
      if (out.length === 0) throw invalid(`stream path "${raw}" uses ".." to escape the root`, raw);
      out.pop();
      continue;
    }
    out.push(segment);
  }
  const path = `/${out.join('/')}`;
  if (path.length > Limits.pathMaxLength) {
    throw invalid(`stream path is longer than ${Limits.pathMaxLength} characters`, path.slice(0, 64));
  }
  return path;
}

/** True when `path` is `prefix` itself or lies below it (segment-wise). */
export function isPathUnder(path: string, prefix: string): boolean {
  if (prefix === '/') return true;
  return path === prefix || path.startsWith(`${prefix}/`);
}
