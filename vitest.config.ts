import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Tests start real servers on ephemeral loopback ports; a slow CI core must not fail them.
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
