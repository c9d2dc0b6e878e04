/**
 * Features that only work with another one: the API key endpoints make keys that only
 * HTTP Basic accepts, connected apps list the grants only the OAuth server makes, and the
 * current-user endpoints answer only a request that `basic` or `oauth` authenticated.
 * Such a feature is off by default while what it needs is off (`basic: false` alone turns
 * the API key endpoints off too), and asking for it explicitly then is a mistake.
 */

/**
 * The value of a dependent option: as given while what it needs is on; `false` by default
 * while it is off.
 * @param needs the option(s) it needs, as the error names them (`basic`, `basic or oauth`)
 * @throws {TypeError} when the option is given (not `false`) while what it needs is off
 */
export function dependentOption<T>(name: string, value: T | false | undefined, needed: boolean, needs: string): T | false | undefined {
  if (needed) return value
  if (value === undefined || value === false) return false
  const off = needs.split(' or ').map((option) => `${option}: false`).join(' and ')
  throw new TypeError(`open-data-gate: ${name} needs ${needs}, which is off (${off}); leave ${name} out or set it to false`)
}
