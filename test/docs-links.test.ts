/**
 * Every link in the documentation resolves: README.md, CONTRIBUTING.md, SECURITY.md, CHANGELOG.md and
 * docs/, the API reference TypeDoc generates into docs/reference/api/ included. A relative link must name a file or folder of the
 * repository, and a `#fragment` must name a heading (or an HTML `id`) of its target, slugged
 * as GitHub slugs headings. Links to other sites are not fetched.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import GithubSlugger from 'github-slugger'
import { Lexer, type Token, type Tokens } from 'marked'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** The Markdown files whose links are checked, relative to the root. */
function documents(): string[] {
  const found = ['README.md', 'CONTRIBUTING.md', 'SECURITY.md', 'CHANGELOG.md']
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      const path = `${dir}/${name}`
      if (statSync(join(ROOT, path)).isDirectory()) walk(path)
      else if (name.endsWith('.md')) found.push(path)
    }
  }
  walk('docs')
  return found
}

/** The text a heading shows: its Markdown with the markup taken off, as GitHub slugs it. */
function plainText(tokens: Token[]): string {
  return tokens
    .map((token) => {
      if ('tokens' in token && Array.isArray(token.tokens) && token.type !== 'codespan') return plainText(token.tokens)
      if (token.type === 'html') return ''
      return 'text' in token && typeof token.text === 'string' ? decodeEntities(token.text) : ''
    })
    .join('')
}

function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[name] ?? '')
}

interface Parsed {
  readonly anchors: Set<string>
  readonly links: Array<{ readonly href: string; readonly text: string }>
}

/** The anchors a Markdown text defines and the links it makes. */
function parseMarkdown(markdown: string): Parsed {
  const slugger = new GithubSlugger()
  const anchors = new Set<string>()
  const links: Array<{ href: string; text: string }> = []
  const tokens = new Lexer({ gfm: true }).lex(markdown)
  const visit = (list: Token[]): void => {
    for (const token of list) {
      if (token.type === 'heading') anchors.add(slugger.slug(plainText((token as Tokens.Heading).tokens)))
      if (token.type === 'link' || token.type === 'image') links.push({ href: (token as Tokens.Link).href, text: token.raw })
      if (token.type === 'html') for (const [, id] of token.raw.matchAll(/\s(?:id|name)="([^"]+)"/g)) anchors.add(id as string)
      if (token.type === 'list') visit((token as Tokens.List).items)
      if (token.type === 'table') {
        const table = token as Tokens.Table
        for (const cell of [...table.header, ...table.rows.flat()]) visit(cell.tokens)
      }
      if ('tokens' in token && Array.isArray(token.tokens)) visit(token.tokens)
    }
  }
  visit(tokens)
  return { anchors, links }
}

const parsed = new Map<string, Parsed>()
function parseFile(path: string): Parsed {
  let result = parsed.get(path)
  if (result === undefined) {
    result = parseMarkdown(readFileSync(join(ROOT, path), 'utf8'))
    parsed.set(path, result)
  }
  return result
}

/** What is wrong with one link of `from` (a path relative to the root), or undefined. */
function brokenLink(from: string, href: string, read: (path: string) => Parsed = parseFile): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href)) return undefined // another site, mailto: and the like
  const hash = href.indexOf('#')
  const pathPart = decodeURIComponent((hash === -1 ? href : href.slice(0, hash)).replace(/\?.*$/, ''))
  const fragment = hash === -1 ? undefined : decodeURIComponent(href.slice(hash + 1))
  const target = pathPart === '' ? from : relative(ROOT, resolve(ROOT, dirname(from), pathPart))
  if (target.startsWith('..')) return `${href} leaves the repository`
  if (!existsSync(join(ROOT, target))) return `${href}: no file ${target}`
  if (fragment === undefined) return undefined
  if (!target.endsWith('.md')) return `${href}: an anchor into ${target}, which is not Markdown`
  if (!read(target).anchors.has(fragment)) return `${href}: ${target} has no heading #${fragment}`
  return undefined
}

