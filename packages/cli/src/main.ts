/** The `rivulet` command line: one file per command under commands/. */
import { processIO, UsageError, type Command, type CommandIO } from './command.js';
import { serveCommand } from './commands/serve.js';

export const commands: Command[] = [serveCommand];

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: rivulet <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
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
