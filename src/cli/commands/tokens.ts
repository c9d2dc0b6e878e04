/** `tokens revoke`: end every OAuth access token of a user or of an application (`gate.tokens`). */
import { UsageError } from '../cli-errors.js'
import type { Command } from '../command.js'
import { findApplication } from './applications.js'
import { findUser } from './users.js'

export const TOKEN_COMMANDS: Record<string, Command> = {
  'tokens revoke': {
    usage: 'tokens revoke --user ID|USERNAME | --app APP_TOKEN',
    summary: 'revoke every OAuth access token of a user, or of an application',
    args: [],
    options: ['user', 'app'],
    async run({ gate, values }) {
      if ((values.user === undefined) === (values.app === undefined)) throw new UsageError('tokens revoke takes --user or --app (one of them)')
      if (values.app !== undefined) {
        await findApplication(gate, values.app)
        const revoked = await gate.tokens.revokeAllForApplication(values.app)
        return { json: { appToken: values.app, revoked }, human: `revoked ${revoked} access token${revoked === 1 ? '' : 's'} of application ${values.app}\n` }
      }
      const user = await findUser(gate, values.user as string)
      const revoked = await gate.tokens.revokeAllForUser(user.id)
      return { json: { userId: user.id, revoked }, human: `revoked ${revoked} access token${revoked === 1 ? '' : 's'} of user ${user.username}\n` }
    },
  },
}
