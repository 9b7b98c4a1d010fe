// The system under test in its own process, so its CPU is measured apart
// from the load generator's. Forked by the lab runners; speaks over IPC:
//   -> { cmd: 'reset' | 'metrics' | 'close', id }   <- { id, ... }

import { createCarlabServer } from '../server.js';

const options = JSON.parse(process.argv[2] ?? '{}');
const server = await createCarlabServer({ http: true, host: '127.0.0.1', port: 0, ...options });
/** @type {any} */ (process).send({ type: 'ready', url: server.url, pid: process.pid });

process.on('message', async (/** @type {any} */ m) => {
  const reply = (/** @type {object} */ body) => /** @type {any} */ (process).send({ id: m.id, ...body });
  switch (m.cmd) {
    case 'reset':
      server.relay.resetWindow();
      reply({ ok: true });
      break;
    case 'metrics':
      reply({ relay: server.relay.metrics(), rssBytes: process.memoryUsage().rss });
      break;
    case 'close':
      await server.close();
      reply({ ok: true });
      process.exit(0);
      break;
    default:
      reply({ error: `unknown command ${m.cmd}` });
  }
});
process.on('disconnect', () => process.exit(0)); // the runner died: do not linger
