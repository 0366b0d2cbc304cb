#!/usr/bin/env node
import { main } from '../dist/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (error) => {
    console.error(`rivulet: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
