/**
 * The current-user record: `GET /api/users/current.json`, `/users/current.json` and
 * `/users/current.xml`. The only way an OAuth application learns who approved it.
 * Nothing secret is in it.
 *
 * @see docs/platform-rules.md "Current user", "OAuth 2.0" 8
 */
import { PlatformError } from '../errors.js'
import type { GateUser } from '../pipeline/authenticate.js'
import type { GateContext } from '../pipeline/context.js'
import { compileGuard } from '../pipeline/guard.js'
import type { GateRequest, GateResponse } from '../http/request.js'

const SIGNED_IN = compileGuard({ auth: 'required' })

/**
 * The current-user endpoints, answered once the request has passed the gate's access checks.
 * @throws {PlatformError} 405 for a method other than GET and HEAD, 403 `authentication_required` without a user
 */
export function currentUserResponse(format: 'json' | 'xml', request: GateRequest, context: GateContext): GateResponse {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    throw new PlatformError('method_not_allowed', `${request.method} is not allowed here; use GET`, { headers: { allow: 'GET, HEAD' } })
  }
  const refusal = SIGNED_IN(context)
  if (refusal !== undefined) throw refusal
  const user = context.user as GateUser
  return format === 'xml' ? currentUserXml(user) : currentUserJson(user)
}

/** The fields clients read: `id`, `screenName`, `displayName`, `email`, `rights`. */
export function currentUserFields(user: GateUser) {
  return { id: user.id, screenName: user.screenName, displayName: user.displayName, email: user.email, rights: [...user.rights] }
}

// Personal data, different for every credential: never cached by anyone but the client.
const PRIVATE = { 'cache-control': 'private, no-store', vary: 'Authorization' }

export function currentUserJson(user: GateUser): GateResponse {
  return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8', ...PRIVATE }, body: JSON.stringify(currentUserFields(user)) }
}

export function currentUserXml(user: GateUser): GateResponse {
  const fields = currentUserFields(user)
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n<user>' +
    `<id>${xmlText(fields.id)}</id>` +
    `<screenName>${xmlText(fields.screenName)}</screenName>` +
    `<displayName>${xmlText(fields.displayName)}</displayName>` +
    `<email>${xmlText(fields.email)}</email>` +
    `<rights>${fields.rights.map((r) => `<right>${xmlText(r)}</right>`).join('')}</rights>` +
    '</user>\n'
  return { status: 200, headers: { 'content-type': 'application/xml; charset=utf-8', ...PRIVATE }, body }
}

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }

/** Text safe inside an XML 1.0 element: markup escaped, characters XML cannot carry dropped. */
export function xmlText(value: string): string {
  return value
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/[&<>"']/g, (c) => XML_ESCAPES[c] as string)
}
