/** The `rivulet` command line: one file per command under commands/. */
import { processIO, UsageError, type Command, type CommandIO } from './command.js';
import { appendCommand } from './commands/append.js';
import { compactCommand } from './commands/compact.js';
import { destroyCommand } from './commands/destroy.js';
import { lsCommand } from './commands/ls.js';
import { readCommand } from './commands/read.js';
import { DEFAULT_URL } from './commands/remote.js';
import { serveCommand } from './commands/serve.js';
import { stateCommand } from './commands/state.js';
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
  webhookSecretCommand,
  compactCommand,
];

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: rivulet <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `Every command but serve, webhook-secret and compact talks to the server at --url or RIVULET_URL (default ${DEFAULT_URL}),`,
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
    throw error;
  }
}
