/**
 * The architecture rules of eslint.config.js, shown failing on probes: snippets linted as if they
 * were files of the server (ESLint's Node API, `lintText` with a `filePath`), each expected to be
 * refused by the rule named.
 */
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: ROOT });
});

/** The rule ids and messages ESLint reports for `code` as the file `path` (relative to the root). */
async function lint(path: string, code: string): Promise<Array<{ ruleId: string | null; message: string }>> {
  const [result] = await eslint.lintText(code, { filePath: `${ROOT}${path}` });
  return (result?.messages ?? []).map(({ ruleId, message }) => ({ ruleId, message }));
}

describe('time and randomness are ports', () => {
  const probes: Array<{ what: string; code: string; rule: string; says: RegExp }> = [
    { what: 'setTimeout', code: 'export const t = setTimeout(() => undefined, 10);\n', rule: 'no-restricted-globals', says: /timers are a port/ },
    { what: 'clearTimeout', code: 'export function stop(t: number): void {\n  clearTimeout(t);\n}\n', rule: 'no-restricted-globals', says: /timers are a port/ },
    { what: 'setInterval', code: 'export const t = setInterval(() => undefined, 10);\n', rule: 'no-restricted-globals', says: /timers are a port/ },
    { what: 'globalThis.setTimeout', code: 'export const t = globalThis.setTimeout(() => undefined, 10);\n', rule: 'no-restricted-syntax', says: /timers are a port/ },
    { what: 'Date.now()', code: 'export const now = Date.now();\n', rule: 'no-restricted-properties', says: /use the Clock/ },
    { what: 'new Date()', code: 'export const now = new Date().toISOString();\n', rule: 'no-restricted-syntax', says: /new Date\(clock\.now\(\)\)/ },
    { what: 'Math.random()', code: 'export const r = Math.random();\n', rule: 'no-restricted-properties', says: /use the Random/ },
    { what: 'crypto.randomUUID()', code: 'export const id = crypto.randomUUID();\n', rule: 'no-restricted-properties', says: /Random\.uuid\(\)/ },
    { what: 'globalThis.crypto.randomUUID()', code: 'export const id = globalThis.crypto.randomUUID();\n', rule: 'no-restricted-syntax', says: /Random\.uuid\(\)/ },
  ];

  for (const { what, code, rule, says } of probes) {
    it(`refuses ${what} in engine/ and core/`, async () => {
      for (const path of ['packages/server/src/engine/probe.ts', 'packages/server/src/core/probe.ts']) {
        const messages = await lint(path, code);
        expect(messages, `${what} in ${path}`).toContainEqual({ ruleId: rule, message: expect.stringMatching(says) });
      }
    });
  }

  it('accepts the same code through the ports, and time derived from a given instant', async () => {
    const code = [
      "import type { Clock, Random } from '../ports/clock.js';",
      "import type { Timer } from '../ports/timer.js';",
      'export function stamp(clock: Clock, random: Random, timer: Timer): string {',
      '  const cancel = timer.set(10, () => undefined);',
      '  cancel();',
      '  return `${new Date(clock.now()).toISOString()} ${Date.parse("2030-01-01")} ${random.uuid()} ${random.next()}`;',
      '}',
      '',
    ].join('\n');
    expect(await lint('packages/server/src/engine/probe.ts', code)).toEqual([]);
  });

  it('leaves the system implementations in ports/ and the hosts, and tests, alone', async () => {
    const code = 'export const at = Date.now() + Math.random();\nexport const t = setTimeout(() => undefined, 10);\n';
    for (const path of ['packages/server/src/ports/probe.ts', 'packages/server/src/hosts/node/probe.ts', 'packages/server/src/engine/probe.test.ts']) {
      expect(await lint(path, code), path).toEqual([]);
    }
  });
});

describe('no source file over 400 lines', () => {
  const lines = (n: number) => Array.from({ length: n }, (_, i) => `export const v${i} = ${i};`).join('\n') + '\n';

  it('accepts 400 lines and refuses 401, in every package, but not in tests', async () => {
    for (const path of ['packages/server/src/engine/probe.ts', 'packages/cli/src/probe.ts', 'packages/ui/src/probe.ts']) {
      expect(await lint(path, lines(400)), path).toEqual([]);
      expect(await lint(path, lines(401)), path).toContainEqual({ ruleId: 'max-lines', message: expect.stringMatching(/Maximum allowed is 400/) });
    }
    expect(await lint('packages/server/src/engine/probe.test.ts', lines(401))).toEqual([]);
  });
});
