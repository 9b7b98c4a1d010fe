/**
 * Who is alive in a cluster: every node says so on `carlab.hb` once a
 * second; a node silent for NODE_TIMEOUT_MS (or that said goodbye) is gone.
 * The relay's group membership (relay/cluster.js) and the PeerServer's id
 * directory (signaling/) both hang off one NodeDirectory per process: they
 * learn of a node new to them (send it our state) and of a node gone (drop
 * its members) from the same heartbeats.
 *
 * A node's first heartbeat after it (re)connects to NATS says `hello`: every
 * node that hears it sends it their state again, known to them or not. A node
 * that hears one new to it asks it (`ask`) for its state in return: the other
 * may never have dropped us (only we dropped it), and would not send it. Noticing
 * a node as new is not enough: after a cut heals, the kernel delivers the
 * cut-off node's retransmitted heartbeats on its old connection, so the others
 * saw it as new and sent their state to a socket it had closed, before its new
 * connection subscribed (lab/target/cluster-machines.test.js hung so, 2 runs in 3
 * under load).
 *
 * A node's silence is only counted while this process runs: a process stalled
 * (starved, swapped out, paused) runs its late timers before it reads the
 * heartbeats that arrived meanwhile, and used to drop every peer for its own
 * stall, losing what its clients had sent them (lab/target/cluster.test.js: 16 % of
 * relay-faithful's updates across 2 relays, one of which stalled 4 s). A tick
 * that comes late credits its lateness to every peer. A node whose own
 * heartbeats stopped for NODE_TIMEOUT_MS knows the others dropped it: its
 * listeners (onSilenced) announce its state to all at once, ahead of the
 * backlog it forwards (a process stopped in its poll phase reads that backlog
 * before its timers run: the relay calls catchUp() before it publishes a batch).
 *
 * @module relay/cluster-nodes
 */

import { HEARTBEAT_SUBJECT, jsonBytes, parseJsonBytes } from './cluster-wire.js';

/** How often a node says it is alive. */
export const HEARTBEAT_MS = 1000;

/** A node not heard from for this long is gone. */
export const NODE_TIMEOUT_MS = 3500;

/**
 * @typedef {object} NodeListener
 * @property {(node: string) => void} [onNodeNew] a node we had not heard of (new, restarted, back after a cut),
 *   one that says hello (it has just (re)connected), one that asks us (we are new to it), or, when we
 *   have just reconnected, every node we know: send it our state
 * @property {(node: string) => void} [onNodeGone] a node that said goodbye or fell silent
 * @property {() => void} [onSilenced] this node sent no heartbeat for NODE_TIMEOUT_MS (its process
 *   stalled): the others have dropped its members; announce them to every node again
 */

/**
 * The live nodes of the cluster, as this node sees them.
 */
export class NodeDirectory {
  /** @param {import('./broker.js').Broker} broker */
  constructor(broker) {
    this.broker = broker;
    this.nodeId = broker.nodeId;
    /** Other nodes -> when last heard (performance.now). @type {Map<string, number>} */
    this.nodes = new Map();
    /** @type {NodeListener[]} */
    this.listeners = [];
    this.startedAt = performance.now();
    /** When the last heartbeat tick ran. */
    this.lastTickAt = this.startedAt;
    this.lost = 0;
    /** Ticks that found this node silent for NODE_TIMEOUT_MS (its own stalls). */
    this.silenced = 0;
    /** Time the broker was stalled (silent on a live connection), which counted as nobody's silence. */
    this.brokerStalledMs = 0;
    /** @type {ReturnType<typeof setInterval> | null} */
    this.timer = null;
    /** @type {import('./broker.js').BrokerSubscription | null} */
    this.sub = null;
  }

  /** @param {NodeListener} listener */
  listen(listener) {
    this.listeners.push(listener);
  }

