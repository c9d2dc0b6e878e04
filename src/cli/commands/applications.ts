/** `apps ...`: register, list, show, re-limit, put on a plan, suspend, resume, rotate and delete applications (`gate.applications`). */
import type { Gate } from '../../gate.js'
import { Applications, type Application } from '../../management/applications.js'
import { RefusedError, UsageError } from '../cli-errors.js'
import { integer, SHOWN_ONCE, type Command } from '../command.js'
import { DEFAULT_SECRET_GRACE_MS, MAX_SECRET_GRACE_MS } from '../../config/defaults.js'
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
          { heading: 'PLAN', value: (a) => a.plan ?? 'default' },
          { heading: 'STATE', value: (a) => (a.suspended === null ? 'active' : 'suspended') },
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
  'apps set-plan': {
    usage: 'apps set-plan APP_TOKEN PLAN|--default [--plans NAME,NAME...]',
    summary:
      "put an application on a plan of the gate's configuration, or back on the default plan with --default. The command does not read the configuration: name its plans with --plans (or OPEN_DATA_GATE_PLANS), so that a misspelt plan is refused",
    args: ['APP_TOKEN'],
    optionalArgs: ['PLAN'],
    options: ['default', 'plans'],
    checkLine(args, values) {
      if ((args[1] === undefined) === (values.default !== true)) throw new UsageError('apps set-plan takes a PLAN or --default (the default plan), one of them')
    },
    async run({ gate, args, values, io }) {
      const [appToken, plan] = args as [string, string | undefined]
      const known = planNames(values.plans ?? io.env.OPEN_DATA_GATE_PLANS)
      if (plan !== undefined && known.size === 0) {
        throw new RefusedError(`the command does not read the gate's configuration: name its plans with --plans NAME,NAME... (or OPEN_DATA_GATE_PLANS) to put an application on ${JSON.stringify(plan)}`)
      }
      // The command's gate has no plans configured: an Applications over the same store that knows the ones named.
      const applications = new Applications({ store: gate.store, rules: { maxPerUser: 0, secretGraceMs: DEFAULT_SECRET_GRACE_MS, spendRegistration: async () => 0, plans: known } })
      const app = await applications.update(appToken, { plan: plan ?? null })
      return { json: app, human: fields(applicationFields(app)) }
    },
  },
  'apps suspend': {
    usage: 'apps suspend APP_TOKEN --reason TEXT',
    summary: 'refuse every request of an application (403 application_suspended, with the reason) until it is resumed; nothing is deleted. Again: a new reason',
    args: ['APP_TOKEN'],
    options: ['reason'],
    required: ['reason'],
    async run({ gate, args, values }) {
      const app = await gate.applications.suspend(args[0] as string, { reason: values.reason as string })
      return { json: app, human: fields(applicationFields(app)) }
    },
  },
  'apps resume': {
    usage: 'apps resume APP_TOKEN',
    summary: 'serve a suspended application again, with everything it had',
    args: ['APP_TOKEN'],
    options: [],
    async run({ gate, args }) {
      const app = await gate.applications.resume(args[0] as string)
      return { json: app, human: fields(applicationFields(app)) }
    },
  },
  'apps rotate-secret': {
    usage: 'apps rotate-secret APP_TOKEN [--retire-now | --grace-ms MS]',
    summary: 'issue a new secret token; the old one works for the grace (1 hour unless configured), --grace-ms MS, or stops now with --retire-now (a leak)',
    args: ['APP_TOKEN'],
    options: ['grace-ms', 'retire-now'],
    async run({ gate, args, values }) {
      const appToken = args[0] as string
      const graceMs = rotationGrace(values['grace-ms'], values['retire-now'] === true)
      const secretToken = await gate.applications.rotateSecret(appToken, graceMs === undefined ? {} : { graceMs })
      const app = await gate.applications.find(appToken)
      const until = app?.previousSecretExpiresAt ?? null
      const previous = until === null ? 'stopped working now' : `works until ${time(until)}`
      return {
        json: { appToken, secretToken, previousSecretExpiresAt: until },
        human: fields([['app token', appToken], ['secret token', secretToken], ['previous secret', previous]]) + SHOWN_ONCE + '\n',
      }
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

/** `--grace-ms MS` (0 allowed) or `--retire-now`, or neither (the gate's grace). @throws {RefusedError} */
function rotationGrace(text: string | undefined, retireNow: boolean): number | undefined {
  if (retireNow && text !== undefined) throw new RefusedError('give --retire-now or --grace-ms, not both (--retire-now is --grace-ms 0)')
  if (retireNow) return 0
  if (text === undefined) return undefined
  if (!/^\d{1,16}$/.test(text)) throw new RefusedError(`--grace-ms must be a whole number of milliseconds from 0 (retire the old secret now) to ${MAX_SECRET_GRACE_MS} (7 days), not ${JSON.stringify(text)}`)
  return Number(text)
}

/** `--plans` or `OPEN_DATA_GATE_PLANS`: the configured plans' names, separated by commas. */
function planNames(text: string | undefined): ReadonlySet<string> {
  return new Set((text ?? '').split(',').map((name) => name.trim()).filter((name) => name !== ''))
}

const noApplication = (appToken: string) => new RefusedError(`no application with app token ${appToken}`)

function applicationFields(app: Application): Array<[string, string]> {
  return [
    ['app token', app.appToken],
    ['name', app.name],
    ['callback prefix', orDash(app.callbackPrefix)],
    ['limit', app.limit === null ? 'default' : String(app.limit)],
    ['plan', app.plan ?? 'default'],
    ['owner', app.ownerId ?? '- (an operator\'s)'],
    ['state', app.suspended === null ? 'active' : `suspended since ${time(app.suspended.since)}`],
    ...(app.suspended === null ? [] : [['suspension reason', app.suspended.reason] as [string, string]]),
    ...(app.previousSecretExpiresAt !== null && app.previousSecretExpiresAt > Date.now() ? [['previous secret until', time(app.previousSecretExpiresAt)] as [string, string]] : []),
    ['created', time(app.createdAt)],
    ['updated', time(app.updatedAt)],
  ]
}
