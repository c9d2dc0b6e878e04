/** `apps ...`: register, list, show, re-limit, rotate and delete applications (`gate.applications`). */
import type { Gate } from '../../gate.js'
import type { Application } from '../../management/applications.js'
import { RefusedError } from '../cli-errors.js'
import { integer, SHOWN_ONCE, type Command } from '../command.js'
import { fields, orDash, table, time } from '../output.js'

export const APPLICATION_COMMANDS: Record<string, Command> = {
  'apps register': {
    usage: 'apps register --name NAME [--callback-prefix URL] [--limit N]',
    summary: 'register an application; prints its app token and secret token once',
    args: [],
    options: ['name', 'callback-prefix', 'limit'],
    required: ['name'],
    async run({ gate, values }) {
      const registered = await gate.applications.register({
        name: values.name as string,
        callbackPrefix: values['callback-prefix'] ?? null,
        limit: values.limit === undefined ? null : integer('--limit', values.limit),
      })
      return {
        json: registered,
        human: fields([...applicationFields(registered.application), ['secret token', registered.secretToken]]) + SHOWN_ONCE + '\n',
      }
    },
  },
  'apps list': {
    usage: 'apps list',
    summary: 'list every application',
    args: [],
    options: [],
    async run({ gate }) {
      const apps = await gate.applications.list()
      return {
        json: apps,
        human: table(apps, [
          { heading: 'APP TOKEN', value: (a) => a.appToken },
          { heading: 'NAME', value: (a) => a.name },
          { heading: 'LIMIT', value: (a) => (a.limit === null ? 'default' : String(a.limit)) },
          { heading: 'CALLBACK PREFIX', value: (a) => orDash(a.callbackPrefix) },
          { heading: 'CREATED', value: (a) => time(a.createdAt) },
        ]),
      }
    },
  },
  'apps show': {
    usage: 'apps show APP_TOKEN',
    summary: 'show one application',
    args: ['APP_TOKEN'],
    options: [],
    async run({ gate, args }) {
      const app = await findApplication(gate, args[0] as string)
      return { json: app, human: fields(applicationFields(app)) }
    },
  },
  'apps set-limit': {
    usage: 'apps set-limit APP_TOKEN N|default',
    summary: "raise or lower one application's throttle limit; `default` goes back to the configured one",
    args: ['APP_TOKEN', 'LIMIT'],
    options: [],
    async run({ gate, args }) {
      const [appToken, limit] = args as [string, string]
      const value = limit === 'default' ? null : integer('LIMIT', limit)
      const app = await gate.applications.update(appToken, { limit: value })
      return { json: app, human: fields(applicationFields(app)) }
    },
  },
  'apps rotate-secret': {
    usage: 'apps rotate-secret APP_TOKEN [--grace-ms MS]',
    // An operator usually rotates after a leak: the old secret stops at once unless a grace is asked for.
    summary: 'issue a new secret token; the old one stops working at once, or after --grace-ms',
    args: ['APP_TOKEN'],
    options: ['grace-ms'],
    async run({ gate, args, values }) {
      const appToken = args[0] as string
      const graceMs = values['grace-ms'] === undefined ? 0 : integer('--grace-ms', values['grace-ms'])
      const secretToken = await gate.applications.rotateSecret(appToken, { graceMs })
      return { json: { appToken, secretToken }, human: fields([['app token', appToken], ['secret token', secretToken]]) + SHOWN_ONCE + '\n' }
    },
  },
  'apps delete': {
    usage: 'apps delete APP_TOKEN',
    summary: 'delete an application; its token is refused and its access tokens stop working',
    args: ['APP_TOKEN'],
    options: [],
    async run({ gate, args }) {
      const appToken = args[0] as string
      if (!(await gate.applications.delete(appToken))) throw noApplication(appToken)
      return { json: { appToken, deleted: true }, human: `deleted application ${appToken}\n` }
    },
  },
}

/** An application by app token. @throws {RefusedError} when there is none */
export async function findApplication(gate: Gate, appToken: string): Promise<Application> {
  const app = await gate.applications.find(appToken)
  if (app === undefined) throw noApplication(appToken)
  return app
}

const noApplication = (appToken: string) => new RefusedError(`no application with app token ${appToken}`)

function applicationFields(app: Application): Array<[string, string]> {
  return [
    ['app token', app.appToken],
    ['name', app.name],
    ['callback prefix', orDash(app.callbackPrefix)],
    ['limit', app.limit === null ? 'default' : String(app.limit)],
    ['owner', app.ownerId ?? '- (an operator\'s)'],
    ...(app.previousSecretExpiresAt !== null && app.previousSecretExpiresAt > Date.now() ? [['previous secret until', time(app.previousSecretExpiresAt)] as [string, string]] : []),
    ['created', time(app.createdAt)],
    ['updated', time(app.updatedAt)],
  ]
}
