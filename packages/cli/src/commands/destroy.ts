/**
 * `rivulet destroy`: erase a stream and every event of it (protocol §6.3). Irreversible, so it
 * asks for --yes every time rather than guessing whether someone is there to answer a prompt.
 */
import { UsageError } from '../command.js';
import { connectionUsage, remoteCommand } from './remote.js';

const usage = `Usage: rivulet destroy PATH --yes

Erases the stream at PATH: every event, its state and its subscriptions. Open tails end. The next
append starts a new stream (a new stream id, offsets from 1 again). This cannot be undone.

Options:
  --yes            confirm; nothing is erased without it

${connectionUsage}`;

export const destroyCommand = remoteCommand(
  { name: 'destroy', summary: 'erase a stream and all of its events', usage, positionals: ['PATH'], options: { yes: { type: 'boolean' } } },
  async ({ values, args: [path], io, client }) => {
    if (!values.yes) throw new UsageError(`refusing to destroy ${path} without --yes (it erases every event)`);
    const answer = await client().destroy(path);
    io.out(values.json ? JSON.stringify(answer) : `destroyed ${path}`);
    return 0;
  },
);
