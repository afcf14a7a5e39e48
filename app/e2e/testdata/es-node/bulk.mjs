// Sends N documents of run RUN to ES_URL with the official client's bulk helper (helpers.bulk),
// authenticated by ES_API_KEY in Elasticsearch's own ApiKey form (base64 of id:key), into the
// index ES_INDEX. One in 250 is deliberately bad, and so are the last few: no message, a time
// that is none, a message over the limit, a delete, another project's index (ES_OTHER_INDEX).
// Prints one JSON line: the helper's stats and every dropped item's line number and status.
import { Client } from '@elastic/elasticsearch'

const { ES_URL, ES_API_KEY, ES_INDEX, ES_OTHER_INDEX, RUN } = process.env
const n = Number(process.env.N || 3000)

const client = new Client({ node: ES_URL, auth: { apiKey: { id: 'node-shipper', api_key: ES_API_KEY } } })
const info = await client.info()
if (!info.version.number.startsWith('8.')) throw new Error(`version ${info.version.number}`)

const base = Date.now() - 3600_000
const bad = [
  { kind: 'no message', doc: { level: 'error', run: RUN } },
  { kind: 'not a time', doc: { message: 'm', '@timestamp': 'not a time', run: RUN } },
  { kind: 'too long', doc: { message: 'x'.repeat(70_000), run: RUN } },
  { kind: 'delete', doc: { run: RUN } },
  { kind: 'other project', doc: { message: 'elsewhere', run: RUN } },
]
const docs = []
for (let i = 0; i < n; i++) {
  if (i % 250 === 249) {
    const b = bad[Math.floor(i / 250) % bad.length]
    docs.push({ kind: b.kind, line: i, doc: { ...b.doc, seq: i } })
    continue
  }
  docs.push({ line: i, kind: 'good', doc: {
    '@timestamp': new Date(base + i).toISOString(),
    message: `line ${i} of ${RUN}`,
    log: { level: ['info', 'warn', 'error'][i % 3] },
    host: { name: 'node-host' },
    run: RUN,
    seq: i,
  } })
}
bad.forEach((b, j) => docs.push({ kind: b.kind, line: n + j, doc: { ...b.doc, seq: n + j } }))

const dropped = []
const bySeq = new Map(docs.map(d => [d.doc.seq, d]))
const stats = await client.helpers.bulk({
  datasource: docs.map(d => d.doc),
  flushBytes: 64 << 10,
  concurrency: 2,
  retries: 3,
  wait: 50,
  onDocument (doc) {
    const d = bySeq.get(doc.seq)
    if (d.kind === 'delete') return { delete: { _index: ES_INDEX, _id: String(d.line) } }
    return { create: { _index: d.kind === 'other project' ? ES_OTHER_INDEX : ES_INDEX } }
  },
  onDrop (item) {
    const seq = item.operation.delete ? Number(item.operation.delete._id) : item.document && item.document.seq
    const d = bySeq.get(seq)
    dropped.push({ line: d ? d.line : -1, kind: d ? d.kind : '?', status: item.status, type: item.error && item.error.type, reason: item.error && item.error.reason })
  },
})
console.log(JSON.stringify({ stats: { total: stats.total, failed: stats.failed, successful: stats.successful, retry: stats.retry, aborted: stats.aborted }, expected: docs.filter(d => d.kind !== 'good').map(d => ({ line: d.line, kind: d.kind })), dropped }))
