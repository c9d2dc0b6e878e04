#!/usr/bin/env node
/**
 * SECURITY.md maps every rule to the test that shows it, as `test/file.test.ts › test name`.
 * This check fails the build when a mapped file or test no longer exists, so a renamed or
 * deleted test cannot leave the security document pointing at nothing.
 *
 * Test names are read from the test files' syntax tree (TypeScript's parser): the title of
 * every `it(...)`/`test(...)` call, including `it.each(...)(...)`, `it.skipIf(...)(...)`,
 * `it.only(...)` and the like, as written (for it.each, the template with its `%s`; for a
 * template literal, its text between the backquotes, `${...}` included). A
 * string that merely appears in a file (a describe name, a fixture, a comment) does not
 * count, nor does a test marked `.skip`, `.todo` or `.fails` (it shows nothing). Every
 * row of a table whose last column is headed "test" or "tests" must name at least one
 * test, so a rule cannot sit in the map without one.
 *
 * `node scripts/check-security-map.mjs --list test/file.test.ts` prints the test names of a
 * file the way SECURITY.md writes them.
 */
import { readFileSync, existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = fileURLToPath(new URL('..', import.meta.url))

/** The titles of the tests a file declares, as written in the source. */
function testTitles(file) {
  const source = ts.createSourceFile(file, readFileSync(`${root}${file}`, 'utf8'), ts.ScriptTarget.Latest, true)
  const titles = new Set()
  // it, it.each(...), it.skipIf(...), it.only, test.concurrent, ...: the root name, and
  // whether the chain says the test never runs or is expected to fail (skip, todo, fails).
  const callee = (expression) => {
    let inert = false
    while (true) {
      if (ts.isIdentifier(expression)) return { name: expression.text, inert }
      if (ts.isPropertyAccessExpression(expression)) {
        if (['skip', 'todo', 'fails'].includes(expression.name.text)) inert = true
        expression = expression.expression
      } else if (ts.isCallExpression(expression)) expression = expression.expression
      else return { name: undefined, inert }
    }
  }
  const visit = (node) => {
    const call = ts.isCallExpression(node) ? callee(node.expression) : undefined
    if (call !== undefined && ['it', 'test'].includes(call.name ?? '') && !call.inert) {
      const [first] = node.arguments
      if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) titles.add(first.text)
      // A template with substitutions, as written between its backquotes: `runs ${RUNS.core} cases`.
      else if (first && ts.isTemplateExpression(first)) titles.add(first.getText(source).slice(1, -1))
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return titles
}

if (process.argv[2] === '--list') {
  for (const file of process.argv.slice(3)) for (const title of testTitles(file)) console.log(`\`${file}\` › ${title}`)
  process.exit(0)
}

const doc = readFileSync(`${root}SECURITY.md`, 'utf8')
// `test/x.test.ts` › title, up to the end of the table cell, a `;` followed by another
// reference, or the end of the line. A `|` inside a title is written `\|`.
const reference = /`(test\/[^`]+\.ts)` › ((?:\\\||[^|\n])+?)\s*(?=\||;\s*`test\/|$)/gm
const problems = []
const titles = new Map()
let count = 0
for (const [, file, rawTitle] of doc.matchAll(reference)) {
  count++
  const title = rawTitle.replace(/\\\|/g, '|').trim()
  if (!existsSync(`${root}${file}`)) {
    problems.push(`${file} does not exist (for "${title}")`)
    continue
  }
  if (!titles.has(file)) titles.set(file, testTitles(file))
  if (!titles.get(file).has(title)) problems.push(`${file} has no test named "${title}"`)
}

// Every row of a mapping table names a test.
let mapping = false
for (const [index, line] of doc.split('\n').entries()) {
  if (!line.startsWith('|')) {
    mapping = false
    continue
  }
  const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim())
  if (/^-+$/.test(cells[0]?.replace(/:/g, '') ?? '')) continue
  if (!mapping && /^tests?$/i.test(cells.at(-1) ?? '')) {
    mapping = true
    continue
  }
  if (mapping && !/`test\/[^`]+\.ts` › /.test(cells.at(-1) ?? '')) {
    problems.push(`SECURITY.md line ${index + 1} maps a rule to no test: ${line.slice(0, 100)}`)
  }
}

if (count === 0) problems.push('SECURITY.md maps no rule to a test')
if (problems.length > 0) {
  console.error(`SECURITY.md does not hold together:\n- ${problems.join('\n- ')}`)
  process.exit(1)
}
console.log(`SECURITY.md: ${count} references to tests, each to a test that exists`)
