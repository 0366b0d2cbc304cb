/**
 * Authentication and project scope (protocol §8).
 * - Open mode (no tokens; the host refuses it on a public address): every caller is admin.
 * - Tokens file: lines "TOKEN PROJECT_ID"; project "*" is admin. A project token reaches only its
 *   project; an admin names a project with X-Project-Id (absent = deployment-wide, projectId null).
 */
import { RivuletError } from '@rivulet/contract';

export const PROJECT_ID_PATTERN = /^[a-z0-9_-]{1,64}$/;

export interface Principal {
  admin: boolean;
  /** The project every stream operation of this request is scoped to (null = deployment-wide). */
  projectId: string | null;
}

export type TokenTable = ReadonlyMap<string, string>;

export function parseTokensFile(text: string, source = 'tokens file'): Map<string, string> {
  const tokens = new Map<string, string>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const parts = line.split(/\s+/);
    const where = `${source} line ${index + 1}`;
    if (parts.length !== 2) throw new Error(`${where}: expected "TOKEN PROJECT_ID", got ${parts.length} fields`);
    const [token, project] = parts as [string, string];
    if (token.length < 16) throw new Error(`${where}: tokens must be at least 16 characters`);
    if (project !== '*' && !PROJECT_ID_PATTERN.test(project)) {
      throw new Error(`${where}: project id "${project}" must be 1–64 characters of a-z, 0-9, "-", "_" (or "*" for admin)`);
    }
    if (tokens.has(token)) throw new Error(`${where}: duplicate token`);
    tokens.set(token, project);
  });
  if (tokens.size === 0) throw new Error(`${source}: no tokens found`);
  return tokens;
}

export function authenticate(
  headers: { get(name: string): string | null },
  tokens: TokenTable | null,
): Principal {
  const requested = headers.get('x-project-id');
  if (requested !== null && !PROJECT_ID_PATTERN.test(requested)) {
    throw new RivuletError('INVALID_INPUT', 'X-Project-Id must be 1–64 characters of a-z, 0-9, "-", "_"');
  }
  if (tokens === null) return { admin: true, projectId: requested };
  const header = headers.get('authorization');
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match) throw new RivuletError('UNAUTHENTICATED', 'missing token: send Authorization: Bearer <token>');
  const project = tokens.get(match[1]!);
  if (project === undefined) throw new RivuletError('UNAUTHENTICATED', 'unknown token');
  if (project === '*') return { admin: true, projectId: requested };
  if (requested !== null && requested !== project) {
    throw new RivuletError('FORBIDDEN', `this token belongs to project "${project}"; it cannot act for project "${requested}"`);
  }
  return { admin: false, projectId: project };
}
