/**
 * What the command prints: JSON with the library's own field names for scripts
 * (`--json`), aligned tables and `field: value` lines for people.
 */

/** One column of a table: its heading and how to show a row's value. */
export interface Column<T> {
  readonly heading: string
  readonly value: (row: T) => string
}

/** Rows as an aligned table with a heading line; "(none)" when there are none. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  if (rows.length === 0) return '(none)\n'
  const cells = [columns.map((c) => c.heading), ...rows.map((row) => columns.map((c) => oneLine(c.value(row))))]
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => width(line[i] as string))))
  return cells.map((line) => line.map((cell, i) => (i === line.length - 1 ? cell : cell + ' '.repeat((widths[i] as number) - width(cell)))).join('  ').trimEnd()).join('\n') + '\n'
}

/** `field: value` lines, aligned. */
export function fields(entries: ReadonlyArray<readonly [string, string]>): string {
  const w = Math.max(...entries.map(([name]) => width(name)))
  return entries.map(([name, value]) => `${name}:${' '.repeat(w - width(name) + 1)}${oneLine(value)}`).join('\n') + '\n'
}

/** An epoch-millisecond time as ISO 8601 in UTC, or "-". */
export function time(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** A stored value that may be absent. */
export function orDash(value: string | number | null | undefined): string {
  return value === null || value === undefined || value === '' ? '-' : String(value)
}

/** JSON for `--json`: one document, indented, ending in a line break. */
export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`
}

// Names and other stored text may hold line breaks, control or format characters (names
// stored before the rules that refuse them); a table row must stay one line, must not drive
// the terminal, and must not be reordered (U+202E) or padded by anything invisible.
function oneLine(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) => (c === '\n' ? '\u21b5' : '?'))
}

function width(text: string): number {
  return [...text].length
}
