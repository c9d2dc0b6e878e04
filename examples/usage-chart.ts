/**
 * An application's usage as a bar chart, drawn on the server as inline SVG: the developer
 * settings page shows it under a CSP with no inline script or style, so the chart is plain
 * markup with presentation attributes. Each bar stacks the requests the host answered, the
 * ones throttled (429) and the ones the gate refused, told apart by pattern as well as
 * color. Requests a shadow limit would have throttled (let through, counted by limit name
 * in `shadow`) are a series of their own, drawn in front of each bar from its foot, since
 * they are among the answered ones: summed over the limits in the chart, by limit in the
 * table, and the series and its legend appear only when a bucket has any. The SVG is one image with a title and a description of the totals, and the same
 * numbers follow in a table for people who cannot see it. Times are UTC: the server does
 * not know the reader's time zone.
 */

/** One bucket of `gate.usage.query`'s answer (only the counts the chart draws). */
export interface ChartBucket {
  /** The bucket's start, epoch ms. */
  readonly start: number
  /** Every request of the bucket, the throttled and refused ones included. */
  readonly requests: number
  readonly throttled: number
  readonly refused: number
  /** Requests a shadow limit would have throttled, by limit name (let through, so among `requests`). */
  readonly shadow?: Readonly<Record<string, number>>
}

export interface UsageChartOptions {
  /** The buckets' size, which sets how their times are written. */
  granularity: 'minute' | 'hour' | 'day'
  /** The chart's accessible name, e.g. "Last 24 hours". */
  title: string
  /** Unique on the page: the SVG's title, description and patterns are referenced by id. */
  id: string
}

const WIDTH = 480
/** The legend's second row, for the shadow series, when there is one: this much taller. */
const SHADOW_ROW = 14
const PLOT = { left: 44, right: 470, bottom: 166 }
/** Where the legend starts: right of the value axis' title above the plot. */
const LEGEND = 120
const COLORS = { answered: '#0969da', throttled: '#bf8700', refused: '#cf222e', shadow: '#8250df' }

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
/** A count as drawn: anything but a finite non-negative number is 0. */
const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0)
/** Coordinates with two decimals at most, so the markup stays short. */
const px = (n: number) => String(Math.round(n * 100) / 100)
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

