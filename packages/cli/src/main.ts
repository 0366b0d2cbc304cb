/** The `rivulet` command line: one file per command under commands/. */
import { RivuletError } from '@rivulet/contract';
import { processIO, UsageError, type Command, type CommandIO } from './command.js';
import { appendCommand } from './commands/append.js';
import { backupCommand } from './commands/backup.js';
import { compactCommand } from './commands/compact.js';
import { destroyCommand } from './commands/destroy.js';
import { exportCommand } from './commands/export.js';
import { importCommand } from './commands/import.js';
import { lsCommand } from './commands/ls.js';
import { readCommand } from './commands/read.js';
import { restoreCommand } from './commands/restore.js';
import { DEFAULT_URL } from './commands/remote.js';
import { serveCommand } from './commands/serve.js';
import { stateCommand } from './commands/state.js';
import { subscribeCommand } from './commands/subscribe.js';
import { subscriptionsCommand } from './commands/subscriptions.js';
import { tailCommand } from './commands/tail.js';
import { webhookSecretCommand } from './commands/webhook-secret.js';

export const commands: Command[] = [
  serveCommand,
  appendCommand,
  readCommand,
  tailCommand,
  stateCommand,
  lsCommand,
  destroyCommand,
  exportCommand,
  importCommand,
  subscriptionsCommand,
  subscribeCommand,
  webhookSecretCommand,
  compactCommand,
  backupCommand,
  restoreCommand,
];

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: rivulet <command> [options]',
    '       rivulet --version',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `Every command but serve, webhook-secret, compact and restore talks to the server at --url or RIVULET_URL (default ${DEFAULT_URL}),`,
    'with --token / RIVULET_TOKEN and --project / RIVULET_PROJECT, and prints JSON with --json.',
    'Run "rivulet <command> --help" for the options of one command.',
  ].join('\n');
}

export async function main(argv: string[], io: CommandIO = processIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(help());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-V') {
    // The server package knows its release and the storage format it writes (protocol §16.4);
    // its release entry has them without loading the Node host.
    const { VERSION, FORMAT_VERSION } = await import('@rivulet/server/release');
    io.out(`rivulet ${VERSION} (storage format ${FORMAT_VERSION})`);
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    io.err(`rivulet: unknown command "${name}"\n\n${help()}`);
    return 2;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`rivulet ${command.name}: ${error.message}\n\n${command.usage}`);
      return 2;
    }
    // What the server refuses outside a client call (serve on a data folder of a newer storage
    // format, say) is one line and exit 1, as a client command reports it (commands/remote.ts).
    if (error instanceof RivuletError) {
      io.err(`rivulet ${command.name}: ${error.code} ${error.message}`);
      return 1;
    }
    throw error;
  }
}
