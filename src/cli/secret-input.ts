/**
 * Secrets come in through a prompt (on a terminal, without echo) or standard input
 * (otherwise), never through argv: argv lands in shell history and in `ps` for every
 * user of the machine to read.
 */
import { RefusedError } from './cli-errors.js'

/** What the command reads a secret from: `process.stdin`, or a stream in tests. */
export interface SecretSource extends AsyncIterable<Buffer | string> {
  readonly isTTY?: boolean
  setRawMode?(mode: boolean): unknown
  resume?(): unknown
  pause?(): unknown
  on?(event: 'data', listener: (chunk: Buffer | string) => void): unknown
  off?(event: 'data', listener: (chunk: Buffer | string) => void): unknown
}

/** Where the prompt is written (standard error, so that `--json` output stays clean). */
export interface PromptSink {
  write(text: string): unknown
}

/**
 * Reads a new password: twice at a terminal prompt (they must match), or all of
 * standard input without its final line break.
 * @throws {RefusedError} for an empty password, or two entries that differ
 */
export async function readNewPassword(source: SecretSource, prompt: PromptSink, what = 'Password'): Promise<string> {
  if (source.isTTY === true && source.setRawMode !== undefined) {
    const first = await promptHidden(source, prompt, `${what}: `)
    const second = await promptHidden(source, prompt, `${what} again: `)
    if (first !== second) throw new RefusedError('the two passwords differ; nothing was changed')
    return nonEmpty(first)
  }
  return nonEmpty(await readAll(source))
}

function nonEmpty(password: string): string {
  if (password === '') throw new RefusedError('the password is empty: type it at the prompt, or pipe it on standard input (printf %s "$PASSWORD" | open-data-gate ...)')
  return password
}

/** All of a non-terminal input, minus one final line break (`echo` adds one). */
export async function readAll(source: AsyncIterable<Buffer | string>): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of source) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '')
}

/** What a line of hidden input has become after some keystrokes. */
export type HiddenLine = { readonly done: false; readonly text: string } | { readonly done: true; readonly text: string } | { readonly cancelled: true }

/**
 * Applies keystrokes to a hidden line: Enter (or Ctrl-D) ends it, Backspace deletes one
 * character, Ctrl-U clears it, Ctrl-C cancels; other control characters are dropped.
 */
export function typeHidden(text: string, keys: string): HiddenLine {
  let line = text
  for (const key of keys) {
    if (key === '\r' || key === '\n' || key === '\u0004') return { done: true, text: line }
    if (key === '\u0003') return { cancelled: true }
    if (key === '\u007f' || key === '\b') line = [...line].slice(0, -1).join('')
    else if (key === '\u0015') line = ''
    else if (key >= ' ') line += key
  }
  return { done: false, text: line }
}

function promptHidden(source: SecretSource, prompt: PromptSink, question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    // No echo from the first keystroke: raw mode is on before the prompt shows.
    source.setRawMode?.(true)
    prompt.write(question)
    const finish = () => {
      source.off?.('data', onData)
      source.setRawMode?.(false)
      source.pause?.()
      prompt.write('\n')
    }
    const onData = (chunk: Buffer | string) => {
      const state = typeHidden(text, chunk.toString())
      if ('cancelled' in state) {
        finish()
        reject(new RefusedError('cancelled; nothing was changed'))
      } else if (state.done) {
        finish()
        resolve(state.text)
      } else {
        text = state.text
      }
    }
    source.on?.('data', onData)
    source.resume?.()
  })
}
