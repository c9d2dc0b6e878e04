import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  resolve: {
    // The examples import the package by name, as users do; tests run them on the sources,
    // never on a stale dist/.
    alias: [
      { find: /^open-data-gate$/, replacement: here('./src/index.ts') },
      { find: /^open-data-gate\/testing$/, replacement: here('./src/testing/index.ts') },
      { find: /^open-data-gate\/(express|koa|node|fastify|fetch|hono)$/, replacement: here('./adapters/$1.ts') },
      { find: /^open-data-gate\/postgres$/, replacement: here('./src/store/postgres/store.ts') },
      { find: /^open-data-gate\/redis$/, replacement: here('./src/store/redis/store.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Bun and Deno for test/runtimes.test.ts come from test/runtimes/package.json, installed
    // there when missing (they are not devDependencies: `npm ci` stays small).
    // dist/, for the tests of the built command and package, built once when it is missing.
    globalSetup: ['./test/support/install-runtimes.ts', './test/support/build-once.ts'],
    // Tests start real servers on ephemeral loopback ports; a slow CI core must not fail them.
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
