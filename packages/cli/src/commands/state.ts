/** `rivulet state`: the reduced core state and runtime state of a stream (protocol §6.2). */
import { parse, type Command } from '../command.js';
import { stateText } from './format.js';
import { clientFrom, connectionOptions, connectionUsage, expectPositionals, reportErrors, type RemoteIO } from './remote.js';

const usage = `Usage: rivulet state PATH

Prints the state of the stream at PATH: identity, head, pause, subscriptions with their delivery
progress, inbound copies and open connections. --json prints {"core", "runtime"} as the server
answers it ({"core": null, "runtime": null} for a stream that does not exist).

${connectionUsage}`;

export const stateCommand: Command = {
  name: 'state',
  summary: 'show the state of a stream (subscriptions, delivery progress)',
  usage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, connectionOptions);
    if (values.help) {
      io.out(usage);
      return 0;
    }
    const [path] = expectPositionals(positionals, ['PATH']) as [string];
    const client = clientFrom(values, io.env);
    return reportErrors('state', io, async () => {
      const state = await client.state(path);
      io.out(values.json ? JSON.stringify(state) : stateText(path, state));
      return 0;
    });
  },
};
