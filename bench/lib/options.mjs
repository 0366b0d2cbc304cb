/**
 * Command-line options of the bench scripts: node:util's parseArgs with the conventions they share.
 * `-h`/`--help` prints the usage and exits 0; an unknown option or a bad value is one line on
 * stderr (then the usage) and exit 2, never a stack trace.
 */
import { parseArgs } from 'node:util';

/** parseArgs(config) with a `help` option added; answers its result, or exits as above. */
export function parseOptions(config, usage) {
  let parsed;
  try {
    parsed = parseArgs({ ...config, options: { ...config.options, help: { type: 'boolean', short: 'h', default: false } } });
  } catch (error) {
    console.error(`${error.message}\n\n${usage}`);
    process.exit(2);
  }
  if (parsed.values.help) {
    console.log(usage);
    process.exit(0);
  }
  return parsed;
}

/** The whole number ≥ 1 given as option `name`, or a one-line refusal and exit 2. */
export function positiveInteger(values, name) {
  const n = Number(values[name]);
  if (!Number.isSafeInteger(n) || n < 1) {
    console.error(`--${name} must be a whole number of at least 1, not "${values[name]}"`);
    process.exit(2);
  }
  return n;
}
