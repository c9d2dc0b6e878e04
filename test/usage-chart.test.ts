/**
 * The example portal's usage chart: an application's requests drawn as server-rendered
 * SVG (no script, so it shows under the pages' CSP), with the same numbers in a table for
 * people who cannot see the chart.
 */
import { describe, expect, it } from 'vitest'
import { usageChart, type ChartBucket } from '../examples/usage-chart.js'

const HOUR = 3_600_000
const start = Date.UTC(2026, 10, 25, 0)
const hours = (counts: [number, number, number][]): ChartBucket[] =>
  counts.map(([requests, throttled, refused], i) => ({ start: start + i * HOUR, requests, throttled, refused }))

/** The bars' heights, by kind and bucket, read back from the SVG. */
function bars(svg: string, kind: string): Map<number, number> {
  const found = new Map<number, number>()
  for (const match of svg.matchAll(/<rect class="bar bar-([a-z]+)" data-bucket="(\d+)"[^>]* height="([\d.]+)"/g)) {
    if (match[1] === kind) found.set(Number(match[2]), Number(match[3]))
  }
  return found
}

/** The table's rows, as text cells. */
function rows(html: string): string[][] {
  const body = html.slice(html.indexOf('<tbody>'), html.indexOf('</tbody>'))
  return [...body.matchAll(/<tr>(.*?)<\/tr>/g)].map((row) => [...(row[1] as string).matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/g)].map((cell) => cell[1] as string))
}

