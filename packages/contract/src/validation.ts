/**
 * Turning a schema failure into the one error type: a readable message naming the field, and the
 * issue list as details. Used at every edge (HTTP bodies and queries, RPC arguments, event payloads).
 */
import type { z } from 'zod';
import { RivuletError } from './errors.js';

function describePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    out += typeof part === 'number' ? `[${part}]` : out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/**
 * A union failure says only "invalid input"; the branch that came closest (fewest issues) says
 * what is actually wrong, with paths relative to the union.
 */
function unwrapUnions(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  return issues.flatMap((issue) => {
    if (issue.code !== 'invalid_union' || !('errors' in issue) || issue.errors.length === 0) return [issue];
    const closest = [...issue.errors].sort((a, b) => a.length - b.length)[0]!;
    if (closest.length === 0) return [issue];
    return unwrapUnions(closest.map((inner) => ({ ...inner, path: [...issue.path, ...inner.path] })));
  });
}

export function issuesToError(raw: readonly z.core.$ZodIssue[], where?: string): RivuletError {
  const issues = unwrapUnions(raw);
  const lines = issues.slice(0, 10).map((issue) => {
    const at = describePath(issue.path);
    const prefix = [where, at].filter(Boolean).join(at && where ? '.' : '');
    return prefix ? `${prefix}: ${issue.message}` : issue.message;
  });
  const more = issues.length > 10 ? ` (and ${issues.length - 10} more)` : '';
  return new RivuletError(
    'INVALID_INPUT',
    lines.join('; ') + more,
    issues.slice(0, 50).map((i) => ({ path: describePath(i.path), code: i.code, message: i.message })),
  );
}

/** Parse with a schema or throw INVALID_INPUT naming the offending field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, where?: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw issuesToError(result.error.issues, where);
  return result.data;
}
