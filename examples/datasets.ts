/** A few rows of public data for the example portal to serve. */
export const DATASETS: Record<string, { name: string; rows: Array<Record<string, string | number>> }> = {
  'bike-racks': {
    name: 'Bicycle racks',
    rows: [
      { rack_id: 'BR-0001', street: 'W Madison St', ward: 42, capacity: 8 },
      { rack_id: 'BR-0002', street: 'N Clark St', ward: 2, capacity: 4 },
      { rack_id: 'BR-0003', street: 'S State St', ward: 3, capacity: 12 },
    ],
  },
  'tree-inventory': {
    name: 'Street tree inventory',
    rows: [
      { tree_id: 'T-88121', species: 'Gleditsia triacanthos', diameter_cm: 31, condition: 'good' },
      { tree_id: 'T-88122', species: 'Acer saccharum', diameter_cm: 44, condition: 'fair' },
    ],
  },
}

/** Data only an authenticated user with the right `read_private` may read. */
export const PRIVATE_DATASETS: Record<string, { name: string; rows: Array<Record<string, string | number>> }> = {
  'draft-budget': {
    name: 'Draft budget (not yet published)',
    rows: [
      { department: 'Parks', amount_usd: 12_400_000 },
      { department: 'Libraries', amount_usd: 8_150_000 },
    ],
  },
}
