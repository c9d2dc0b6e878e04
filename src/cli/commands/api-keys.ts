/** `keys ...`: create, list, revoke and rotate users' API keys (`gate.apiKeys`). */
import type { ApiKey } from '../../management/api-keys.js'
import { RefusedError } from '../cli-errors.js'
import { SHOWN_ONCE, type Command } from '../command.js'
import { fields, table, time } from '../output.js'
import { findUser } from './users.js'

export const API_KEY_COMMANDS: Record<string, Command> = {
  'keys create': {
    usage: 'keys create --user ID|USERNAME --name NAME',
    summary: 'create an API key for a user; prints its secret once',
    args: [],
    options: ['user', 'name'],
    required: ['user', 'name'],
    async run({ gate, values }) {
      const user = await findUser(gate, values.user as string)
      const issued = await gate.apiKeys.create(user.id, { name: values.name as string })
      return { json: issued, human: fields([...keyFields(issued.apiKey), ['key secret', issued.keySecret]]) + SHOWN_ONCE + '\n' }
    },
  },
  'keys list': {
    usage: 'keys list --user ID|USERNAME',
    summary: "list a user's API keys, revoked ones included",
    args: [],
    options: ['user'],
    required: ['user'],
    async run({ gate, values }) {
      const user = await findUser(gate, values.user as string)
      const keys = await gate.apiKeys.list(user.id)
      return {
        json: keys,
        human: table(keys, [
          { heading: 'KEY ID', value: (k) => k.keyId },
          { heading: 'NAME', value: (k) => k.name },
          { heading: 'CREATED', value: (k) => time(k.createdAt) },
          { heading: 'LAST USED', value: (k) => time(k.lastUsedAt) },
          { heading: 'REVOKED', value: (k) => time(k.revokedAt) },
        ]),
      }
    },
  },
  'keys revoke': {
    usage: 'keys revoke KEY_ID',
    summary: 'revoke an API key; it stops working at once and stays listed',
    args: ['KEY_ID'],
    options: [],
    async run({ gate, args }) {
      const keyId = args[0] as string
      if (!(await gate.apiKeys.revoke(keyId))) throw new RefusedError(`no active API key ${keyId}`)
      return { json: { keyId, revoked: true }, human: `revoked API key ${keyId}\n` }
    },
  },
  'keys rotate': {
    usage: 'keys rotate KEY_ID',
    summary: 'give an API key a new secret; the old one stops working at once',
    args: ['KEY_ID'],
    options: [],
    async run({ gate, args }) {
      const keyId = args[0] as string
      const issued = await gate.apiKeys.rotate(keyId)
      return { json: issued, human: fields([...keyFields(issued.apiKey), ['key secret', issued.keySecret]]) + SHOWN_ONCE + '\n' }
    },
  },
}

function keyFields(key: ApiKey): Array<[string, string]> {
  return [
    ['key id', key.keyId],
    ['user', key.userId],
    ['name', key.name],
    ['created', time(key.createdAt)],
    ['last used', time(key.lastUsedAt)],
    ['revoked', time(key.revokedAt)],
  ]
}
