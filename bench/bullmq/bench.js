// BullMQ side of the queue-core benchmark. Driven by bench/bullmq.go:
//   node bench.js <host> <port> <jobs> <concurrency> <warmup> <payloadBytes>
// Runs <warmup> jobs, prints "WARM", waits for a line on stdin, runs <jobs>
// jobs (enqueue by <concurrency> producers, processed by a Worker with
// <concurrency>, removeOnComplete so a finished job is deleted like an ack),
// then prints {"seconds": ...} and exits.
'use strict';
const { Queue, Worker } = require('bullmq');
const readline = require('readline');

const [host, port, jobs, conc, warm, size] = process.argv.slice(2);
const connection = { host, port: Number(port), maxRetriesPerRequest: null };
const N = Number(jobs), C = Number(conc), W = Number(warm), SIZE = Number(size);
const name = 'bench-' + C;

function payload(i) {
  const p = 'req-' + i + '-';
  return { data: p + 'x'.repeat(Math.max(0, SIZE - p.length - 10)) };
}

async function run(queue, state, n, offset) {
  state.target = n; state.done = 0;
  const finished = new Promise((resolve) => { state.resolve = resolve; });
  const t0 = process.hrtime.bigint();
  let next = 0;
  const producers = [];
  for (let p = 0; p < C; p++) {
    producers.push((async () => {
      for (;;) {
        const i = next++;
        if (i >= n) return;
        await queue.add('noop', payload(offset + i), { removeOnComplete: true, removeOnFail: true });
      }
    })());
  }
  await Promise.all(producers);
  await finished;
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

(async () => {
  const queue = new Queue(name, { connection });
  const state = { target: 0, done: 0, resolve: null };
  const worker = new Worker(name, async () => {}, { connection, concurrency: C });
  worker.on('completed', () => {
    state.done++;
    if (state.done === state.target && state.resolve) state.resolve();
  });
  await worker.waitUntilReady();
  await run(queue, state, W, 0);
  process.stdout.write('WARM\n');
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => rl.once('line', resolve));
  const seconds = await run(queue, state, N, W);
  process.stdout.write(JSON.stringify({ seconds }) + '\n');
  // Wait for the driver to read Redis's counters before closing anything.
  await new Promise((resolve) => rl.once('close', resolve));
  await worker.close();
  await queue.close();
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