  /** Starts heartbeats (idempotent: relay and signaling may both ask). */
  start() {
    if (this.timer) return;
    this.sub = this.broker.subscribe(HEARTBEAT_SUBJECT, (data) => this.onHeartbeat(parseJsonBytes(data)));
    this.broker.onConnectionChange((connected) => { if (connected) this.reconnected(); });
    this.heartbeat({ hello: true });
    this.lastTickAt = performance.now();
    this.timer = setInterval(() => this.tick(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /**
   * Back on NATS: a hello asks every node for its state, and every node this one kept meanwhile gets
   * ours (it may have dropped us while our broker stalled and we kept it; its ask for our state went
   * to the connection we gave up, and our hello asks nothing of nodes that know us).
   */
  reconnected() {
    this.heartbeat({ hello: true });
    for (const node of [...this.nodes.keys()]) for (const l of this.listeners) l.onNodeNew?.(node);
  }

  /**
   * One heartbeat period: says this node is alive and drops the silent ones.
   * A late tick means this process was stalled: the peers' silence is counted
   * from when it ran again, and after a stall of NODE_TIMEOUT_MS the listeners
   * announce this node again (onSilenced) before anything it reads next.
   *
   * @param {number} [now] performance.now()
   */
  tick(now = performance.now()) {
    const sinceTick = now - this.lastTickAt;
    const stalledMs = Math.max(0, sinceTick - HEARTBEAT_MS);
    this.lastTickAt = now;
    // A broker that stalls is not every peer gone: while it says nothing on a live connection, no
    // peer's silence counts (what they sent waits in it); once it is given up, they count again.
    const brokerStalled = this.broker.stalled?.() ?? false;
    if (brokerStalled) this.brokerStalledMs += sinceTick;
    const credit = brokerStalled ? sinceTick : stalledMs;
    if (credit > 0) for (const [node, lastSeen] of this.nodes) this.nodes.set(node, Math.min(now, lastSeen + credit));
    this.broker.probe?.();
    this.heartbeat();
    if (HEARTBEAT_MS + stalledMs >= NODE_TIMEOUT_MS) {
      this.silenced++;
      for (const l of this.listeners) l.onSilenced?.();
    }
    this.sweep(now);
  }

  /**
   * Runs the tick now if it is overdue by the node timeout: called before this node publishes what
   * the others need its members for. A process stopped in its poll phase reads and forwards its
   * backlog before its timers run; the re-announcement (onSilenced) must go out first.
   *
   * @param {number} [now] performance.now()
   */
  catchUp(now = performance.now()) {
    if (this.timer && now - this.lastTickAt >= NODE_TIMEOUT_MS) this.tick(now);
  }

  /**
   * Says this node is alive; with `hello`, that it has just (re)connected and wants everyone's state;
   * with `ask`, that it wants that node's state (it is new here).
   * @param {{ hello?: boolean, ask?: string }} [options]
   */
  heartbeat({ hello = false, ask } = {}) {
    /** @type {Record<string, unknown>} */
    const message = { node: this.nodeId };
    if (hello) message.hello = true;
    if (ask) message.ask = ask;
    this.broker.publish(HEARTBEAT_SUBJECT, jsonBytes(message));
  }

  /**
   * Any sign of life of a node (a heartbeat, or any message it sent).
   *
   * @param {string} node
   * @returns {boolean} whether it was new to us
   */
  heard(node) {
    if (node === this.nodeId) return false;
    const known = this.nodes.has(node);
    this.nodes.set(node, performance.now());
    if (!known) for (const l of this.listeners) l.onNodeNew?.(node);
    return !known;
  }

  /** @param {Record<string, unknown> | null} m */
  onHeartbeat(m) {
    if (!m || typeof m.node !== 'string') return;
    // A node new to us hears from us at once, not a second later, and is asked for its state
    // (unless it asks for ours: it knows us, and has sent us its own).
    if (this.heard(m.node)) { if (m.ask !== this.nodeId) this.heartbeat({ ask: m.node }); }
    else if ((m.hello === true || m.ask === this.nodeId) && m.node !== this.nodeId) for (const l of this.listeners) l.onNodeNew?.(m.node);
  }

  /**
   * Nodes silent for NODE_TIMEOUT_MS are gone.
   * @param {number} [now] performance.now()
   */
  sweep(now = performance.now()) {
    const cutoff = now - NODE_TIMEOUT_MS;
    for (const [node, lastSeen] of this.nodes) {
      if (lastSeen < cutoff) {
        this.lost++;
        this.gone(node);
      }
    }
  }

  /** @param {string} node it said goodbye, or fell silent */
  gone(node) {
    if (!this.nodes.delete(node)) return;
    for (const l of this.listeners) l.onNodeGone?.(node);
  }

  /**
   * Ready once connected and one heartbeat round has passed, so the other
   * nodes' state is known before clients are sent here.
   *
   * @returns {{ ready: boolean, reason: string }}
   */
  readiness() {
    const status = this.broker.status();
    if (!status.connected) return { ready: false, reason: `not connected to NATS (${status.url})` };
    if (performance.now() - this.startedAt < HEARTBEAT_MS * 1.5) return { ready: false, reason: 'learning the cluster\'s members' };
    return { ready: true, reason: `connected to NATS (${status.url})` };
  }

  /** Stops the heartbeat (the goodbye is the caller's: it knows its subjects). */
  stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sub?.unsubscribe();
  }
}
