/**
 * PeerServer across processes: which node holds which PeerJS id, and the
 * OFFER/ANSWER/CANDIDATE/LEAVE messages for a peer on another node, carried
 * through the broker. Each PeerServer keeps its own peers; this directory
 * makes ids unique cluster-wide (a claim of an id held elsewhere with another
 * token is refused; with the same token the newer socket wins and the older
 * node closes its socket) and forwards messages whose destination is elsewhere.
 *
 * Subjects: `carlab.p` (ids claimed and released), `carlab.pn.<node>`
 * (messages and id lists addressed to one node). Liveness comes from the
 * process's NodeDirectory (relay/cluster-nodes.js), shared with the relay.
 *
 * @module signaling/cluster
 */

import { createHash } from 'node:crypto';

import { jsonBytes, parseJsonBytes } from '../relay/index.js';

/** Peer id claims and releases of every node. */
export const PEERS_SUBJECT = 'carlab.p';

/**
 * The subject of one node's signaling inbox.
 *
 * @param {string} nodeId
 * @returns {string}
 */
export function peerNodeSubject(nodeId) {
  return `carlab.pn.${nodeId}`;
}

/**
 * How a PeerJS token travels between nodes (never the token itself).
 *
 * @param {string} token
 * @returns {string}
 */
export function peerTokenHash(token) {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * @typedef {object} PeerDirectoryHooks
 * @property {(id: string, message: Record<string, unknown>) => boolean} deliver sends a message to a
 *   peer on this node; false when it is not here (any more)
 * @property {(id: string) => void} evict closes this node's socket of an id claimed anew elsewhere
 */

/**
 * The cluster-wide directory of PeerJS ids.
 */
export class PeerDirectory {
  /**
   * @param {import('../relay/broker.js').Broker} broker
   * @param {import('../relay/cluster-nodes.js').NodeDirectory} nodes
   * @param {PeerDirectoryHooks} hooks
   */
  constructor(broker, nodes, hooks) {
    this.broker = broker;
    this.nodes = nodes;
    this.hooks = hooks;
    this.nodeId = broker.nodeId;
    /** Ids held here -> token hash. @type {Map<string, string>} */
    this.local = new Map();
    /** Ids held elsewhere. @type {Map<string, { node: string, tokenHash: string }>} */
    this.remote = new Map();
    this.stats = { forwarded: 0, delivered: 0, undeliverable: 0, refused: 0, evicted: 0 };
    /** @type {import('../relay/broker.js').BrokerSubscription[]} */
    this.subs = [];
  }

  /** Subscribes and hooks into the node directory. */
  start() {
    this.subs.push(this.broker.subscribe(PEERS_SUBJECT, (data) => this.onPeers(parseJsonBytes(data))));
    this.subs.push(this.broker.subscribe(peerNodeSubject(this.nodeId), (data) => this.onInbox(parseJsonBytes(data))));
    this.nodes.listen({ onNodeNew: (node) => this.sendIds(node), onNodeGone: (node) => this.dropNode(node) });
    this.nodes.start();
  }

  /**
   * Whether a socket may claim `id` with `token` here: false when another
   * node holds it with a different token (that is the PeerServer's ID-TAKEN).
   *
   * @param {string} id
   * @param {string} token
   * @returns {boolean}
   */
  mayClaim(id, token) {
    const holder = this.remote.get(id);
    if (!holder || holder.tokenHash === peerTokenHash(token)) return true;
    this.stats.refused++;
    return false;
  }

  /** @param {string} id @param {string} token a peer opened here */
  claimed(id, token) {
    const tokenHash = peerTokenHash(token);
    this.local.set(id, tokenHash);
    this.remote.delete(id);
    this.broker.publish(PEERS_SUBJECT, jsonBytes({ t: 'claim', node: this.nodeId, id, tokenHash }));
  }

  /** @param {string} id a peer here went away */
  released(id) {
    if (!this.local.delete(id)) return;
    this.broker.publish(PEERS_SUBJECT, jsonBytes({ t: 'release', node: this.nodeId, id }));
  }

  /**
   * Sends a message to the node that holds its destination.
   *
   * @param {string} src
   * @param {Record<string, unknown>} message with a string `dst`
   * @returns {boolean} false when no other node holds `dst` (the PeerServer here handles it)
   */
  forward(src, message) {
    const holder = typeof message.dst === 'string' && !this.local.has(message.dst) ? this.remote.get(message.dst) : undefined;
    if (!holder) return false;
    this.stats.forwarded++;
    this.broker.publish(peerNodeSubject(holder.node), jsonBytes({ t: 'msg', node: this.nodeId, message: { ...message, src } }));
    return true;
  }

  /** @param {Record<string, unknown> | null} m */
  onPeers(m) {
    if (!m || typeof m.node !== 'string' || m.node === this.nodeId || typeof m.id !== 'string') return;
    this.nodes.heard(m.node);
    if (m.t === 'claim' && typeof m.tokenHash === 'string') this.remoteClaim(m.node, m.id, m.tokenHash);
    else if (m.t === 'release' && this.remote.get(m.id)?.node === m.node) this.remote.delete(m.id);
  }

  /**
   * @param {string} node
   * @param {string} id
   * @param {string} tokenHash
   */
  remoteClaim(node, id, tokenHash) {
    // The same peer reconnected to another node: the newer socket wins.
    if (this.local.get(id) === tokenHash) {
      this.local.delete(id);
      this.stats.evicted++;
      this.hooks.evict(id);
    }
    this.remote.set(id, { node, tokenHash });
  }

  /** @param {Record<string, unknown> | null} m */
  onInbox(m) {
    if (!m || typeof m.node !== 'string') return;
    this.nodes.heard(m.node);
    if (m.t === 'ids' && Array.isArray(m.ids)) {
      for (const entry of m.ids) {
        if (Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'string') this.remoteClaim(m.node, entry[0], entry[1]);
      }
    } else if (m.t === 'msg' && m.message && typeof m.message === 'object') {
      const message = /** @type {Record<string, unknown>} */ (m.message);
      if (typeof message.dst === 'string' && this.hooks.deliver(message.dst, message)) this.stats.delivered++;
      else this.stats.undeliverable++;
    }
  }

  /** @param {string} node new to us: it gets every id held here */
  sendIds(node) {
    this.broker.publish(peerNodeSubject(node), jsonBytes({ t: 'ids', node: this.nodeId, ids: [...this.local] }));
  }

  /** @param {string} node gone: its ids are free */
  dropNode(node) {
    for (const [id, holder] of this.remote) if (holder.node === node) this.remote.delete(id);
  }

  /** What /metrics shows. */
  snapshot() {
    return { localPeers: this.local.size, remotePeers: this.remote.size, ...this.stats };
  }

  /** Releases every id held here and unsubscribes. */
  close() {
    for (const id of [...this.local.keys()]) this.released(id);
    for (const sub of this.subs) sub.unsubscribe();
  }
}
