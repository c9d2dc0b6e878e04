import type { StoreCheck } from './check.js'

export const gateChecks: readonly StoreCheck[] = []
