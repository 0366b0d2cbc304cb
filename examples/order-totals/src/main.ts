/**
 * Runs the order-totals demo against a local server:
 *
 *   npx --no-install rivulet serve            # in another terminal
 *   npm start --prefix examples/order-totals  # or: node examples/order-totals/dist/main.js
 *
 * Environment: RIVULET_URL (default http://127.0.0.1:7420), RIVULET_TOKEN, RIVULET_PROJECT,
 * ORDER_TOTALS_DB (default ./.order-totals/state.db). `--serve` keeps hosting the processor
 * afterwards (append more orders with the CLI and watch the totals move) until Ctrl-C.
 */
import { resolve } from 'node:path';
import { runOrderTotalsDemo } from './demo.js';

const keepServing = process.argv.includes('--serve');
const result = await runOrderTotalsDemo({
  url: process.env.RIVULET_URL ?? 'http://127.0.0.1:7420',
  token: process.env.RIVULET_TOKEN,
  projectId: process.env.RIVULET_PROJECT,
  dbPath: resolve(process.env.ORDER_TOTALS_DB ?? '.order-totals/state.db'),
  keepServing,
  log: (line) => console.log(line),
});
if (keepServing) {
  console.log('hosting until Ctrl-C');
  process.once('SIGINT', () => void result.stop().then(() => process.exit(0)));
}
