/**
 * The current-user record: `GET /api/users/current.json`, `/users/current.json` and
 * `/users/current.xml`. The only way an OAuth application learns who approved it.
 * Nothing secret is in it.
 *
 * @see docs/platform-rules.md "Current user", "OAuth 2.0" 8
 */
import type { GateUser } from '../pipeline/authenticate.js'
import type { GateResponse } from '../http/request.js'

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
