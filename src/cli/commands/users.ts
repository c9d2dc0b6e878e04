/** `users ...`: create, list, show, set passwords of and delete accounts (`gate.users`). */
import type { Gate } from '../../gate.js'
import type { User } from '../../management/users.js'
import { RefusedError } from '../cli-errors.js'
import type { Command } from '../command.js'
import { fields, table, time } from '../output.js'
import { readNewPassword } from '../secret-input.js'

export const USER_COMMANDS: Record<string, Command> = {
  'users create': {
    usage: 'users create --username NAME --display-name NAME --email ADDRESS [--screen-name NAME] [--right RIGHT]... [--no-password]',
    summary: 'create an account; the password is read from a prompt, or standard input',
    args: [],
    options: ['username', 'display-name', 'email', 'screen-name', 'right', 'no-password'],
    required: ['username', 'display-name', 'email'],
    async run({ gate, values, io }) {
      // Check everything but the password before asking for it.
      if (values['no-password'] !== true && (await gate.users.findByUsername(values.username as string)) !== undefined) {
        throw new RefusedError(`the username ${JSON.stringify(values.username)} is taken`)
      }
      const password = values['no-password'] === true ? null : await readNewPassword(io.stdin, io.stderr)
      const user = await gate.users.create({
        username: values.username as string,
        password,
        displayName: values['display-name'] as string,
        email: values.email as string,
        ...(values['screen-name'] === undefined ? {} : { screenName: values['screen-name'] }),
        rights: values.right ?? [],
      })
      return { json: user, human: fields(userFields(user)) }
    },
  },
  'users list': {
    usage: 'users list',
    summary: 'list every account',
    args: [],
    options: [],
    async run({ gate }) {
      const users = await gate.users.list()
      return {
        json: users,
        human: table(users, [
          { heading: 'ID', value: (u) => u.id },
          { heading: 'USERNAME', value: (u) => u.username },
          { heading: 'DISPLAY NAME', value: (u) => u.displayName },
          { heading: 'EMAIL', value: (u) => u.email },
          { heading: 'PASSWORD', value: (u) => (u.hasPassword ? 'yes' : 'no') },
          { heading: 'RIGHTS', value: (u) => u.rights.join(',') || '-' },
        ]),
      }
    },
  },
  'users show': {
    usage: 'users show ID|USERNAME',
    summary: 'show one account',
    args: ['USER'],
    options: [],
    async run({ gate, args }) {
      const user = await findUser(gate, args[0] as string)
      return { json: user, human: fields(userFields(user)) }
    },
  },
  'users set-password': {
    usage: 'users set-password ID|USERNAME [--no-password]',
    summary: 'set (from a prompt or standard input) or remove a password; sessions signed in with the old one end',
    args: ['USER'],
    options: ['no-password'],
    async run({ gate, args, values, io }) {
      const user = await findUser(gate, args[0] as string)
      const password = values['no-password'] === true ? null : await readNewPassword(io.stdin, io.stderr, `New password for ${user.username}`)
      await gate.users.setPassword(user.id, password)
      return {
        json: { id: user.id, hasPassword: password !== null },
        human: password === null ? `removed the password of ${user.username}\n` : `set the password of ${user.username}\n`,
      }
    },
  },
  'users delete': {
    usage: 'users delete ID|USERNAME',
    summary: 'delete an account; its password, API keys and tokens stop working',
    args: ['USER'],
    options: [],
    async run({ gate, args }) {
      const user = await findUser(gate, args[0] as string)
      if (!(await gate.users.delete(user.id))) throw noUser(user.id)
      return { json: { id: user.id, deleted: true }, human: `deleted user ${user.username} (${user.id})\n` }
    },
  },
}

/** A user by id, or else by username. @throws {RefusedError} when there is none */
export async function findUser(gate: Gate, idOrUsername: string): Promise<User> {
  const user = (await gate.users.find(idOrUsername)) ?? (await gate.users.findByUsername(idOrUsername))
  if (user === undefined) throw noUser(idOrUsername)
  return user
}

const noUser = (user: string) => new RefusedError(`no user ${user}`)

function userFields(user: User): Array<[string, string]> {
  return [
    ['id', user.id],
    ['username', user.username],
    ['display name', user.displayName],
    ['screen name', user.screenName],
    ['email', user.email],
    ['rights', user.rights.join(', ') || '-'],
    ['password', user.hasPassword ? 'set' : 'none'],
    ['created', time(user.createdAt)],
  ]
}
