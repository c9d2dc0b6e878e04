/**
 * The lookup the gate composes from a store's separate calls (src/store/composed-lookup.ts),
 * for a store without `lookupRequest` of its own: it passes the kit's lookup checks, those
 * of several limits included (taken with the store's `consumeLimits`), as a store's own does.
 */
import { afterAll, describe, it } from 'vitest'
import { MemoryStore } from '../src/index.js'
import { composedLookup } from '../src/store/composed-lookup.js'
import { describeStore } from '../src/testing/index.js'

class ComposedLookupStore extends MemoryStore {
  readonly lookupRequest = composedLookup(this, this)
}

describeStore('MemoryStore with the composed lookup', () => new ComposedLookupStore(), { describe, it, after: afterAll })
