// A node:http app type-checked with no `types` list (TypeScript 7's default loads no @types
// package): the package's declarations must bring Node's types themselves (`Buffer`, `node:http`).
import { createServer, type IncomingMessage } from 'node:http'
import { createGate, type GateRequest, type RequestBody } from 'open-data-gate'
import { nodeGate, type GatedRequest } from 'open-data-gate/node'

const gate = createGate()
export const server = createServer(nodeGate(gate, (req: GatedRequest, res) => res.end(req.gate.application?.name ?? '')))
export const peer = (req: IncomingMessage): string | undefined => req.socket.remoteAddress
export const body = (request: GateRequest): Promise<RequestBody> | undefined => request.readBody?.(1024)
