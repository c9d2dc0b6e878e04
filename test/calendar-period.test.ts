import { describe, expect, it } from 'vitest'
import { periodBounds } from '../src/index.js'

const at = (iso: string) => Date.parse(iso)
const bounds = (period: 'day' | 'month', zone: string, iso: string) => {
  const { start, end } = periodBounds(period, zone, at(iso))
  return [new Date(start).toISOString(), new Date(end).toISOString()]
}

describe('periodBounds', () => {
  it('gives the local day, 23 and 25 hours long on the days the clocks change', () => {
    expect(bounds('day', 'Europe/Berlin', '2026-03-29T12:00:00Z')).toEqual(['2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z'])
    expect(bounds('day', 'Europe/Berlin', '2026-10-25T12:00:00Z')).toEqual(['2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z'])
    // In the hour that happens twice, the day is still the one that started at midnight.
    expect(bounds('day', 'Europe/Berlin', '2026-10-25T00:30:00Z')).toEqual(['2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z'])
    expect(bounds('day', 'Australia/Lord_Howe', '2026-10-04T12:00:00Z')).toEqual(['2026-10-03T13:30:00.000Z', '2026-10-04T13:00:00.000Z'])
  })

  it('starts a day whose midnight does not exist at its first instant', () => {
    // Chile moves its clocks from 00:00 to 01:00 on 2026-09-06.
    expect(bounds('day', 'America/Santiago', '2026-09-06T12:00:00Z')).toEqual(['2026-09-06T04:00:00.000Z', '2026-09-07T03:00:00.000Z'])
    expect(bounds('day', 'America/Santiago', '2026-09-05T12:00:00Z')).toEqual(['2026-09-05T04:00:00.000Z', '2026-09-06T04:00:00.000Z'])
    // And back from 24:00 to 23:00 on 2026-04-04: that day has 25 hours.
    expect(bounds('day', 'America/Santiago', '2026-04-04T12:00:00Z')).toEqual(['2026-04-04T03:00:00.000Z', '2026-04-05T04:00:00.000Z'])
  })

  it('gives the local month, across month and year ends and leap Februaries', () => {
    expect(bounds('month', 'Europe/Berlin', '2026-03-15T12:00:00Z')).toEqual(['2026-02-28T23:00:00.000Z', '2026-03-31T22:00:00.000Z'])
    expect(bounds('month', 'UTC', '2028-02-29T23:59:59Z')).toEqual(['2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z'])
    expect(bounds('month', 'UTC', '2027-02-10T00:00:00Z')).toEqual(['2027-02-01T00:00:00.000Z', '2027-03-01T00:00:00.000Z'])
    // 20:00 UTC on 31 December is already January in India.
    expect(bounds('month', 'Asia/Kolkata', '2026-12-31T20:00:00Z')).toEqual(['2026-12-31T18:30:00.000Z', '2027-01-31T18:30:00.000Z'])
    expect(bounds('month', 'America/New_York', '2027-01-01T03:00:00Z')).toEqual(['2026-12-01T05:00:00.000Z', '2027-01-01T05:00:00.000Z'])
  })

  it('puts the period end exactly at the next period start', () => {
    for (const zone of ['UTC', 'Europe/Berlin', 'America/Santiago', 'Pacific/Chatham']) {
      let t = at('2026-01-01T00:00:00Z')
      for (let i = 0; i < 400; i++) {
        const day = periodBounds('day', zone, t)
        expect(day.start).toBeLessThanOrEqual(t)
        expect(day.end).toBeGreaterThan(t)
        expect(periodBounds('day', zone, day.end).start).toBe(day.end)
        t = day.end + 3_600_000
      }
    }
  })

  it('refuses an unknown period or time zone with a TypeError', () => {
    expect(() => periodBounds('week' as never, 'UTC', 0)).toThrow(/'day' or 'month'/)
    expect(() => periodBounds('day', 'Mars/Olympus', 0)).toThrow(/unknown time zone "Mars\/Olympus"/)
  })
})
