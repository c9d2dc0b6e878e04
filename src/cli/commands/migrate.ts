/** `migrate`: create or update the PostgreSQL schema of the stores the line names. */
import type { Command } from '../command.js'

export const MIGRATE_COMMANDS: Record<string, Command> = {
  migrate: {
    usage: 'migrate',
    summary: 'create or update the PostgreSQL schema (Redis needs none)',
    args: [],
    options: [],
    async run({ stores }) {
      const results = []
      for (const opened of [stores.records, stores.rates]) {
        if (opened === undefined) continue
        const result = await opened.migrate()
        results.push({ store: opened.kind, ...(result ?? { from: null, to: null, applied: [] }) })
      }
      const human = results
        .map((r) =>
          r.from === null
            ? `${r.store}: nothing to migrate\n`
            : r.applied.length === 0
              ? `${r.store}: schema is up to date (version ${r.to})\n`
              : `${r.store}: schema migrated from version ${r.from} to ${r.to}\n`,
        )
        .join('')
      return { json: results.length === 1 ? results[0] : results, human }
    },
  },
}
