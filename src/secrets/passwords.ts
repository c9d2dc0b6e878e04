/**
 * Password hashing with scrypt (node:crypto). Each hash carries its own salt and
 * parameters, `$scrypt$ln=14,r=8,p=1$<salt>$<hash>`, so the parameters can be raised
 * later: old hashes still verify, and {@link needsRehash} says when to replace one.
 *
 * Passwords are normalised to Unicode NFC first (RFC 8265 OpaqueString), so the same
 * password typed on two keyboards verifies.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'
import { assertStorable } from '../rules/storable.js'

/** scrypt cost parameters. */
export interface ScryptParams {
  /** log2 of N, the CPU/memory cost. 14 (N = 16384, 16 MiB) by default. */
  readonly logN: number
  /** Block size r. 8 by default. */
  readonly blockSize: number
  /** Parallelisation p. 1 by default. */
  readonly parallelization: number
}

export const DEFAULT_SCRYPT: ScryptParams = { logN: 14, blockSize: 8, parallelization: 1 }

const KEY_LENGTH = 32
const SALT_LENGTH = 16
/** Longer passwords are refused: they protect nothing more and cost more to hash. */
export const MAX_PASSWORD_LENGTH = 1024
export const MIN_PASSWORD_LENGTH = 8

function derive(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const N = 2 ** params.logN
  const options: ScryptOptions = {
    N,
    r: params.blockSize,
    p: params.parallelization,
    // scrypt needs 128·N·r bytes; leave headroom over Node's 32 MiB default.
    maxmem: 256 * N * params.blockSize + 1024 * 1024,
  }
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (error, key) => (error ? reject(error) : resolve(key)))
  })
}

/** Hashes a password into a self-describing string. */
export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  const salt = randomBytes(SALT_LENGTH)
  const key = await derive(password, salt, params)
  return `$scrypt$ln=${params.logN},r=${params.blockSize},p=${params.parallelization}$${salt.toString('base64')}$${key.toString('base64')}`
}

interface ParsedHash {
  params: ScryptParams
  salt: Buffer
  key: Buffer
}

function parseHash(stored: string): ParsedHash | undefined {
  const match = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+=*)\$([A-Za-z0-9+/]+=*)$/.exec(stored)
  if (match === null) return undefined
  const [, ln, r, p, salt, key] = match as unknown as [string, string, string, string, string, string]
  return {
    params: { logN: Number(ln), blockSize: Number(r), parallelization: Number(p) },
    salt: Buffer.from(salt, 'base64'),
    key: Buffer.from(key, 'base64'),
  }
}

/** Whether `password` matches `stored`, compared in constant time. A malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored)
  if (parsed === undefined || password.length > MAX_PASSWORD_LENGTH) return false
  const key = await derive(password, parsed.salt, parsed.params)
  return key.length === parsed.key.length && timingSafeEqual(key, parsed.key)
}

/**
 * A hash of a random password with the given parameters: verifying against it costs
 * what a real verification costs, so an unknown username answers as slowly as a known
 * one with a wrong password.
 */
export function decoyHash(params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  return hashPassword(randomBytes(16).toString('base64'), params)
}

/** @throws {TypeError} unless the password has an acceptable length. */
export function checkPassword(password: unknown): string {
  if (typeof password !== 'string' || password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw new TypeError(`open-data-gate: a password must be a string of ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`)
  }
  // Refused at every sign-in (the forms, Basic): a password holding one could never be typed.
  assertStorable('a password', password)
  return password
}
