/**
 * Nearest-name hints for misspelt options: `throttle.anonymous.limt` is answered with
 * "did you mean `limit`?" rather than a list of every valid name.
 */

/** The known name closest to `key` by edit distance, if it is close enough to be a typo. */
export function nearestName(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  const lower = key.toLowerCase()
  for (const candidate of known) {
    const name = candidate.toLowerCase()
    // A name with a part left out (`oauthBudget` for `oauthTokenBudget`) counts as a typo too.
    const distance = lower.length >= 4 && lower.length * 2 >= name.length && isSubsequence(lower, name) ? 1 : editDistance(lower, name)
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined
}

/** Whether every character of `part` appears in `whole`, in order. */
function isSubsequence(part: string, whole: string): boolean {
  let i = 0
  for (let j = 0; j < whole.length && i < part.length; j++) if (whole[j] === part[i]) i++
  return i === part.length
}

/** Levenshtein distance: insertions, deletions and substitutions, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1)
      row.push(Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, substitution))
    }
    previous = row
  }
  return previous[b.length] as number
}