/** The repository's tracked text files under `dirs`, relative to the root. */
function sourceFiles(dirs: string[]): string[] {
  const found: string[] = []
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      const path = `${dir}/${name}`
      if (['node_modules', 'dist', 'api', '.readme-snippets'].includes(name)) continue
      if (statSync(join(ROOT, path)).isDirectory()) walk(path)
      else if (/\.(ts|mts|mjs|js|md|sql|json)$/.test(name)) found.push(path)
    }
  }
  for (const dir of dirs) walk(dir)
  return found
}

describe('the citations', () => {
  const files = [...sourceFiles(['src', 'adapters', 'test', 'scripts', 'examples', 'bench', 'docs']), 'README.md', 'CONTRIBUTING.md', 'SECURITY.md', 'CHANGELOG.md']

  it('cite no file outside the repository: no path into a shared folder, no spec file name', () => {
    // Built from pieces, so that this file does not find itself.
    const outside = new RegExp(['shared', '/(reference|spec)/|', '000', '_cae'].join(''))
    const found = files.filter((file) => outside.test(readFileSync(join(ROOT, file), 'utf8')))
    expect(found).toEqual([])
  })

  it('name in every @see a Markdown file that exists', () => {
    const missing: string[] = []
    for (const file of files.filter((name) => /\.(ts|mts|mjs|js)$/.test(name))) {
      for (const [, line] of readFileSync(join(ROOT, file), 'utf8').matchAll(/@see\s+([^\n]*)/g)) {
        for (const [path] of (line as string).matchAll(/[\w./-]+\.md\b/g)) {
          if (!existsSync(join(ROOT, path))) missing.push(`${file}: ${path}`)
        }
      }
    }
    expect(missing).toEqual([])
  })
})

describe('the documentation links', () => {
  const files = documents()

  it('covers the README, CONTRIBUTING.md, SECURITY.md and every page of docs/, the generated API reference too', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'CONTRIBUTING.md', 'SECURITY.md', 'CHANGELOG.md', 'docs/README.md', 'docs/security.md']))
    expect(files).toEqual(expect.arrayContaining(['docs/reference/api/README.md', 'docs/reference/api/open-data-gate/interfaces/RateResult.md']))
  })

  it.each(files)('resolves every link of %s, #anchors included', (file) => {
    const problems = parseFile(file)
      .links.map(({ href, text }) => {
        const problem = brokenLink(file, href)
        return problem === undefined ? undefined : `${text} → ${problem}`
      })
      .filter((problem) => problem !== undefined)
    expect(problems).toEqual([])
  })

  it('slugs headings as GitHub does: code and punctuation dropped, repeats numbered', () => {
    const { anchors } = parseMarkdown(
      '# The `open-data-gate` command\n\n## `req.gate` / `ctx.state.gate`\n\n## Token, revocation and metadata\n\n## Soak\n\n## Soak\n\n<a id="kept"></a>\n',
    )
    expect([...anchors]).toEqual(['the-open-data-gate-command', 'reqgate--ctxstategate', 'token-revocation-and-metadata', 'soak', 'soak-1', 'kept'])
  })

  it('finds a link to a missing file, a missing heading, and one out of the repository', () => {
    const page = (markdown: string) => () => parseMarkdown(markdown)
    expect(brokenLink('docs/README.md', 'guides/nowhere.md')).toMatch(/no file docs\/guides\/nowhere\.md/)
    expect(brokenLink('docs/README.md', '../README.md#no-such-heading')).toMatch(/has no heading #no-such-heading/)
    expect(brokenLink('docs/README.md', '#elsewhere', page('# Here\n'))).toMatch(/has no heading #elsewhere/)
    expect(brokenLink('docs/README.md', '#here', page('# Here\n'))).toBeUndefined()
    expect(brokenLink('README.md', '../outside.md')).toMatch(/leaves the repository/)
    expect(brokenLink('README.md', 'https://example.org/#anything')).toBeUndefined()
    // A link inside code is not a link.
    expect(parseMarkdown('`[x](nowhere.md)`\n\n```md\n[y](nowhere.md)\n```\n').links).toEqual([])
  })
})
