/**
 * The layers of src/, held by dependency-cruiser in CI (`npm run check:layers`); CONTRIBUTING.md
 * ("Layers") says what each holds and why. A module imports only from its own layer and the
 * layers below it, type-only imports included, and no import goes round in a cycle.
 * `.dependency-cruiser-known-violations.json` lists the upward imports still to be moved (each
 * a named debt, reported on every run); a new one fails the check.
 */
const LAYERS = [
  { name: 'rules', paths: ['^src/(util|rules)/', '^src/errors\\.ts$'] },
  { name: 'parsing', paths: ['^src/(limits|http|secrets)/'] },
  { name: 'store', paths: ['^src/(store|log)/', '^src/events\\.ts$', '^src/usage/events\\.ts$'] },
  { name: 'services', paths: ['^src/(telemetry|config)/', '^src/usage/(?!events\\.ts$)'] },
  { name: 'management', paths: ['^src/management/'] },
  { name: 'pipeline', paths: ['^src/pipeline/'] },
  { name: 'endpoints', paths: ['^src/(endpoints|oauth)/'] },
  { name: 'gate', paths: ['^src/(gate|gate-argument|index)\\.ts$'] },
  { name: 'entries', paths: ['^src/(cli|testing)/'] },
]

const layerRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer.name}`,
  comment: `src/ layer '${layer.name}' imports only from itself and the layers below it (${LAYERS.slice(0, i).map((l) => l.name).join(', ') || 'none'})`,
  severity: 'error',
  from: { path: layer.paths },
  to: { path: LAYERS.slice(i + 1).flatMap((l) => l.paths) },
}))

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycle, type-only imports included: a cycle is two modules that cannot be read, tested or moved apart.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'adapters-through-the-public-entry',
      comment: 'An adapter only translates: it reaches the core through what the package exports (src/index.ts), like any user.',
      severity: 'error',
      from: { path: '^adapters/' },
      to: { path: '^src/', pathNot: '^src/index\\.ts$' },
    },
    {
      name: 'every-file-in-a-layer',
      comment: 'A new folder or top-level file of src/ gets its place in LAYERS (and in CONTRIBUTING.md) before it is imported.',
      severity: 'error',
      from: { path: '^(src|adapters)/' },
      to: { path: '^src/', pathNot: LAYERS.flatMap((l) => l.paths) },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
  },
}
