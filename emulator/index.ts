// Public entry of the emulators: the first API's (`apimart`, the default provider) is what
// `../emulator/index.js` has always meant to tests, benchmarks and the CLI, so it is re-exported
// here; its code lives in emulator/apimart/ beside emulator/fal/, emulator/replicate/ and
// emulator/bfl/, all built on emulator/core/. Every provider by name: emulator/providers.ts.
export * from './apimart/index.js';
