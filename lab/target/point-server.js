// The system under test of a sim point seen as the one server the point talks
// to (a relay cluster on NATS, a started `carlab start`), and what a point does
// to a relay of a cluster mid-run (--kill-relay-at, --pause-relay).

/** @typedef {import('./server-process.js').ServerChild} ServerChild */

/**
 * --kill-relay-at: SIGKILL the first relay (home of the most clients under
 * either placement); its clients fail over to the others.
 * @param {import('./cluster.js').RelayCluster} cluster
 * @param {number} at ms into the measured window
 */
export async function killRelay(cluster, at) {
  const relayPid = cluster.servers[0].pid;
  await cluster.kill(0);
  return { atS: Math.round(at / 100) / 10, relayPid };
}

/**
 * What --pause-relay did: when, for how long it was asked and really was (more than forS when the
 * lab was late to resume it), and to which relay.
 * @typedef {{ atS: number, forS: number, stoppedS: number, relayPid: number }} PauseInfo
 */

/**
 * --pause-relay: SIGSTOP the first relay (as --kill-relay-at picks it) and SIGCONT it forS later,
 * while the run goes on.
 * @param {import('./cluster.js').RelayCluster} cluster
 * @param {number} forS
 * @param {number} at ms into the measured window
 * @returns {Promise<PauseInfo>}
 */
export async function pauseRelay(cluster, forS, at) {
  const atS = Math.round(at / 100) / 10;
  const relayPid = cluster.servers[0].pid;
  const stoppedMs = await cluster.pause(0, forS * 1000);
  return { atS, forS, stoppedS: Math.round(stoppedMs / 100) / 10, relayPid };
}

/**
 * The cluster of relays as the one server the rest of a point talks to
 * (its URL is the first relay's; metrics are merged over the live relays).
 * @param {import('./cluster.js').RelayCluster} cluster
 * @returns {ServerChild}
 */
export function clusterAsServer(cluster) {
  const first = cluster.servers[0];
  return /** @type {ServerChild} */ ({
    ...first,
    url: first.url,
    get faults() { return cluster.servers.flatMap((s) => s.faults); },
    resetWindow: () => cluster.resetWindow(),
    metrics: () => cluster.metrics(),
    close: () => cluster.close(),
  });
}

/**
 * A started `carlab start` as the one server the rest of a point talks to:
 * its public URL; metrics are its window's (lab/target/start-cluster.js); close
 * stops it with SIGTERM.
 * @param {import('./start-cluster.js').StartedServer} started
 * @returns {ServerChild}
 */
export function startedAsServer(started) {
  /** @type {{ code: number | null, signal: string | null } | null} */
  let exit = null;
  started.exited.then((e) => { exit = e; });
  return /** @type {ServerChild} */ ({
    url: started.url,
    pid: started.pids.primary,
    faults: started.faults,
    exited: started.exited,
    get exit() { return exit; },
    resetWindow: () => started.resetWindow(),
    metrics: () => started.metrics(),
    heap: async () => ({}),
    kill: (signal) => started.kill(signal),
    close: async () => { await started.stop(); },
  });
}
