/**
 * The `open-data-gate` command's parsing, output, prompts and exit codes, run in this
 * process on a MemoryStore handed in as the opened store (the command refuses `memory:`
 * itself). The same command against real Redis and PostgreSQL, as a child process, is in
 * test/cli-stores.test.ts.
 */
import { readFileSync } from 'node:fs'
import { PassThrough, Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createGate, MemoryStore } from '../src/index.js'
import { run, type CliIo } from '../src/cli/main.js'
import { typeHidden } from '../src/cli/secret-input.js'
import { coreRequest } from './support/requests.js'
import type { OpenedStore, OpenedStores, StoreSpec } from '../src/cli/store-url.js'

const FAST_SCRYPT = { logN: 10, blockSize: 8, parallelization: 1 }

interface Ran {
  code: number
  stdout: string
  stderr: string
  specs: StoreSpec[]
}

function harness(store = new MemoryStore(), records: Partial<OpenedStore> = {}) {
  const specs: StoreSpec[] = []
  const exec = async (argv: string[], options: { stdin?: CliIo['stdin']; env?: Record<string, string> } = {}): Promise<Ran> => {
    let stdout = ''
    let stderr = ''
    const opened: OpenedStores = { records: { kind: 'redis', store, migrate: async () => null, ...records }, rates: undefined, close: async () => {} }
    const code = await run(argv, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      stdin: options.stdin ?? Readable.from([]),
      env: options.env ?? {},
      openStores: async (spec) => {
        specs.push(spec)
        return opened
      },
    })
    return { code, stdout, stderr, specs }
  }
  return { store, exec, specs }
}

const S = ['--store', 'redis://127.0.0.1:1']

