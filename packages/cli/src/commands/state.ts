/** `rivulet state`: the reduced core state and runtime state of a stream (protocol §6.2). */
import { stateText } from './format.js';
import { connectionUsage, remoteCommand } from './remote.js';

const usage = `Usage: rivulet state PATH

Prints the state of the stream at PATH: identity, head, pause, subscriptions with their delivery
progress, inbound copies and open connections. --json prints {"core", "runtime"} as the server
answers it ({"core": null, "runtime": null} for a stream that does not exist).

${connectionUsage}`;

export const stateCommand = remoteCommand(
  { name: 'state', summary: 'show the state of a stream (subscriptions, delivery progress)', usage, positionals: ['PATH'] },
  async ({ values, args: [path], io, client }) => {
    const state = await client().state(path);
    io.out(values.json ? JSON.stringify(state) : stateText(path, state));
    return 0;
  },
);
