// Reads a dataset with soda-js, the platform's own client, as a user's script would:
//   node soda-read.cjs HOST:PORT DATASET '{"apiToken":...,"username":...,"password":...}'
// Prints {"rows": [...]} or {"error": ...}. Run with NODE_EXTRA_CA_CERTS to trust the test certificate.
const soda = require('soda-js')

const [dataSite, dataset, options] = process.argv.slice(2)
new soda.Consumer(dataSite, JSON.parse(options))
  .query()
  .withDataset(dataset)
  .limit(10)
  .getRows()
  .on('success', (rows) => console.log(JSON.stringify({ rows })))
  .on('error', (error) => console.log(JSON.stringify({ error })))