describe('open-data-gate command line', () => {
  it('registers an application and prints its credentials once, in the library field names', async () => {
    const { store, exec } = harness()
    const ran = await exec(['apps', 'register', '--name', 'Transit', '--callback-prefix', 'https://transit.example/oauth/', '--limit', '5000', ...S, '--json'])
    expect(ran).toMatchObject({ code: 0, stderr: '' })
    const out = JSON.parse(ran.stdout)
    expect(Object.keys(out).sort()).toEqual(['appToken', 'application', 'secretToken'])
    expect(out.application).toMatchObject({ name: 'Transit', callbackPrefix: 'https://transit.example/oauth/', limit: 5000 })
    const gate = createGate({ store })
    expect(await gate.applications.verifySecret(out.appToken, out.secretToken)).toBe(true)
    // Listing shows the application and never its secret.
    const list = await exec(['--json', 'apps', 'list', ...S])
    expect(JSON.parse(list.stdout)).toEqual([out.application])
    expect(list.stdout).not.toContain(out.secretToken)
  })

  it('accepts the global options anywhere on the line, and the store from the environment', async () => {
    const { exec, specs } = harness()
    expect((await exec(['apps', '--json', 'list', '--store', 'redis://a:1', '--prefix', 'p:'])).code).toBe(0)
    expect((await exec(['apps', 'list'], { env: { OPEN_DATA_GATE_STORE: 'postgres://b/db', OPEN_DATA_GATE_RATE_STORE: 'redis://c' } })).code).toBe(0)
    expect(specs).toEqual([
      { store: 'redis://a:1', rateStore: undefined, prefix: 'p:', schema: undefined },
      { store: 'postgres://b/db', rateStore: 'redis://c', prefix: undefined, schema: undefined },
    ])
  })

  it('prints human tables and field lines without --json', async () => {
    const { store, exec } = harness()
    const registered = await exec(['apps', 'register', '--name', 'Transit dashboard', ...S])
    expect(registered.stdout).toMatch(/^app token: +\S+\nname: +Transit dashboard\n/)
    expect(registered.stdout).toMatch(/secret token: +\S{43}\nShown once/)
    // A name stored before control and format characters were refused: one line, nothing invisible.
    const appToken = /^app token: +(\S+)/.exec(registered.stdout)?.[1] as string
    await store.updateApplication(appToken, { name: 'Line\nbreak\u202eevil\u2028\u200b\u001b[2J' })
    const list = await exec(['apps', 'list', ...S])
    expect(list.stdout.split('\n')[0]).toMatch(/^APP TOKEN +NAME +LIMIT +PLAN +STATE +CALLBACK PREFIX +CREATED$/)
    expect(list.stdout.split('\n')[1]).toContain('Line↵break?evil???[2J')
    expect((await exec(['users', 'list', ...S])).stdout).toBe('(none)\n')
  })

  it('refuses an application name with a control or format character, and says which', async () => {
    const { store, exec } = harness()
    for (const name of ['Transit\u202edashboard', 'Transit\u2028dashboard', 'Transit\u200bdashboard', 'Transit\u001b[31m', 'Transit\u0007', 'Transit\r\ndashboard']) {
      const ran = await exec(['apps', 'register', '--name', name, ...S])
      expect(ran.code, JSON.stringify(name)).toBe(1)
      expect(ran.stderr).toMatch(/control, format or line separator characters.*U\+[0-9A-F]{4} is not allowed/)
    }
    expect(await store.listApplications()).toEqual([])
  })

  it('takes an app token that starts with a dash as the token it is, as an argument and as an option value', async () => {
    // One generated token in 64 starts with "-" (base64url); parseArgs alone reads it as options.
    const { store, exec } = harness()
    const registered = JSON.parse((await exec(['apps', 'register', '--name', 'Dash', ...S, '--json'])).stdout)
    const dashed = `-k${registered.appToken.slice(2)}`
    await store.insertApplication({ ...(await store.getApplication(registered.appToken))!, appToken: dashed })

    const shown = await exec(['apps', 'show', dashed, ...S, '--json'])
    expect(shown).toMatchObject({ code: 0, stderr: '' })
    expect(JSON.parse(shown.stdout)).toMatchObject({ appToken: dashed, name: 'Dash' })
    expect(await exec(['apps', 'set-limit', dashed, '7', ...S])).toMatchObject({ code: 0, stderr: '' })
    expect((await store.getApplication(dashed))?.limit).toBe(7)
    expect(JSON.parse((await exec(['tokens', 'revoke', '--app', dashed, ...S, '--json'])).stdout)).toEqual({ appToken: dashed, revoked: 0 })
    expect(await exec(['apps', 'delete', ...S, '--', dashed])).toMatchObject({ code: 0, stderr: '' })
    expect(await store.getApplication(dashed)).toBeUndefined()
    expect(await store.getApplication(registered.appToken)).toBeDefined()

    // One in 4,096 starts with two.
    const twice = `--Q${registered.appToken.slice(3)}`
    await store.insertApplication({ ...(await store.getApplication(registered.appToken))!, appToken: twice })
    expect(JSON.parse((await exec(['apps', 'show', twice, ...S, '--json'])).stdout)).toMatchObject({ appToken: twice })
    expect(JSON.parse((await exec(['tokens', 'revoke', '--app', twice, ...S, '--json'])).stdout)).toEqual({ appToken: twice, revoked: 0 })
    expect(await exec(['apps', 'delete', twice, ...S])).toMatchObject({ code: 0, stderr: '' })
    expect(await store.getApplication(twice)).toBeUndefined()
  })

  it.each([
    [['frobnicate', ...S], /unknown command "frobnicate"/],
    [['apps', ...S], /apps needs a subcommand: register, list, show, set-limit, set-plan, suspend, resume, rotate-secret, delete/],
    [['apps', 'register', ...S], /apps register needs --name/],
    [['apps', 'show', ...S], /apps show needs APP_TOKEN/],
    [['apps', 'suspend', 'abc', ...S], /apps suspend needs --reason/],
    [['apps', 'set-plan', 'abc', ...S], /apps set-plan takes a PLAN or --default/],
    [['apps', 'set-plan', 'abc', 'free', '--default', ...S], /apps set-plan takes a PLAN or --default/],
    [['apps', 'set-plan', 'abc', 'free', 'extra', ...S], /apps set-plan takes APP_TOKEN \[PLAN\]; unexpected "extra"/],
    [['apps', 'resume', ...S], /apps resume needs APP_TOKEN/],
    [['apps', 'resume', 'abc', '--reason', 'x', ...S], /apps resume does not take --reason/],
    [['apps', 'show', 'a', 'b', ...S], /unexpected "b"/],
    [['apps', 'list', '--name', 'x', ...S], /apps list does not take --name/],
    [['apps', 'list', '--bogus', ...S], /Unknown option '--bogus' \(see open-data-gate --help\)/],
    [['rate', 'show', 'anon', '--lmit', '5', ...S], /Unknown option '--lmit'; did you mean --limit\?/],
    [['apps', 'register', '--callback-prefx', 'https://a.example/', ...S], /Unknown option '--callback-prefx'; did you mean --callback-prefix\?/],
    [['aps', 'list', ...S], /unknown command "aps"; did you mean "apps"\?/],
    [['apps', 'regster', ...S], /unknown command "apps regster"; did you mean "apps register"\?/],
    [['apps', 'list', '--store'], /--store/],
    [['apps', 'register', '--name', '--json', ...S], /--name needs a value \(a value that starts with - goes as --name=VALUE\)/],
    [['apps', 'list', '-x', ...S], /Unknown option '-x'/],
    [['apps', 'show', '--Json', ...S], /Unknown option '--Json'; did you mean --json\?/],
    [['rate', 'reset', '--Secret=abc', ...S], /--Secret is not accepted: secrets never go on the command line/],
    [['users', 'set-password', 'ada', '--PASSWORD', 'hunter2', ...S], /--PASSWORD is not accepted/],
    [['keys', 'revoke', '--key_secret=abc', ...S], /--key_secret is not accepted/],
    [['apps', 'list'], /no store: give --store URL or set OPEN_DATA_GATE_STORE/],
    [['apps', 'list', '--store', 'memory:'], /memory: keeps records inside one process/],
    [['apps', 'list', '--store', 'mysql://x'], /--store must be a redis:\/\/, rediss:\/\/ or postgres:\/\/ URL, not "mysql:\/\/x"/],
    [['users', 'create', '--username', 'ada', '--password', 'hunter2', ...S], /--password is not accepted: secrets never go on the command line/],
    [['keys', 'rotate', 'k', '--key-secret=abc', ...S], /--key-secret is not accepted/],
    [['tokens', 'revoke', ...S], /tokens revoke takes --user or --app/],
    [['rate', 'show', 'login:ada', ...S], /needs --limit and --window-ms/],
    [['rate', 'show', 'anon', ...S], /needs --limit and --window-ms/],
  ])('exits 2 with one line for a usage error: %j', async (argv, message) => {
    const { exec, specs } = harness()
    const ran = await exec(argv)
    expect(ran.code).toBe(2)
    expect(ran.stdout).toBe('')
    expect(ran.stderr).toMatch(message)
    expect(ran.stderr.trimEnd().split('\n')).toHaveLength(1)
    // A usage error found on the line itself never opens a store.
    if (!argv.includes('tokens') && !argv.includes('rate')) expect(specs).toEqual([])
  })

  it('redacts a password in a store URL it refuses', async () => {
    const { exec } = harness()
    const ran = await exec(['apps', 'list'], { env: { OPEN_DATA_GATE_STORE: 'mysql://root:s3cret@db/x' } })
    expect(ran.stderr).toContain('mysql://root:***@db/x')
    expect(ran.stderr).not.toContain('s3cret')
  })

  it.each([
    ['a password in the URL', ['--store', 'postgres://ada:SECRETPW@db.example/gate']],
    ['a password with an @ in it', ['--store', 'postgres://ada:pa@SECRETPW@db.example/gate']],
    ['a password parameter', ['--store', 'postgres://ada@db.example/gate?password=SECRETPW']],
    ['a libpq keyword string', ['--store', 'host=db.example password=SECRETPW dbname=gate']],
    ['a Redis password', ['--store', 'redis://:SECRETPW@cache.example:6379']],
    ['a Redis password parameter', ['--store', 'rediss://cache.example:6380/?password=SECRETPW']],
    ['a password in the rate store', ['--store', 'redis://cache.example', '--rate-store', 'redis://default:SECRETPW@rates.example']],
  ])('refuses a store password on the command line (%s), pointing at the environment and the password file', async (_, store) => {
    const { exec, specs } = harness()
    for (const json of [[], ['--json']]) {
      const ran = await exec(['apps', 'list', ...store, ...json])
      expect(ran.code).toBe(2)
      expect(ran.stdout).toBe('')
      expect(ran.stderr.trimEnd().split('\n')).toHaveLength(1)
      expect(ran.stderr).toMatch(/OPEN_DATA_GATE_(RATE_)?STORE/)
      if (!store.some((s) => s.startsWith('redis'))) expect(ran.stderr).toContain('PGPASSFILE')
      expect(ran.stderr).not.toContain('SECRETPW')
      expect(ran.stderr).not.toMatch(/pa@|@SECRET/)
    }
    expect(specs).toEqual([])
  })

  it.each([
    ['postgres://ada@db.example:5433/gate?password=SECRETPW', 'postgres://ada:***@db.example:5433/gate'],
    ['postgres://ada:pa@SECRETPW@db.example/gate', 'postgres://ada:***@db.example/gate'],
    ['postgresql://ada:SECRETPW@/gate?host=/var/run/postgresql', 'postgresql://ada:***@%2Fvar%2Frun%2Fpostgresql/gate'],
    ['redis://default:SECRETPW@cache.example:6379/2', 'redis://default:***@cache.example:6379/2'],
    ['redis://cache.example/?password=SECRETPW', 'redis://:***@cache.example:6379'],
  ])('shows the store from the environment as the driver reads it, without its password: %s', async (url, shown) => {
    const failing = async () => {
      throw Object.assign(new Error(`connect ECONNREFUSED (tried ${url})`), { code: 'ECONNREFUSED' })
    }
    for (const json of [[], ['--json']]) {
      let stderr = ''
      let stdout = ''
      const code = await run(['apps', 'list', ...json], {
        stdout: { write: (text: string) => (stdout += text) },
        stderr: { write: (text: string) => (stderr += text) },
        stdin: Readable.from([]),
        env: { OPEN_DATA_GATE_STORE: url },
        openStores: failing,
      })
      expect(code).toBe(3)
      expect(stderr).toContain(`the store at ${shown} did not answer`)
      expect(stderr + stdout).not.toContain('SECRETPW')
    }
  })

  it('refuses a libpq keyword string from the environment without repeating it', async () => {
    const { exec } = harness()
    const ran = await exec(['apps', 'list'], { env: { OPEN_DATA_GATE_STORE: "host=db.example password='SECRET PW' dbname=gate" } })
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain('postgres://')
    expect(ran.stderr).not.toContain('SECRET')
  })

  it.each([
    [['apps', 'show', 'nope', ...S], 'no application with app token nope'],
    [['apps', 'set-limit', 'nope', '10', ...S], 'No application has the app token "nope"'],
    [['apps', 'rotate-secret', 'nope', ...S], 'No application has the app token "nope"'],
    [['apps', 'suspend', 'nope', '--reason', 'Abuse', ...S], 'No application has the app token "nope"'],
    [['apps', 'resume', 'nope', ...S], 'No application has the app token "nope"'],
    [['apps', 'set-plan', 'nope', '--default', ...S], 'No application has the app token "nope"'],
    [['apps', 'rotate-secret', 'nope', '--grace-ms', 'soon', ...S], '--grace-ms must be a whole number of milliseconds from 0 (retire the old secret now) to 604800000 (7 days), not "soon"'],
    [['apps', 'rotate-secret', 'nope', '--grace-ms', '0', '--retire-now', ...S], 'give --retire-now or --grace-ms, not both'],
    [['keys', 'rotate', 'nope', ...S], 'No active API key has the id "nope"'],
    [['apps', 'delete', 'nope', ...S], 'no application with app token nope'],
    [['apps', 'register', '--name', 'x', '--callback-prefix', 'http://x.example/', ...S], 'callbackPrefix must be an absolute https URL'],
    [['apps', 'register', '--name', 'x', '--limit', '0', ...S], '--limit must be a positive whole number, not "0"'],
    [['users', 'show', 'nobody', ...S], 'no user nobody'],
    [['keys', 'revoke', 'k', ...S], 'no active API key k'],
    [['keys', 'create', '--user', 'nobody', '--name', 'etl', ...S], 'no user nobody'],
    [['tokens', 'revoke', '--app', 'nope', ...S], 'no application with app token nope'],
  ])('exits 1, naming what was wrong, when the input is refused: %j', async (argv, message) => {
    const { exec } = harness()
    const ran = await exec(argv)
    expect(ran.code).toBe(1)
    expect(ran.stderr).toContain(message)
    expect(ran.stderr.trimEnd().split('\n')).toHaveLength(1)
  })

  it('takes a password from standard input, never from argv, and stores only its hash', async () => {
    const store = new MemoryStore()
    const { exec } = harness(store)
    const ran = await exec(['users', 'create', '--username', 'Ada', '--display-name', 'Ada Lovelace', '--email', 'ada@example.org', '--right', 'read_private', '--right', 'admin', ...S, '--json'], {
      stdin: Readable.from(['correct horse ', 'battery staple\n']),
    })
    expect(ran.code).toBe(0)
    const user = JSON.parse(ran.stdout)
    expect(user).toMatchObject({ username: 'ada', displayName: 'Ada Lovelace', hasPassword: true, rights: ['read_private', 'admin'] })
    expect(user).not.toHaveProperty('passwordHash')
    const record = store.getUser(user.id)
    expect(record?.passwordHash).toMatch(/^\$?scrypt/)
    expect(JSON.stringify(record)).not.toContain('battery')
    // The password is the whole of stdin but its final line break: it signs in.
    const gate = createGate({ store, basic: { scrypt: FAST_SCRYPT } })
    const app = await gate.applications.register({ name: 'probe' })
    const outcome = await gate.handle({
      method: 'GET',
      url: '/api/users/current.json',
      headers: { authorization: `Basic ${Buffer.from('ada:correct horse battery staple').toString('base64')}`, 'x-app-token': app.appToken },
      peerAddress: '127.0.0.1',
      tls: true,
    })
    expect(outcome.type === 'respond' && outcome.response.status).toBe(200)
  })

  it('refuses an empty password and a taken username before asking for a password', async () => {
    const { exec } = harness()
    const args = ['users', 'create', '--username', 'ada', '--display-name', 'Ada', '--email', 'ada@example.org', ...S]
    const empty = await exec(args, { stdin: Readable.from(['\n']) })
    expect(empty.code).toBe(1)
    expect(empty.stderr).toContain('the password is empty')
    expect((await exec([...args, '--no-password'])).code).toBe(0)
    const stdin = new PassThrough()
    const taken = await exec(args, { stdin })
    expect(taken).toMatchObject({ code: 1, stderr: 'open-data-gate: the username "ada" is taken\n' })
    expect(stdin.readableFlowing).toBe(null)
  })

  it('asks twice at a terminal, without echo, and refuses two different entries', async () => {
    const { exec } = harness()
    await exec(['users', 'create', '--username', 'bob', '--display-name', 'Bob', '--email', 'b@example.org', '--no-password', ...S])
    const terminal = (keys: string[]) => {
      const stream = Object.assign(new PassThrough(), { isTTY: true, raw: [] as boolean[] })
      const withRaw = Object.assign(stream, { setRawMode: (mode: boolean) => stream.raw.push(mode) })
      setImmediate(() => keys.forEach((k, i) => setTimeout(() => stream.write(k), i * 5)))
      return withRaw
    }
    const same = terminal(['pass', 'x\u007fword\r', 'password\r'])
    const ok = await exec(['users', 'set-password', 'bob', ...S], { stdin: same })
    expect(ok.stderr).toBe('New password for bob: \nNew password for bob again: \n')
    expect(ok).toMatchObject({ code: 0, stdout: 'set the password of bob\n' })
    expect(same.raw).toEqual([true, false, true, false])
    const differ = await exec(['users', 'set-password', 'bob', ...S], { stdin: terminal(['one\r', 'two\r']) })
    expect(differ.code).toBe(1)
    expect(differ.stderr).toContain('the two passwords differ; nothing was changed')
  })

  it('keeps the old secret for the gate\'s grace by default, and retires it at once with --retire-now or --grace-ms 0', async () => {
    const store = new MemoryStore()
    const { exec } = harness(store)
    const gate = createGate({ store })
    const app = await gate.applications.register({ name: 'Dash' })
    const rotate = async (...flags: string[]) => {
      const ran = await exec(['apps', 'rotate-secret', app.appToken, ...flags, ...S])
      expect([ran.code, ran.stderr]).toEqual([0, ''])
      return ran.stdout
    }
    const graced = await rotate()
    expect(graced).toMatch(/previous secret: +works until \d{4}-\d\d-\d\d/)
    expect(await gate.applications.verifySecret(app.appToken, app.secretToken)).toBe(true)
    expect((await gate.applications.find(app.appToken))?.previousSecretExpiresAt).toBeGreaterThan(Date.now() + 3_500_000)
    for (const flags of [['--retire-now'], ['--grace-ms', '0']]) {
      expect(await rotate(...flags)).toMatch(/previous secret: +stopped working now/)
      expect((await gate.applications.find(app.appToken))?.previousSecretExpiresAt).toBeNull()
    }
    expect(await gate.applications.verifySecret(app.appToken, app.secretToken)).toBe(false)
    const tooLong = await exec(['apps', 'rotate-secret', app.appToken, '--grace-ms', '604800001', ...S])
    expect(tooLong.code).toBe(1)
    expect(tooLong.stderr).toContain('graceMs must be a whole number of milliseconds from 0 (retire the old secret now) to 604800000')
  })

  it('suspends an application with a reason, shows the state in list and show, and resumes it', async () => {
    const store = new MemoryStore()
    const { exec } = harness(store)
    const gate = createGate({ store })
    const app = await gate.applications.register({ name: 'Dash' })
    const ask = async () => gate.handle({ method: 'GET', url: '/resource/x.json', headers: { 'x-app-token': app.appToken }, peerAddress: '127.0.0.1', tls: true })

    const suspended = await exec(['apps', 'suspend', app.appToken, '--reason', 'Scraping beyond its limit', ...S])
    expect([suspended.code, suspended.stderr]).toEqual([0, ''])
    expect(suspended.stdout).toMatch(/state: +suspended since \d{4}-\d\d-\d\dT[\d:]+Z\nsuspension reason: +Scraping beyond its limit\n/)
    expect(await ask()).toMatchObject({ type: 'respond', response: { status: 403, headers: { 'x-error-code': 'application_suspended' } } })
    const list = await exec(['apps', 'list', ...S])
    expect(list.stdout.split('\n')[0]).toMatch(/^APP TOKEN +NAME +LIMIT +PLAN +STATE +CALLBACK PREFIX +CREATED$/)
    expect(list.stdout.split('\n')[1]).toMatch(/ default +default +suspended +- /)
    const shown = JSON.parse((await exec(['apps', 'show', app.appToken, ...S, '--json'])).stdout)
    expect(shown.suspended).toEqual({ reason: 'Scraping beyond its limit', since: expect.any(Number) })
    // Again: a new reason, the same start; a reason that starts with a dash goes as --reason=.
    const again = JSON.parse((await exec(['apps', 'suspend', app.appToken, '--reason=-- see the mail of 2 May', ...S, '--json'])).stdout)
    expect(again.suspended).toEqual({ reason: '-- see the mail of 2 May', since: shown.suspended.since })
    const bad = await exec(['apps', 'suspend', app.appToken, '--reason', 'two\nlines', ...S])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/reason must not hold control, format or line separator characters.*U\+000A/)

    const resumed = await exec(['apps', 'resume', app.appToken, ...S])
    expect([resumed.code, resumed.stderr]).toEqual([0, ''])
    expect(resumed.stdout).toMatch(/state: +active\n/)
    expect(resumed.stdout).not.toContain('suspension reason')
    expect(await ask()).toMatchObject({ type: 'next' })
    expect(JSON.parse((await exec(['apps', 'list', ...S, '--json'])).stdout)[0].suspended).toBeNull()
  })

  it('puts an application on a plan it is told the configuration has, shows it in list and show, and back on the default', async () => {
    const store = new MemoryStore()
    const { exec } = harness(store)
    const app = await createGate({ store }).applications.register({ name: 'Dash', limit: 40 })

    const set = await exec(['apps', 'set-plan', app.appToken, 'partner', '--plans', 'free, partner', ...S])
    expect([set.code, set.stderr]).toEqual([0, ''])
    expect(set.stdout).toMatch(/limit: +40\nplan: +partner\n/)
    expect((await store.getApplication(app.appToken))?.plan).toBe('partner')
    const list = await exec(['apps', 'list', ...S])
    expect(list.stdout.split('\n')[1]).toMatch(/ 40 +partner +active /)
    expect(JSON.parse((await exec(['apps', 'show', app.appToken, ...S, '--json'])).stdout)).toMatchObject({ plan: 'partner', limit: 40 })
    // The configured plans from the environment, as an operator's shell would keep them.
    expect(JSON.parse((await exec(['apps', 'set-plan', app.appToken, 'free', ...S, '--json'], { env: { OPEN_DATA_GATE_PLANS: 'free,partner' } })).stdout)).toMatchObject({ plan: 'free' })

    // A misspelt plan, and any plan when the command is not told which there are, change nothing.
    const misspelt = await exec(['apps', 'set-plan', app.appToken, 'parnter', '--plans', 'free,partner', ...S])
    expect([misspelt.code, misspelt.stderr]).toEqual([1, 'open-data-gate: plan "parnter" is not configured; the plans are: free, partner (or null for the default)\n'])
    const untold = await exec(['apps', 'set-plan', app.appToken, 'partner', ...S])
    expect(untold.code).toBe(1)
    expect(untold.stderr).toContain("does not read the gate's configuration: name its plans with --plans")
    const badShape = await exec(['apps', 'set-plan', app.appToken, 'Partner', '--plans', 'Partner', ...S])
    expect([badShape.code, badShape.stderr]).toMatchObject([1, expect.stringContaining('plan must be a plan name')])
    expect((await store.getApplication(app.appToken))?.plan).toBe('free')

    const back = await exec(['apps', 'set-plan', app.appToken, '--default', ...S])
    expect([back.code, back.stderr]).toEqual([0, ''])
    expect(back.stdout).toMatch(/plan: +default\n/)
    expect((await store.getApplication(app.appToken))?.plan).toBeNull()
  })

  it('edits hidden input as a terminal user expects', () => {
    expect(typeHidden('', 'abc\u007fd')).toEqual({ done: false, text: 'abd' })
    expect(typeHidden('ab', '\u0015xy\r')).toEqual({ done: true, text: 'xy' })
    expect(typeHidden('ab', '\u0003')).toEqual({ cancelled: true })
    expect(typeHidden('', 'é€\u007f\n')).toEqual({ done: true, text: 'é' })
  })

  it('manages keys, tokens, limits and secrets through the gate', async () => {
    const store = new MemoryStore()
    const { exec } = harness(store)
    const json = async (argv: string[]) => {
      const ran = await exec([...argv, ...S, '--json'])
      expect(ran.stderr).toBe('')
      expect(ran.code).toBe(0)
      return JSON.parse(ran.stdout)
    }
    const user = await json(['users', 'create', '--username', 'ada', '--display-name', 'Ada', '--email', 'ada@example.org', '--no-password'])
    const key = await json(['keys', 'create', '--user', 'ada', '--name', 'Nightly ETL'])
    expect(Object.keys(key).sort()).toEqual(['apiKey', 'keyId', 'keySecret'])
    const rotated = await json(['keys', 'rotate', key.keyId])
    expect(rotated.keySecret).not.toBe(key.keySecret)
    expect(await json(['keys', 'revoke', key.keyId])).toEqual({ keyId: key.keyId, revoked: true })
    const [listed] = await json(['keys', 'list', '--user', user.id])
    expect(listed).toMatchObject({ keyId: key.keyId, name: 'Nightly ETL' })
    expect(listed.revokedAt).toEqual(expect.any(Number))

    const app = await json(['apps', 'register', '--name', 'Dash'])
    expect(await json(['apps', 'set-limit', app.appToken, '20'])).toMatchObject({ limit: 20 })
    expect(await json(['apps', 'set-limit', app.appToken, 'default'])).toMatchObject({ limit: null })
    const rotatedApp = await json(['apps', 'rotate-secret', app.appToken, '--retire-now'])
    const gate = createGate({ store })
    expect(await gate.applications.verifySecret(app.appToken, app.secretToken)).toBe(false)
    expect(await gate.applications.verifySecret(app.appToken, rotatedApp.secretToken)).toBe(true)
    // With --grace-ms the secret it replaces keeps working for that long.
    const graced = await json(['apps', 'rotate-secret', app.appToken, '--grace-ms', '3600000'])
    expect(await gate.applications.verifySecret(app.appToken, rotatedApp.secretToken)).toBe(true)
    expect(await gate.applications.verifySecret(app.appToken, graced.secretToken)).toBe(true)
    const shown = await exec(['apps', 'show', app.appToken, ...S])
    expect(shown.stdout).toMatch(/owner: +- \(an operator's\)/)
    expect(shown.stdout).toMatch(/previous secret until/)

    await gate.tokens.issue({ userId: user.id, appToken: app.appToken })
    await gate.tokens.issue({ userId: user.id, appToken: app.appToken })
    expect(await json(['tokens', 'revoke', '--app', app.appToken])).toEqual({ appToken: app.appToken, revoked: 2 })
    expect(await json(['tokens', 'revoke', '--user', 'ada'])).toEqual({ userId: user.id, revoked: 0 })

    expect(await json(['apps', 'delete', app.appToken])).toEqual({ appToken: app.appToken, deleted: true })
    expect(await json(['users', 'delete', 'ada'])).toEqual({ id: user.id, deleted: true })
    expect(await json(['users', 'list'])).toEqual([])
  })

  it('reads a rate key without consuming it, and resets it', async () => {
    const store = new MemoryStore()
    const { exec } = harness(store)
    const app = JSON.parse((await exec(['apps', 'register', '--name', 'Dash', '--limit', '10', ...S, '--json'])).stdout)
    const key = `app:${app.appToken}`
    for (let i = 0; i < 3; i++) store.consumeRate(key, 10, 60_000, 1)
    // The application's own limit is in the store; the window is the serving gate's, told on the line.
    const show = async () => JSON.parse((await exec(['rate', 'show', key, '--window-ms', '60000', ...S, '--json'])).stdout)
    expect(await show()).toMatchObject({ key, limit: 10, windowMs: 60_000, remaining: 7 })
    expect(await show()).toMatchObject({ remaining: 7 })
    const human = await exec(['rate', 'show', key, '--window-ms', '60000', ...S])
    expect(human.stdout).toMatch(/^key: +app:\S+\npolicy: +10 per 60000 ms \(the application's own limit\)\nremaining: +7\n/)
    expect(JSON.parse((await exec(['rate', 'reset', key, ...S, '--json'])).stdout)).toEqual({ key, reset: true })
    expect(await show()).toMatchObject({ remaining: 10 })
  })

  it('refuses to guess the policy of a rate key, saying what it cannot know and why', async () => {
    const store = new MemoryStore()
    const { exec } = harness(store)
    const own = JSON.parse((await exec(['apps', 'register', '--name', 'Own limit', '--limit', '10', ...S, '--json'])).stdout)
    const plain = JSON.parse((await exec(['apps', 'register', '--name', 'Configured limit', ...S, '--json'])).stdout)
    // The serving gate runs anonymous requests on 5 a minute; this budget is spent.
    for (let i = 0; i < 5; i++) store.consumeRate('anon', 5, 60_000, 1)
    const refusals: Array<[string[], RegExp]> = [
      [['rate', 'show', 'anon'], /^open-data-gate: rate show anon needs --limit and --window-ms: the throttle policy is set in the serving process \(createGate's throttle\.anonymous\), not kept in the store, so the command cannot know it; read under another policy, the key's state would show a wrong remaining \(see open-data-gate --help\)\n$/],
      [['rate', 'show', 'anon', '--limit', '5'], /rate show anon needs --limit and --window-ms/],
      [['rate', 'show', `app:${own.appToken}`], /needs --window-ms: this application's own limit \(10\) is in the store, but its window is set in the serving process \(createGate's throttle\.application\.windowMs\)/],
      [['rate', 'show', `app:${plain.appToken}`, '--window-ms', '60000'], /needs --limit and --window-ms: this application has no limit of its own, and the configured one is set in the serving process \(createGate's throttle\.application\)/],
    ]
    for (const [argv, message] of refusals) {
      const ran = await exec([...argv, ...S])
      expect(ran.code, argv.join(' ')).toBe(2)
      expect(ran.stderr).toMatch(message)
      expect(ran.stdout).toBe('')
    }
    // Told the policy, it reads the truth: nothing left.
    const told = JSON.parse((await exec(['rate', 'show', 'anon', '--limit', '5', '--window-ms', '60000', ...S, '--json'])).stdout)
    expect(told).toMatchObject({ key: 'anon', limit: 5, windowMs: 60_000, remaining: 0 })
    expect(told.retryAfterMs).toBeGreaterThan(0)
  })

  it('refuses a rate key the gate never writes, with exit 1 and the key it meant, rather than a full budget or a reset of nothing', async () => {
    const store = new MemoryStore()
    const { exec } = harness(store)
    const app = JSON.parse((await exec(['apps', 'register', '--name', 'Dash', '--limit', '10', ...S, '--json'])).stdout)
    const ada = await createGate({ store, basic: { scrypt: FAST_SCRYPT } }).users.create({ username: 'ada', displayName: 'Ada', email: 'ada@example.org' })
    for (let i = 0; i < 10; i++) store.consumeRate(`app:${app.appToken}`, 10, 60_000, 1)
    const refusals: Array<[string, RegExp]> = [
      [app.appToken, /^open-data-gate: "\S+" is not a rate key of the gate; did you mean app:(\S+)\? \(\S+ is an application's app token\); a key is one of app:APP_TOKEN, anon, anon:ADDRESS, /],
      [`ap:${app.appToken}`, /is not a rate key of the gate; did you mean app:\S+\?/],
      ['anno', /is not a rate key of the gate; did you mean anon\?/],
      ['203.0.113.9', /did you mean anon:203\.0\.113\.9\?/],
      ['nothing-like-a-key', /^open-data-gate: "nothing-like-a-key" is not a rate key of the gate; a key is one of /],
      ['app:', /rate key "app:" lacks what follows app:/],
      ['app:NoSuchApplicationToken0000', /no application with app token NoSuchApplicationToken0000, so rate key app:NoSuchApplicationToken0000 is never written/],
      ['oauth-client:NoSuchApplicationToken0000', /no application with app token NoSuchApplicationToken0000/],
      ['oauth:2001:db8::1', /an IPv6 address is keyed by its \/56 prefix, written out in full; did you mean oauth:2001:db8:0:0:0:0:0:0\/56\?/],
      ['anon:2001:db8::/56', /did you mean anon:2001:db8:0:0:0:0:0:0\/56 \(with throttle\.anonymous\.ipv6Subnet at 56\)\?/],
      ['anon:2001:db8::1', /did you mean anon:2001:db8:0:0:0:0:0:0\/56 \(with throttle\.anonymous\.ipv6Subnet at 56, the default\)\?/],
      ['login:Ada', /a username's key is its RFC 8265 form; did you mean login:ada\?/],
      ['registrations:ada', /no user with id ada, so rate key registrations:ada is never written; did you mean registrations:\S+\? \(ada is that user's username\)/],
      ['registrations:nobody', /^open-data-gate: no user with id nobody, so rate key registrations:nobody is never written\n$/],
    ]
    for (const [key, message] of refusals) {
      for (const argv of [
        ['rate', 'show', key, '--limit', '10', '--window-ms', '60000'],
        ['rate', 'reset', key],
      ]) {
        const ran = await exec([...argv, ...S])
        expect(ran, argv.join(' ')).toMatchObject({ code: 1, stdout: '' })
        expect(ran.stderr, argv.join(' ')).toMatch(message)
      }
    }
    // The application's real key was neither read as full nor reset by any of them.
    expect(JSON.parse((await exec(['rate', 'show', `app:${app.appToken}`, '--window-ms', '60000', ...S, '--json'])).stdout)).toMatchObject({ remaining: 0 })
    // Keys as the gate writes them are taken.
    for (const key of ['anon', 'anon:203.0.113.9', 'anon:2001:db8:0:0:0:0:0:0/48', 'oauth:2001:db8:0:0:0:0:0:0/56', 'login:ada', 'login-ip:203.0.113.9', `client:${app.appToken}:203.0.113.9`, `registrations:${ada.id}`]) {
      expect((await exec(['rate', 'reset', key, ...S])).code, key).toBe(0)
    }
  })

  it("reads a plan's limits as the gate writes them, per client address too, and refuses a per-address key it never writes with the key it meant", async () => {
    const store = new MemoryStore()
    const { exec } = harness(store)
    const gate = createGate({ store, logger: false, nearLimit: false, usage: { flushIntervalMs: 3_600_000 }, throttle: { application: [{ name: 'minute', limit: 10, windowMs: 60_000, per: 'address' }, { name: 'day', limit: 100, period: 'day' }] } })
    const { appToken } = await gate.applications.register({ name: 'Shared token' })
    const send = (peerAddress: string) => gate.handle(coreRequest({ headers: { 'x-app-token': appToken }, peerAddress }))
    for (let i = 0; i < 3; i++) await send('2001:db8::1')
    await send('203.0.113.9')
    await gate.close()
    const show = async (argv: string[]) => {
      const ran = await exec(['rate', 'show', ...argv, ...S, '--json'])
      expect(ran.stderr, argv.join(' ')).toBe('')
      return JSON.parse(ran.stdout) as Record<string, unknown>
    }
    // Per address: the IPv6 client by its /56, as the gate counts it; the other address apart.
    expect(await show([`{app:${appToken}}:minute@2001:db8:0:0:0:0:0:0/56`, '--limit', '10', '--window-ms', '60000'])).toMatchObject({ limit: 10, windowMs: 60_000, remaining: 7 })
    expect(await show([`{app:${appToken}}:minute@203.0.113.9`, '--limit', '10', '--window-ms', '60000'])).toMatchObject({ remaining: 9 })
    // The day's quota, per application: four requests of its 100.
    const day = await show([`{app:${appToken}}:day`, '--limit', '100', '--period', 'day'])
    expect(day).toMatchObject({ limit: 100, period: 'day', timeZone: 'UTC', remaining: 96 })
    expect((day.periodEnd as number) - (day.periodStart as number)).toBe(86_400_000)
    const human = await exec(['rate', 'show', `{app:${appToken}}:minute@203.0.113.9`, '--limit', '10', '--window-ms', '60000', ...S])
    expect(human.stdout).toMatch(/^key: +\{app:\S+\}:minute@203\.0\.113\.9\npolicy: +10 per 60000 ms\nremaining: +9\n/)
    // Reset, the address starts again with a whole budget; the other keeps its count.
    expect((await exec(['rate', 'reset', `{app:${appToken}}:minute@203.0.113.9`, ...S])).code).toBe(0)
    expect(await show([`{app:${appToken}}:minute@203.0.113.9`, '--limit', '10', '--window-ms', '60000'])).toMatchObject({ remaining: 10 })
    expect(await show([`{app:${appToken}}:minute@2001:db8:0:0:0:0:0:0/56`, '--limit', '10', '--window-ms', '60000'])).toMatchObject({ remaining: 7 })

    const refusals: Array<[string[], number, RegExp]> = [
      [[`{app:${appToken}}:minute@2001:db8::1`, '--limit', '10', '--window-ms', '60000'], 1, /an IPv6 address is keyed by its \/56 prefix, written out in full; did you mean \{app:\S+\}:minute@2001:db8:0:0:0:0:0:0\/56 \(with throttle\.anonymous\.ipv6Subnet at 56, the default\)\?/],
      [[`{app:${appToken}}:minute:203.0.113.9`, '--limit', '10', '--window-ms', '60000'], 1, /is not a rate key of the gate; did you mean \{app:\S+\}:minute@203\.0\.113\.9\? \(a limit per client address is keyed NAME@ADDRESS\)/],
      [[`{app:${appToken}}:minute@somewhere`, '--limit', '10', '--window-ms', '60000'], 1, /what follows @ is the client address the limit counts/],
      [['{app:NoSuchApplicationToken0000}:minute@203.0.113.9', '--limit', '10', '--window-ms', '60000'], 1, /no application with app token NoSuchApplicationToken0000, so rate key \S+ is never written/],
      [['{anon}:minute', '--limit', '10', '--window-ms', '60000'], 1, /the gate keeps named limits for applications only/],
      [[`{app:${appToken}}:minute@203.0.113.9`, '--limit', '10'], 2, /needs --limit and either --window-ms \(a rolling limit\) or --period day\|month \(a calendar quota\)/],
      [[`{app:${appToken}}:day`, '--limit', '100', '--period', 'week'], 2, /--period must be day or month/],
      [[`{app:${appToken}}:day`, '--limit', '100', '--period', 'day', '--time-zone', 'Mars/Olympus'], 2, /--time-zone must be an IANA time zone/],
      [[`app:${appToken}`, '--limit', '100', '--period', 'day'], 2, /--period and --time-zone are for a plan's calendar quota/],
    ]
    for (const [argv, code, message] of refusals) {
      const ran = await exec(['rate', 'show', ...argv, ...S])
      expect(ran, argv.join(' ')).toMatchObject({ code, stdout: '' })
      expect(ran.stderr, argv.join(' ')).toMatch(message)
    }
  })

  it('says to run migrate, with exit 4, on a schema older than this release or a table that is not there', async () => {
    const old = harness(new MemoryStore(), { kind: 'postgres', schema: async () => ({ name: 'portal', version: 2, needed: 4 }), migrate: async () => ({ from: 2, to: 4, applied: [3, 4] }) })
    const refused = await old.exec(['apps', 'list', ...S])
    expect(refused).toMatchObject({ code: 4, stdout: '' })
    expect(refused.stderr).toBe(
      'open-data-gate: the store at redis://127.0.0.1:1 has schema "portal" at version 2, and this release reads version 4: run open-data-gate migrate with the same --store and --schema first (see CHANGELOG.md)\n',
    )
    // migrate itself is what brings it up to date.
    expect(await old.exec(['migrate', ...S])).toMatchObject({ code: 0, stdout: 'postgres: schema migrated from version 2 to 4\n' })

    const missing = new MemoryStore()
    Object.defineProperty(missing, 'listApplications', { value: () => Promise.reject(Object.assign(new Error('relation "fresh.applications" does not exist'), { code: '42P01' })) })
    const ran = await harness(missing).exec(['apps', 'list', ...S])
    expect(ran).toMatchObject({ code: 4, stdout: '' })
    expect(ran.stderr).toBe(
      'open-data-gate: the store at redis://127.0.0.1:1 has no open-data-gate tables (relation "fresh.applications" does not exist): run open-data-gate migrate with the same store options first\n',
    )
  })

  it('prints its version with --version, and nothing else', async () => {
    const { exec, specs } = harness()
    const version = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version as string
    for (const argv of [['--version'], ['-v'], ['-hv'], ['apps', 'list', '--version']]) {
      expect(await exec(argv)).toMatchObject({ code: 0, stdout: `open-data-gate ${version}\n`, stderr: '' })
    }
    expect(specs).toEqual([])
  })

  it('says so, with exit 1, when the store cannot list users (listUsers is optional)', async () => {
    const store = new MemoryStore()
    Object.defineProperty(store, 'listUsers', { value: undefined })
    const { exec } = harness(store)
    const ran = await exec(['users', 'list', ...S])
    expect(ran).toMatchObject({ code: 1, stderr: 'open-data-gate: this store cannot list users (it has no listUsers)\n' })
    // Everything else works on such a store.
    expect((await exec(['apps', 'list', ...S])).code).toBe(0)
  })

  it('prints help with exit 0, for everything or one group', async () => {
    const { exec } = harness()
    const all = await exec(['--help'])
    expect(all.code).toBe(0)
    expect(all.stdout).toContain('Exit codes: 0 done, 1 refused (bad input, not found), 2 usage, 3 store unreachable,\n4 store schema missing or older than this release (run migrate).')
    const keys = await exec(['keys', '--help'])
    expect(keys.stdout).toContain('keys rotate KEY_ID')
    expect(keys.stdout).not.toContain('apps register')
  })
})
