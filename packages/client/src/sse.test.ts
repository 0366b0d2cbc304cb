import { describe, expect, it } from 'vitest';
import { readSse, SseParser, type SseMessage } from './sse.js';

function parseAll(chunks: string[]): { messages: SseMessage[]; parser: SseParser } {
  const parser = new SseParser();
  const messages = chunks.flatMap((chunk) => parser.push(chunk));
  return { messages, parser };
}

function bodyOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
}

const frames = 'id: 1\nevent: event\ndata: {"offset":1}\n\nid: 2\nevent: event\ndata: {"offset":2}\n\n';

describe('SseParser', () => {
  it('parses the frames the server sends', () => {
    const { messages } = parseAll([': rivulet tail\nretry: 1000\n\n', frames, 'event: destroyed\ndata: {}\n\n']);
    expect(messages).toEqual([
      { event: 'event', data: '{"offset":1}', lastEventId: '1' },
      { event: 'event', data: '{"offset":2}', lastEventId: '2' },
      { event: 'destroyed', data: '{}', lastEventId: '2' },
    ]);
  });

  it('gives the same messages however the text is split', () => {
    const whole = parseAll([frames]).messages;
    for (let size = 1; size <= 7; size++) {
      const chunks: string[] = [];
      for (let i = 0; i < frames.length; i += size) chunks.push(frames.slice(i, i + size));
      expect(parseAll(chunks).messages).toEqual(whole);
    }
  });

  it('accepts CRLF, CR and LF line ends, including a CRLF split across chunks', () => {
    const expected = [{ event: 'a', data: 'x', lastEventId: '' }];
    expect(parseAll(['event: a\r\ndata: x\r\n\r\n']).messages).toEqual(expected);
    expect(parseAll(['event: a\rdata: x\r\r']).messages).toEqual(expected);
    expect(parseAll(['event: a\r', '\ndata: x\r', '\n\r', '\n']).messages).toEqual(expected);
  });

  it('a CR at a chunk end followed by another line is one line end, not two', () => {
    const { messages } = parseAll(['data: x\r', 'data: y\n\n']);
    expect(messages).toEqual([{ event: 'message', data: 'x\ny', lastEventId: '' }]);
  });

  it('joins data lines with "\\n", drops only one leading space, and keeps an empty data line', () => {
    const { messages } = parseAll(['data:  two spaces\ndata\ndata:last\n\n', 'data:\n\n']);
    expect(messages).toEqual([
      { event: 'message', data: ' two spaces\n\nlast', lastEventId: '' },
      { event: 'message', data: '', lastEventId: '' },
    ]);
  });

  it('ignores comments, unknown fields and a frame without data, but keeps its id', () => {
    const { messages } = parseAll([': hello\nfoo: bar\nid: 9\nevent: x\n\ndata: d\n\n']);
    expect(messages).toEqual([{ event: 'message', data: 'd', lastEventId: '9' }]);
  });

  it('ignores an id containing NUL and a non-numeric retry', () => {
    const { messages, parser } = parseAll(['id: 3\nretry: 250\n\nid: 4\u00005\nretry: 1s\ndata: d\n\n']);
    expect(messages).toEqual([{ event: 'message', data: 'd', lastEventId: '3' }]);
    expect(parser.retryMs).toBe(250);
  });

  it('strips a leading byte order mark once', () => {
    const { messages } = parseAll(['\ufeffdata: a\n\n', '\ufeffdata: b\n\n']);
    expect(messages.map((m) => m.data)).toEqual(['a']);
  });

  it('never dispatches an unterminated frame', () => {
    expect(parseAll(['id: 1\nevent: event\ndata: {"offset":1}\n']).messages).toEqual([]);
  });
});

describe('readSse', () => {
  it('decodes UTF-8 split inside a character and drops a truncated last frame', async () => {
    const bytes = new TextEncoder().encode('data: caf\u00e9 \u{1f30a}\n\ndata: cut');
    const chunks = Array.from(bytes, (b) => Uint8Array.of(b));
    const out: SseMessage[] = [];
    for await (const m of readSse(bodyOf(chunks))) out.push(m);
    expect(out).toEqual([{ event: 'message', data: 'caf\u00e9 \u{1f30a}', lastEventId: '' }]);
  });

  it('cancels the body when the consumer stops early', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('data: 1\n\ndata: 2\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const m of readSse(body)) {
      expect(m.data).toBe('1');
      break;
    }
    expect(cancelled).toBe(true);
  });
});
