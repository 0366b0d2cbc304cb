/**
 * Raw HTTP/1.1 over one socket for end-to-end tests that must see answers byte for byte (the
 * connection front writes its own): sends the given request bytes, reads `count` answers framed
 * by Content-Length (a 204 has none and no body), and closes the socket.
 */
import { connect } from 'node:net';

export interface RawAnswer {
  status: number;
  /** Header lines as sent, lower-cased names, in order (a name may repeat). */
  fields: Array<[string, string]>;
  body: string;
}

export function rawAnswers(url: string, requests: string, count: number): Promise<RawAnswer[]> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let buffer = Buffer.alloc(0);
    const answers: RawAnswer[] = [];
    const parse = (): void => {
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const [statusLine, ...lines] = buffer.toString('latin1', 0, end).split('\r\n');
        const fields = lines.map((line): [string, string] => {
          const colon = line.indexOf(':');
          return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
        });
        const status = Number(statusLine!.split(' ')[1]);
        const length = Number(fields.find(([n]) => n === 'content-length')?.[1] ?? '0');
        if (buffer.length < end + 4 + length) return;
        answers.push({ status, fields, body: buffer.toString('utf8', end + 4, end + 4 + length) });
        buffer = buffer.subarray(end + 4 + length);
        if (answers.length === count) {
          socket.destroy();
          resolve(answers);
          return;
        }
      }
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      parse();
    });
    socket.on('error', reject);
    socket.on('close', () => {
      if (answers.length < count) reject(new Error(`closed after ${answers.length} of ${count} answers; unread ${JSON.stringify(buffer.toString('latin1'))}`));
    });
    socket.write(requests);
  });
}
