import { describe, expect, it } from 'vitest';
import type { LogLevel } from '../../ports/logger.js';
import { createWorkerLogger, workerLogLevel } from './logger.js';

function capture(level?: LogLevel) {
  const lines: Array<{ method: LogLevel; line: Record<string, unknown> }> = [];
  const sink = (method: LogLevel) => (text: string) => lines.push({ method, line: JSON.parse(text) as Record<string, unknown> });
  const at = new Date('2026-12-01T10:00:00.000Z');
  const logger = createWorkerLogger(level, { error: sink('error'), warn: sink('warn'), info: sink('info'), debug: sink('debug') }, () => at);
  return { logger, lines };
}

describe('the Worker host logger', () => {
  it('writes one JSON object per line with the Node host fields, each level through its own console method', () => {
    const { logger, lines } = capture('debug');
    logger.info!('subscription halted', { stream: '/a', subscriptionKey: 'k' });
    logger.warn!('request refused', { status: 401 });
    logger.debug!('detail');
    logger.error('internal error r1', new TypeError('boom'), { route: 'GET /x' });
    expect(lines.map((l) => [l.method, l.line.level, l.line.msg])).toEqual([
      ['info', 'info', 'subscription halted'],
      ['warn', 'warn', 'request refused'],
      ['debug', 'debug', 'detail'],
      ['error', 'error', 'internal error r1'],
    ]);
    expect(lines[0]!.line).toEqual({ level: 'info', time: '2026-12-01T10:00:00.000Z', msg: 'subscription halted', stream: '/a', subscriptionKey: 'k' });
    expect(lines[3]!.line.err).toMatchObject({ type: 'TypeError', message: 'boom' });
    expect((lines[3]!.line.err as { stack: string }).stack).toContain('boom');
  });

  it('drops lines below its level, also after the level changes', () => {
    const { logger, lines } = capture('warn');
    logger.info!('dropped');
    logger.warn!('kept');
    logger.setLevel('error');
    logger.warn!('dropped too');
    logger.error('kept too', 'text');
    expect(lines.map((l) => [l.line.msg, l.line.err])).toEqual([
      ['kept', undefined],
      ['kept too', 'text'],
    ]);
  });

  it('keeps the line when its fields cannot be written as JSON', () => {
    const { logger, lines } = capture();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    logger.info!('still here', cyclic);
    expect(lines.map((l) => [l.line.msg, l.line.fieldsError])).toEqual([['still here', 'the fields of this line could not be written as JSON']]);
  });

  it('reads RIVULET_LOG_LEVEL, defaulting to info and refusing an unknown level', () => {
    expect([workerLogLevel(undefined), workerLogLevel(''), workerLogLevel('debug')]).toEqual(['info', 'info', 'debug']);
    expect(() => workerLogLevel('verbose')).toThrow('RIVULET_LOG_LEVEL must be one of error, warn, info, debug, got "verbose"');
  });
});
