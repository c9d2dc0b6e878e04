// Hono's middleware and `c.get('gate')`, type-checked with `types: []` (Hono's own types are Web-standard).
import { Hono } from 'hono'
import { createGate, type GateContext } from 'open-data-gate'
import { honoGate, honoGuard } from 'open-data-gate/hono'

const gate = createGate({ trustProxy: true })
const app = new Hono()
app.use(honoGate(gate))
app.get('/private/:id', honoGuard(gate, { auth: 'required' }), (c) => {
  const context: GateContext = c.get('gate')
  return c.json({ id: c.req.param('id'), user: context.user?.username ?? null })
})
export default app
