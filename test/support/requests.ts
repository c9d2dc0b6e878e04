import type { GateRequest } from '../../src/index.js'

/** A plain core request, as an adapter would build it. */
export function coreRequest(overrides: Partial<GateRequest> = {}): GateRequest {
  return {
    method: 'GET',
    url: '/resource/abcd-1234.json',
    headers: {},
    peerAddress: '203.0.113.5',
    tls: true,
    ...overrides,
  }
}