function when(start: number, granularity: UsageChartOptions['granularity']): string {
  const iso = new Date(start).toISOString()
  return granularity === 'day' ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${iso.slice(11, 16)}`
}

/** The short label under the axis: the hour of the day, or the month and day. */
function tick(start: number, granularity: UsageChartOptions['granularity']): string {
  const iso = new Date(start).toISOString()
  return granularity === 'day' ? iso.slice(5, 10) : iso.slice(11, 16)
}

/**
 * The chart and its table, as an HTML fragment (a `<figure>`); every text given is escaped.
 * @example
 * const { buckets } = await gate.usage.query({ appToken, from, granularity: 'hour' })
 * html += usageChart(buckets, { granularity: 'hour', title: 'Last 24 hours', id: `day-${appToken}` })
 */
export function usageChart(buckets: readonly ChartBucket[], options: UsageChartOptions): string {
  const id = options.id.replace(/[^\w-]/g, '_')
  const { granularity } = options
  const rows = buckets.map((b) => {
    const requests = count(b.requests)
    const throttled = Math.min(count(b.throttled), requests)
    const refused = Math.min(count(b.refused), requests - throttled)
    const byLimit = Object.entries(b.shadow ?? {})
      .map(([name, n]) => [name, count(n)] as const)
      .filter(([, n]) => n > 0)
      .sort(([a], [b]) => a.localeCompare(b))
    const shadow = byLimit.reduce((sum, [, n]) => sum + n, 0)
    return { start: b.start, requests, throttled, refused, shownThrottled: count(b.throttled), shownRefused: count(b.refused), shadowed: shadow, byLimit }
  })
  const max = Math.max(0, ...rows.map((r) => Math.max(r.requests, r.shadowed)))
  const total = (key: 'requests' | 'shownThrottled' | 'shownRefused' | 'shadowed') => rows.reduce((sum, r) => sum + r[key], 0)
  const shadowShown = total('shadowed') > 0
  const top = shadowShown ? 30 + SHADOW_ROW : 30
  const height = shadowShown ? 200 + SHADOW_ROW : 200
  const bottom = PLOT.bottom + (top - 30)
  const wouldHave = (r: (typeof rows)[number]) => `${r.shadowed} would have been throttled${r.byLimit.length > 1 ? ` (${r.byLimit.map(([name, n]) => `${name}: ${n}`).join(', ')})` : r.byLimit.length === 1 ? ` by ${(r.byLimit[0] as readonly [string, number])[0]}` : ''}`
  const unit = granularity === 'day' ? 'day' : granularity
  const most = Math.max(0, ...rows.map((r) => r.requests))
  const peak = rows.find((r) => r.requests === most)
  const shadowDesc = shadowShown ? `, ${total('shadowed')} of them would have been throttled by a shadow limit` : ''
  const desc =
    max === 0 || peak === undefined
      ? 'No requests in this period.'
      : `${plural(total('requests'), 'request')}, ${total('shownThrottled')} throttled, ${total('shownRefused')} refused${shadowDesc}; the most in one ${unit}: ${most} ${granularity === 'day' ? 'on' : 'at'} ${when(peak.start, granularity)} UTC.`

  const plotHeight = bottom - top
  const slot = rows.length === 0 ? 0 : (PLOT.right - PLOT.left) / rows.length
  const barWidth = Math.max(1, slot * 0.8)
  const marks: string[] = []
  rows.forEach((r, i) => {
    if (r.requests === 0 && r.shadowed === 0) return
    const x = px(PLOT.left + i * slot + (slot - barWidth) / 2)
    let y = bottom
    const segments: [string, number, string][] = [
      ['answered', r.requests - r.throttled - r.refused, COLORS.answered],
      ['throttled', r.throttled, `url(#${id}-throttled)`],
      ['refused', r.refused, `url(#${id}-refused)`],
    ]
    const parts = segments.map(([kind, n, fill]) => {
      const height = (n / max) * plotHeight
      y -= height
      return n === 0 ? '' : `<rect class="bar bar-${kind}" data-bucket="${i}" x="${x}" y="${px(y)}" width="${px(barWidth)}" height="${px(height)}" fill="${fill}"/>`
    })
    // In front of the bar, narrower and outlined: among the answered requests, not on top of them.
    if (r.shadowed > 0) {
      const shadowHeight = (r.shadowed / max) * plotHeight
      const shadowWidth = Math.max(1, barWidth * 0.5)
      parts.push(
        `<rect class="bar bar-shadow" data-bucket="${i}" x="${px(PLOT.left + i * slot + (slot - shadowWidth) / 2)}" y="${px(bottom - shadowHeight)}" width="${px(shadowWidth)}" height="${px(shadowHeight)}" fill="url(#${id}-shadow)" stroke="currentColor" stroke-width="0.75"/>`,
      )
    }
    const told = `${when(r.start, granularity)} UTC: ${plural(r.requests, 'request')}, ${r.shownThrottled} throttled, ${r.shownRefused} refused${r.shadowed > 0 ? `, ${wouldHave(r)}` : ''}`
    marks.push(`<g><title>${escape(told)}</title>${parts.join('')}</g>`)
  })

  // Three labels along the time axis (first, middle, last) are enough to read it by.
  const ticks = rows.length === 0 ? [] : [...new Set([0, Math.floor((rows.length - 1) / 2), rows.length - 1])]
  const xLabels = ticks
    .map((i) => `<text x="${px(PLOT.left + i * slot + slot / 2)}" y="${bottom + 16}" text-anchor="middle">${escape(tick((rows[i] as ChartBucket).start, granularity))}</text>`)
    .join('')
  const yLabels =
    max === 0
      ? `<text x="${PLOT.left - 6}" y="${bottom + 4}" text-anchor="end">0</text>`
      : `<text x="${PLOT.left - 6}" y="${bottom + 4}" text-anchor="end">0</text><text x="${PLOT.left - 6}" y="${top + 4}" text-anchor="end">${max}</text><line x1="${PLOT.left}" y1="${top}" x2="${PLOT.right}" y2="${top}" stroke="currentColor" stroke-opacity="0.25" stroke-dasharray="3 3"/>`
  const empty = max === 0 ? `<text x="${(PLOT.left + PLOT.right) / 2}" y="${(top + bottom) / 2}" text-anchor="middle">No requests in this period</text>` : ''
  const swatch = (x: number, y: number, fill: string, label: string, kind: string) =>
    `<g class="legend legend-${kind}"><rect x="${x}" y="${y}" width="12" height="12" fill="${fill}" stroke="currentColor" stroke-width="0.5"/><text x="${x + 16}" y="${y + 10}">${label}</text></g>`
  const legend =
    swatch(LEGEND, 6, COLORS.answered, 'Answered', 'answered') +
    swatch(LEGEND + 100, 6, `url(#${id}-throttled)`, 'Throttled (429)', 'throttled') +
    swatch(LEGEND + 240, 6, `url(#${id}-refused)`, 'Refused', 'refused') +
    (shadowShown ? swatch(LEGEND, 6 + SHADOW_ROW, `url(#${id}-shadow)`, 'Would have been throttled (shadow limits, let through)', 'shadow') : '')
  const axisTitle = `<text x="${PLOT.right}" y="${height - 2}" text-anchor="end">${granularity === 'day' ? 'Day' : 'Hour'} (UTC)</text><text x="4" y="${top - 8}">Requests</text>`

  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="${id}-title ${id}-desc" viewBox="0 0 ${WIDTH} ${height}" width="100%" font-size="11" font-family="system-ui, sans-serif" fill="currentColor">` +
    `<title id="${id}-title">${escape(options.title)}</title><desc id="${id}-desc">${escape(desc)}</desc>` +
    // Stripes for throttled, dots for refused: the kinds differ in shape, not by color alone.
    `<defs><pattern id="${id}-throttled" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="${COLORS.throttled}"/><line x1="1.5" y1="0" x2="1.5" y2="6" stroke="#fff" stroke-width="2"/></pattern>` +
    `<pattern id="${id}-refused" width="5" height="5" patternUnits="userSpaceOnUse"><rect width="5" height="5" fill="${COLORS.refused}"/><circle cx="2.5" cy="2.5" r="1.2" fill="#fff"/></pattern>` +
    // Cross-hatched for would-have-been-throttled, apart from the answered bar it stands in.
    (shadowShown
      ? `<pattern id="${id}-shadow" width="6" height="6" patternUnits="userSpaceOnUse"><rect width="6" height="6" fill="${COLORS.shadow}"/><path d="M0 0L6 6M6 0L0 6" stroke="#fff" stroke-width="1"/></pattern>`
      : '') +
    '</defs>' +
    legend +
    `<line x1="${PLOT.left}" y1="${bottom}" x2="${PLOT.right}" y2="${bottom}" stroke="currentColor"/>` +
    yLabels +
    xLabels +
    axisTitle +
    marks.join('') +
    empty +
    '</svg>'

  const head = granularity === 'day' ? 'Day (UTC)' : granularity === 'hour' ? 'Hour (UTC)' : 'Minute (UTC)'
  const shadowCell = (r: (typeof rows)[number]) => (shadowShown ? `<td>${escape(r.byLimit.length > 1 ? `${r.shadowed} (${r.byLimit.map(([name, n]) => `${name}: ${n}`).join(', ')})` : r.byLimit.length === 1 ? `${r.shadowed} (${(r.byLimit[0] as readonly [string, number])[0]})` : '0')}</td>` : '')
  const body = rows.map((r) => `<tr><th scope="row">${when(r.start, granularity)}</th><td>${r.requests}</td><td>${r.shownThrottled}</td><td>${r.shownRefused}</td>${shadowCell(r)}</tr>`).join('')
  const shadowHead = shadowShown ? '<th scope="col">Would have been throttled</th>' : ''
  const table = `<details><summary>${escape(options.title)} as a table</summary><table><caption>${escape(options.title)}: ${escape(desc)}</caption><thead><tr><th scope="col">${head}</th><th scope="col">Requests</th><th scope="col">Throttled</th><th scope="col">Refused</th>${shadowHead}</tr></thead><tbody>${body}</tbody></table></details>`
  return `<figure class="usage-chart">${svg}${table}</figure>`
}
