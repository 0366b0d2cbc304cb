import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { chooseLogFormat, createNodeLogger, type LogFormat } from './logger.js';
import type { LogLevel } from '../../ports/logger.js';

/** A logger over a destination that keeps what it is given. */
function capture(options: { level?: LogLevel; format?: LogFormat; isTTY?: boolean }) {
  const written: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString('utf8'));
      done();
    },
  });
  const logger = createNodeLogger({ ...options, destination });
  // pino-pretty is a stream: its lines arrive after a turn of the event loop.
  const text = async (): Promise<string> => {
    await new Promise((resolve) => setImmediate(resolve));
    return written.join('');
  };
  return { logger, text };
}

describe('the Node host logger', () => {
  it('chooses readable lines on a terminal and JSON lines elsewhere, unless told', () => {
    expect(chooseLogFormat(undefined, true)).toBe('pretty');
    expect(chooseLogFormat(undefined, false)).toBe('json');
    expect(chooseLogFormat('json', true)).toBe('json');
    expect(chooseLogFormat('pretty', false)).toBe('pretty');
  });

  it('writes one JSON object per line off a terminal, with level name, time, message and fields', async () => {
    const { logger, text } = capture({ isTTY: false });
    logger.info!('subscription halted', { stream: '/a', subscriptionKey: 'k', afterOffset: 3 });
    const lines = (await text()).trim().split('\n');
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'info', msg: 'subscription halted', stream: '/a', subscriptionKey: 'k', afterOffset: 3 });
    expect(typeof line.time === 'string' && !Number.isNaN(Date.parse(line.time))).toBe(true);
    expect(Object.keys(line).sort()).toEqual(['afterOffset', 'level', 'msg', 'stream', 'subscriptionKey', 'time']);
  });

  it('writes readable lines on a terminal: no JSON, the level and the fields in words', async () => {
    const { logger, text } = capture({ isTTY: true });
    logger.warn!('request refused', { status: 401, code: 'UNAUTHENTICATED' });
    const out = await text();
    expect(out.trim().split('\n')[0]).toMatch(/WARN.*request refused/);
    expect(out).toContain('UNAUTHENTICATED');
    expect(() => JSON.parse(out) as unknown).toThrow();
  });

  it('an error line carries what was thrown under err, with its message and stack', async () => {
    const { logger, text } = capture({ format: 'json' });
    logger.error('internal error r1', new TypeError('boom'), { route: 'GET /x' });
    const line = JSON.parse(await text()) as { level: string; err: { type: string; message: string; stack: string }; route: string };
    expect([line.level, line.err.type, line.err.message, line.route]).toEqual(['error', 'TypeError', 'boom', 'GET /x']);
    expect(line.err.stack).toContain('TypeError: boom');
  });

  const levels: LogLevel[] = ['error', 'warn', 'info', 'debug'];
  it.each(levels)('at level %s writes that level and the more severe ones only', async (level) => {
    const { logger, text } = capture({ level, format: 'json' });
    logger.debug!('d');
    logger.info!('i');
    logger.warn!('w');
    logger.error('e', new Error('x'));
    const written = (await text())
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { level: string }).level);
    expect(written).toEqual(['debug', 'info', 'warn', 'error'].slice(['debug', 'info', 'warn', 'error'].indexOf(level)));
  });
});
