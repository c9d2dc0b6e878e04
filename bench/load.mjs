// The load generator, kept alive for the whole run and driven over IPC so its startup
// (and autocannon's WebAssembly histograms) is paid once, not per window. The parent
// spawns it under taskset on the core the servers don't use.
import autocannon from 'autocannon'

process.on('message', async (job) => {
  try {
    const cpuBefore = process.cpuUsage()
    const r = await autocannon({
      url: job.url,
      headers: job.headers,
      connections: job.connections,
      pipelining: 1,
      duration: job.duration,
    })
    const cpu = process.cpuUsage(cpuBefore)
    process.send({
      type: 'result',
      requests: r.requests.total,
      seconds: r.duration,
      p99: r.latency.p99,
      errors: r.errors,
      timeouts: r.timeouts,
      non2xx: r.non2xx,
      statusCodeStats: r.statusCodeStats,
      cpuUs: cpu.user + cpu.system,
    })
  } catch (err) {
    process.send({ type: 'result', failed: String(err?.stack ?? err) })
  }
})
process.on('disconnect', () => process.exit(0))
