// The log of a started `carlab start` (lab/target/start-cluster.js): its JSON
// lines parsed as they arrive, and what they say about its processes (the
// public URL, the workers and their private URLs, nats-server, the primary's
// routing counts at shutdown) and its faults.

/** Log events that mean the server did not start. */
const FATAL_START_EVENTS = new Set(['nats-start-failed', 'no-worker', 'listen-failed']);

/** Log events counted as faults of the run (besides every error or fatal line). */
const FAULT_EVENTS = new Set(['worker-exit', 'nats-exit', 'nats-restart-failed']);

/**
 * One JSON log line, or null for anything else. pino writes the process's
 * `pid` first; a line that names another process's pid too (the primary's
 * `nats-started`: nats-server's) has the key twice, and JSON.parse keeps the
 * last: `pid` is then the named process's and `logPid` the writer's.
 *
 * @param {string} line
 * @returns {(Record<string, any> & { logPid: number | null }) | null}
 */
export function parseLogLine(line) {
  if (!line.startsWith('{')) return null;
  let value;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const first = /^\{[^{}]*?"pid":(\d+)/.exec(line);
  return { ...value, logPid: first ? Number(first[1]) : null };
}

/**
 * What the log lines of a `carlab start` say about its processes, as they
 * arrive: the primary's (or plain server's) URL, the workers and their
 * private URLs, nats-server, the routing counts, and the faults.
 */
export class StartLog {
  /** @param {number} rootPid the process the lab started: the primary, or the plain server */
  constructor(rootPid) {
    this.rootPid = rootPid;
    /** @type {string | null} the URL clients use (the primary's `cluster-up`, or the plain server's `listening`) */
    this.url = null;
    /** @type {Map<number, string>} worker pid -> its private URL */
    this.workers = new Map();
    /** @type {{ pid: number, url: string, version: string | null } | null} */
    this.nats = null;
    /** @type {Record<string, number> | null} the primary's `routing` line at shutdown */
    this.routing = null;
    /** @type {boolean} the primary said `cluster-up` */
    this.clusterUp = false;
    /** @type {{ kind: string, message: string }[]} */
    this.faults = [];
    /** @type {string | null} why it did not start */
    this.fatal = null;
    /** @type {string[]} the last lines, for error messages */
    this.tail = [];
  }

  /** @param {string} line */
  add(line) {
    this.tail.push(line);
    if (this.tail.length > 40) this.tail.shift();
    const e = parseLogLine(line);
    if (!e) return;
    const writer = e.logPid ?? e.pid;
    if (e.level === 'error' || e.level === 'fatal' || FAULT_EVENTS.has(e.event)) {
      this.faults.push({ kind: `log:${e.event ?? e.level}`, message: String(e.msg ?? '').slice(0, 500) });
    }
    if (FATAL_START_EVENTS.has(e.event)) this.fatal = String(e.msg ?? e.event);
    switch (e.event) {
      case 'listening':
        if (writer === this.rootPid) this.url = e.url;
        else if (typeof writer === 'number') this.workers.set(writer, e.url);
        break;
      case 'cluster-up':
        this.url = e.url;
        this.clusterUp = true;
        break;
      case 'nats-started':
      case 'nats-restarted':
        if (typeof e.pid === 'number') this.nats = { pid: e.pid, url: e.natsUrl, version: e.version ?? this.nats?.version ?? null };
        break;
      case 'routing': {
        /** @type {Record<string, number>} */
        const counts = {};
        for (const [k, v] of Object.entries(e)) if (typeof v === 'number' && !['pid', 'logPid'].includes(k)) counts[k] = v;
        this.routing = counts;
        break;
      }
      default:
    }
  }
}
