#!/usr/bin/env node
// After tsup: the declarations of the mounts built on Node (node:http, Express, Koa, Fastify)
// say that they need Node's types, so a project with no `types` list (TypeScript 7's default)
// loads them. Only those: the core's, the Fetch adapter's and Hono's need nothing from Node, so
// a Bun or Deno project type-checks them without @types/node. (A `/// <reference>` written in
// the sources does not survive tsup's declaration bundling, and its `banner` goes on every file.)
import { readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'

const REFERENCE = '/// <reference types="node" />\n'
const dist = resolve(import.meta.dirname, '..', 'dist')
for (const entry of ['node', 'express', 'koa', 'fastify']) {
  for (const extension of ['d.ts', 'd.cts']) {
    const file = resolve(dist, `${entry}.${extension}`)
    const text = readFileSync(file, 'utf8')
    if (!text.startsWith(REFERENCE)) writeFileSync(file, REFERENCE + text)
  }
}
