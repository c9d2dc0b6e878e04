/**
 * The soak's figures from its samples, the checks that must hold, and the plot of
 * throughput and latency over time (an SVG written by hand: polylines, the faults marked).
 */
import type { Sample } from './client.js'

/** A fault injected into Redis: when it started, when Redis answered PING again, and the window in which a 503 is the outage's. */
export interface Outage {
  label: string
  start: number
  recovered: number
  /** `recovered` + the margin the gate is given to use Redis again. */
  windowEnd: number
}

export interface LimitFigures {
  limit: number
  windowMs: number
  instances: number
  admitted: number
  refused: number
  /** The most requests admitted over the limit in any stretch of time outside the outages (must be 0). */
  excessOutsideOutages: number
  /** The most requests admitted over the documented tolerance in any stretch of time overlapping an outage (must be 0). */
  excessDuringOutages: number
  /** The most admitted over the exact limit in a stretch overlapping an outage (the local counting, within the tolerance). */
  overLimitDuringOutages: number
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}

export const overlaps = (sample: { start: number; end: number }, outages: Outage[]): boolean => outages.some((o) => sample.end >= o.start && sample.start <= o.windowEnd)

/**
 * GCRA admits at most `limit + elapsed × limit / windowMs` requests in any stretch of time
 * (the burst, then the rate). For every stretch from one admitted request's start to a
 * later one's end (up to three windows long), the count admitted must stay within that;
 * in a stretch that overlaps an outage, each instance may count locally up to the full
 * limit besides Redis's own (docs/guides/throttling.md): (instances + 1) times it.
 */
export function limitFigures(samples: Sample[], outages: Outage[], limit: number, windowMs: number, instances: number): LimitFigures {
  const admitted = samples.filter((s) => s.kind === 'hot-app' && s.status === 200).sort((a, b) => a.start - b.start)
  const figures: LimitFigures = {
    limit,
    windowMs,
    instances,
    admitted: admitted.length,
    refused: samples.filter((s) => s.kind === 'hot-app' && s.status === 429).length,
    excessOutsideOutages: 0,
    excessDuringOutages: 0,
    overLimitDuringOutages: 0,
  }
  for (let i = 0; i < admitted.length; i++) {
    const first = admitted[i] as Sample
    let end = first.end
    for (let j = i; j < admitted.length; j++) {
      const last = admitted[j] as Sample
      end = Math.max(end, last.end)
      const span = end - first.start
      if (span > 3 * windowMs) break
      const allowed = Math.ceil(limit + (span * limit) / windowMs)
      const count = j - i + 1
      if (overlaps({ start: first.start, end }, outages)) {
        figures.overLimitDuringOutages = Math.max(figures.overLimitDuringOutages, count - allowed)
        figures.excessDuringOutages = Math.max(figures.excessDuringOutages, count - (instances + 1) * allowed)
      } else {
        figures.excessOutsideOutages = Math.max(figures.excessOutsideOutages, count - allowed)
      }
    }
  }
  return figures
}

export interface Second {
  t: number
  requests: number
  unavailable: number
  p50: number
  p99: number
  max: number
}

/** Per second of the run (by when the answer came): requests, 503s, latency. */
export function timeline(samples: Sample[], durationMs: number): Second[] {
  const seconds = Math.ceil(durationMs / 1000)
  const buckets: number[][] = Array.from({ length: seconds }, () => [])
  const unavailable = new Array<number>(seconds).fill(0)
  for (const s of samples) {
    const i = Math.floor(s.end / 1000)
    if (i < 0 || i >= seconds) continue
    ;(buckets[i] as number[]).push(s.end - s.start)
    if (s.status === 503 || s.verdict === 'outage-503') unavailable[i]!++
  }
  return buckets.map((latencies, t) => {
    latencies.sort((a, b) => a - b)
    return { t, requests: latencies.length, unavailable: unavailable[t] as number, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? 0 }
  })
}

