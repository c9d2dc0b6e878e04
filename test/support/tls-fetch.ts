/** A fetch that trusts the test certificate, for clients that take a custom fetch. */
import { Agent } from 'undici'
import { TEST_CERT } from '../adapters/servers.js'

export const tlsAgent = new Agent({ connect: { ca: TEST_CERT } })

// The global fetch takes an undici dispatcher; its types come from a copy of undici's.
export const tlsFetch: typeof fetch = (input, init) => fetch(input, { ...init, dispatcher: tlsAgent } as unknown as RequestInit)

/** The same, typed for oauth4webapi's and openid-client's `customFetch` slot. */
export const tlsCustomFetch = (url: string, options: object): Promise<Response> => tlsFetch(url, options as RequestInit)
