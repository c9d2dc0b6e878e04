import { defineConfig } from 'tsup'

// One package: the core, the adapters (Express, Koa, node:http, Fastify, Fetch, Hono), the stores (PostgreSQL, Redis) and the store conformance kit.
// `splitting` is on for both formats so the core is emitted once per format and shared by
// the other entries: an error thrown by the core is `instanceof GateError` whichever entry
// point the user imported it from.
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    express: 'adapters/express.ts',
    koa: 'adapters/koa.ts',
    node: 'adapters/node.ts',
    fastify: 'adapters/fastify.ts',
    fetch: 'adapters/fetch.ts',
    hono: 'adapters/hono.ts',
    postgres: 'src/store/postgres/store.ts',
    redis: 'src/store/redis/store.ts',
    testing: 'src/testing/index.ts',
    // The `open-data-gate` command (package.json `bin`); its shebang is the source's first line.
    cli: 'src/cli/index.ts',
  },
  format: ['esm', 'cjs'],
  // The Node mounts' declarations get `/// <reference types="node" />` after the build
  // (scripts/reference-node-types.mjs), and only they: the Fetch and Hono ones need no Node.
  dts: true,
  splitting: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
  treeshake: true,
})
