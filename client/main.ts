// The `pixelmill` command line's entry (bin/pixelmill.js runs the built copy). This is the one
// place that exits: client/program.ts has the commands and prints errors. A short command
// (validate, schema, plan) runs on a program of its own, which loads only what it needs.
import { commandName, SHORT_COMMANDS } from './program-root.js';

const short = SHORT_COMMANDS.has(commandName(process.argv) ?? '');
const { main } = short ? await import('./short-program.js') : await import('./program.js');
process.exitCode = await main(process.argv);
