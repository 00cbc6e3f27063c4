// The `pixelmill` command line's entry (bin/pixelmill.js runs the built copy). This is the one
// place that exits: client/program.ts has the commands and prints errors.
import { main } from './program.js';

process.exitCode = await main(process.argv);
