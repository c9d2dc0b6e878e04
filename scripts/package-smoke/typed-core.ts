// Checked with skipLibCheck off: our own declaration files must be clean, not just usable.
// (Koa is left out: @types/koa itself fails a full lib check against content-disposition's types.)
import express from 'express'
import { createGate, GateError, type GateOutcome } from 'open-data-gate'
import { expressGate } from 'open-data-gate/express'
import { nodeGate, type GatedRequest } from 'open-data-gate/node'

const gate = createGate()
express().use(expressGate(gate))
nodeGate(gate, (req: GatedRequest, res) => res.end(req.gate.application?.appToken ?? ''))
export const isError = (e: unknown): e is GateError => e instanceof GateError
export type Outcome = GateOutcome