const esc = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Two panels over the same time axis: requests per second (and 503s), latency p50/p99/max with the bound; the faults as shaded bands. */
export function svgPlot(seconds: Second[], outages: Outage[], boundMs: number, title: string): string {
  const width = 1000
  const left = 70
  const right = 20
  const plotW = width - left - right
  const panelH = 220
  const top1 = 60
  const top2 = top1 + panelH + 70
  const height = top2 + panelH + 60
  const duration = Math.max(1, seconds.length)
  const x = (t: number) => left + (t / duration) * plotW
  const niceMax = (v: number) => {
    const steps = [1, 2, 5]
    for (let p = 1; ; p *= 10) for (const s of steps) if (s * p >= v) return s * p
  }
  const maxRate = niceMax(Math.max(10, ...seconds.map((s) => s.requests)))
  const maxLatency = niceMax(Math.max(boundMs * 1.2, ...seconds.map((s) => s.max)))
  const y1 = (v: number) => top1 + panelH - (v / maxRate) * panelH
  const y2 = (v: number) => top2 + panelH - (Math.min(v, maxLatency) / maxLatency) * panelH
  const line = (values: number[], y: (v: number) => number, color: string, dash = '') =>
    `<polyline fill="none" stroke="${color}" stroke-width="1.6"${dash === '' ? '' : ` stroke-dasharray="${dash}"`} points="${values.map((v, t) => `${x(t + 0.5).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"/>`
  const out: string[] = []
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`)
  out.push(`<rect width="${width}" height="${height}" fill="white"/>`)
  out.push(`<text x="${left}" y="24" font-size="16" font-weight="bold">${esc(title)}</text>`)
  for (const [top, label] of [
    [top1, 'requests per second (answers completed)'],
    [top2, 'latency per second, ms'],
  ] as const) {
    out.push(`<text x="${left}" y="${top - 10}" font-weight="bold">${label}</text>`)
    for (const o of outages) {
      const x0 = x(o.start / 1000)
      const x1 = x(o.recovered / 1000)
      out.push(`<rect x="${x0.toFixed(1)}" y="${top}" width="${Math.max(2, x1 - x0).toFixed(1)}" height="${panelH}" fill="#f4b6b6" opacity="0.6"/>`)
      out.push(`<line x1="${x0.toFixed(1)}" x2="${x0.toFixed(1)}" y1="${top}" y2="${top + panelH}" stroke="#c00" stroke-width="1.5"/>`)
      out.push(`<text x="${(x0 + 3).toFixed(1)}" y="${top + 14}" fill="#a00">${esc(o.label)}</text>`)
    }
    out.push(`<rect x="${left}" y="${top}" width="${plotW}" height="${panelH}" fill="none" stroke="#333"/>`)
  }
  for (let i = 0; i <= 4; i++) {
    const v1 = (maxRate * i) / 4
    const v2 = (maxLatency * i) / 4
    out.push(`<line x1="${left}" x2="${left + plotW}" y1="${y1(v1)}" y2="${y1(v1)}" stroke="#ddd"/><text x="${left - 6}" y="${y1(v1) + 4}" text-anchor="end">${v1}</text>`)
    out.push(`<line x1="${left}" x2="${left + plotW}" y1="${y2(v2)}" y2="${y2(v2)}" stroke="#ddd"/><text x="${left - 6}" y="${y2(v2) + 4}" text-anchor="end">${v2}</text>`)
  }
  const tickEvery = niceMax(duration / 10)
  for (let t = 0; t <= duration; t += tickEvery) {
    for (const top of [top1, top2]) out.push(`<text x="${x(t)}" y="${top + panelH + 16}" text-anchor="middle">${t} s</text>`)
  }
  out.push(line(seconds.map((s) => s.requests), y1, '#1f5fbf'))
  out.push(line(seconds.map((s) => s.unavailable), y1, '#d08000'))
  out.push(`<line x1="${left}" x2="${left + plotW}" y1="${y2(boundMs)}" y2="${y2(boundMs)}" stroke="#c00" stroke-dasharray="6 4"/>`)
  out.push(`<text x="${left + plotW - 4}" y="${y2(boundMs) - 4}" text-anchor="end" fill="#c00">bound: ${boundMs} ms</text>`)
  out.push(line(seconds.map((s) => s.max), y2, '#999'))
  out.push(line(seconds.map((s) => s.p99), y2, '#7a3fbf'))
  out.push(line(seconds.map((s) => s.p50), y2, '#1f8f3f'))
  const legend = [
    ['#1f5fbf', 'requests/s'],
    ['#d08000', '503s/s (record lookups during an outage)'],
    ['#1f8f3f', 'p50'],
    ['#7a3fbf', 'p99'],
    ['#999', 'max'],
    ['#f4b6b6', 'Redis down or paused'],
  ]
  legend.forEach(([color, label], i) => {
    const lx = left + (i % 3) * 300
    const ly = height - 30 + Math.floor(i / 3) * 16
    out.push(`<rect x="${lx}" y="${ly - 9}" width="14" height="10" fill="${color}"/><text x="${lx + 20}" y="${ly}">${esc(label as string)}</text>`)
  })
  out.push('</svg>')
  return out.join('\n')
}
