// Preloaded by `npm start` (`node --import ./src/compile-cache.js src/server.ts`), before the
// service's first module: Node keeps the TypeScript it strips and the bytecode it compiles in a
// cache directory (NODE_COMPILE_CACHE, else <tmpdir>/node-compile-cache) and reuses them on the next
// start. A process started from a warm cache neither loads the type stripper (a 3.7 MB bundle and
// its WebAssembly instance, which stay resident) nor compiles the modules again. This file is
// JavaScript because a TypeScript preload would itself load the stripper.
// An unwritable directory only disables the cache.
import module from 'node:module';

module.enableCompileCache();