describe('usageChart', () => {
  it('draws each bucket as a bar whose height is proportional to its requests', () => {
    const html = usageChart(hours([[10, 0, 0], [40, 0, 0], [0, 0, 0], [20, 0, 0]]), { granularity: 'hour', id: 'c1', title: 'Last 24 hours' })
    const heights = bars(html, 'answered')
    const tallest = heights.get(1) as number
    expect(tallest).toBeGreaterThan(0)
    expect((heights.get(0) as number) / tallest).toBeCloseTo(10 / 40, 5)
    expect((heights.get(3) as number) / tallest).toBeCloseTo(20 / 40, 5)
    expect(heights.get(2) ?? 0).toBe(0)
  })

  it('stacks throttled and refused requests on the answered ones, each with a pattern and a legend', () => {
    const html = usageChart(hours([[10, 4, 2], [20, 0, 0]]), { granularity: 'hour', id: 'c2', title: 'Last 24 hours' })
    const answered = bars(html, 'answered')
    const throttled = bars(html, 'throttled')
    const refused = bars(html, 'refused')
    const full = answered.get(1) as number
    // The first bar: 4 answered + 4 throttled + 2 refused, half as tall as the 20 of the second.
    expect(((answered.get(0) as number) + (throttled.get(0) as number) + (refused.get(0) as number)) / full).toBeCloseTo(0.5, 5)
    expect((throttled.get(0) as number) / full).toBeCloseTo(4 / 20, 5)
    expect((refused.get(0) as number) / full).toBeCloseTo(2 / 20, 5)
    // Told apart by pattern as well as color, and named in words.
    expect(html).toMatch(/class="bar bar-throttled"[^>]*fill="url\(#c2-throttled\)"/)
    expect(html).toMatch(/class="bar bar-refused"[^>]*fill="url\(#c2-refused\)"/)
    expect(html).toContain('Throttled (429)')
    expect(html).toContain('Refused')
  })

  it('puts the same numbers in a table, one row per bucket', () => {
    const buckets = hours([[10, 4, 2], [0, 0, 0], [7, 0, 1]])
    const table = rows(usageChart(buckets, { granularity: 'hour', id: 'c3', title: 'Last 24 hours' }))
    expect(table).toEqual([
      ['2026-11-25 00:00', '10', '4', '2'],
      ['2026-11-25 01:00', '0', '0', '0'],
      ['2026-11-25 02:00', '7', '0', '1'],
    ])
    const days = rows(usageChart([{ start, requests: 3, throttled: 1, refused: 0 }], { granularity: 'day', id: 'c4', title: 'Last 30 days' }))
    expect(days).toEqual([['2026-11-25', '3', '1', '0']])
  })

  it('draws requests a shadow limit would have throttled as a series of its own, summed over the limits, with a legend and a column by limit', () => {
    const buckets: ChartBucket[] = [
      { start, requests: 20, throttled: 0, refused: 0, shadow: { daily: 6, burst: 2 } },
      { start: start + HOUR, requests: 10, throttled: 0, refused: 0, shadow: {} },
      { start: start + 2 * HOUR, requests: 10, throttled: 0, refused: 0, shadow: { daily: 5 } },
    ]
    const html = usageChart(buckets, { granularity: 'hour', id: 'c7', title: 'Last 24 hours' })
    const shadow = bars(html, 'shadow')
    const answered = bars(html, 'answered')
    // In front of the answered bar, not stacked on it: 8 of the 20 requests, and 5 of 10.
    expect((shadow.get(0) as number) / (answered.get(0) as number)).toBeCloseTo(8 / 20, 5)
    expect((shadow.get(2) as number) / (answered.get(0) as number)).toBeCloseTo(5 / 20, 5)
    expect(shadow.has(1)).toBe(false)
    expect(html).toMatch(/class="bar bar-shadow"[^>]*fill="url\(#c7-shadow\)"/)
    expect(html).toContain('<pattern id="c7-shadow"')
    expect(html).toMatch(/class="legend legend-shadow".*Would have been throttled/)
    expect(html).toContain('2026-11-25 00:00 UTC: 20 requests, 0 throttled, 0 refused, 8 would have been throttled (burst: 2, daily: 6)')
    expect(html).toMatch(/<desc id="c7-desc">40 requests, 0 throttled, 0 refused, 13 of them would have been throttled by a shadow limit;/)
    expect(rows(html)).toEqual([
      ['2026-11-25 00:00', '20', '0', '0', '8 (burst: 2, daily: 6)'],
      ['2026-11-25 01:00', '10', '0', '0', '0'],
      ['2026-11-25 02:00', '10', '0', '0', '5 (daily)'],
    ])
  })

  it('leaves the shadow series, its legend and its column out when no request would have been throttled', () => {
    const html = usageChart([{ start, requests: 5, throttled: 1, refused: 0, shadow: { daily: 0 } }], { granularity: 'hour', id: 'c8', title: 'Last 24 hours' })
    expect(bars(html, 'shadow').size).toBe(0)
    expect(html).not.toContain('Would have been throttled')
    expect(rows(html)).toEqual([['2026-11-25 00:00', '5', '1', '0']])
  })

  it('is an image with a title and a description of the totals for assistive technology', () => {
    const html = usageChart(hours([[10, 4, 2], [5, 0, 0]]), { granularity: 'hour', id: 'c5', title: 'Last 24 hours' })
    expect(html).toMatch(/<svg [^>]*role="img"[^>]*aria-labelledby="c5-title c5-desc"/)
    expect(html).toContain('<title id="c5-title">Last 24 hours</title>')
    expect(html).toMatch(/<desc id="c5-desc">15 requests, 4 throttled, 2 refused; the most in one hour: 10 at 2026-11-25 00:00 UTC\.<\/desc>/)
    expect(html).not.toMatch(/<script|style=|<style/)
  })

  it('draws an empty chart with a note when there were no requests', () => {
    for (const buckets of [hours([[0, 0, 0], [0, 0, 0]]), []]) {
      const html = usageChart(buckets, { granularity: 'day', id: 'c6', title: 'Last 30 days' })
      expect(html).toMatch(/<svg /)
      expect(html).toContain('No requests in this period')
      expect(bars(html, 'answered').size).toBe(0)
      expect(html).not.toContain('NaN')
      expect(html).not.toContain('Infinity')
    }
  })

  it('escapes the title and the id it is given, and draws nonsense counts as zero', () => {
    const html = usageChart([{ start, requests: Number.NaN, throttled: -3, refused: Number.POSITIVE_INFINITY }], {
      granularity: 'hour',
      id: 'x"><script>',
      title: '<img src=x onerror=alert(1)> & "quotes"',
    })
    expect(html).not.toContain('<script>')
    expect(html).not.toContain('<img')
    expect(html).toContain('&#60;img src=x onerror=alert(1)&#62; &#38; &#34;quotes&#34;')
    expect(html).not.toContain('NaN')
    expect(rows(html)).toEqual([['2026-11-25 00:00', '0', '0', '0']])
  })
})
