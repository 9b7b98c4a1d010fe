// The p2p mesh's bookkeeping: which members the relay reports, one link per
// neighbour, who dials whom, retries after a failure, and the grace period
// for members missing after a relay restart.
//
// Membership comes from the relay (a membership-only HELLO): one source of
// truth for groups, the same group code as the relayed transports, and a
// departure is known the moment the member's socket closes. The client core
// hears of a member only once its channel is open (`report`).

import { ReachFlag } from '../../../core/protocol.js';
import { P2PLink } from './p2p-link.js';
import { readRestartSignal } from './p2p-ice-restart.js';

/** Retry backoff: first delay and cap. */
export const RETRY_BASE_MS = 500;
export const RETRY_MAX_MS = 15000;
/**
 * After a relay restart the members come back one by one: one that is missing
 * from our rejoin's WELCOME but whose channel is still open gets this long to
 * rejoin before we drop it (a member that really left closes its channel).
 */
export const MEMBERSHIP_GRACE_MS = 20000;
/**
 * The fallback bound: a neighbour whose channel is not open this long after
 * the link was made (or whose ICE failed, or whose open channel died) gets
 * its updates and ACKs through the relay (LINK, docs/protocol.md §14.1) until
 * a later attempt opens a channel. A LAN link opens in well under 1 s and a
 * TURN one in 1-2 s even with 20 browsers on one machine; a person sees a
 * neighbour freeze past 1 s, so a link never waits much longer than this.
 */
export const FALLBACK_AFTER_MS = 4000;

/**
 * A link's channel silent this long, after it had delivered, is a path in doubt: its dialling side
 * restarts its ICE; every open link silent that long is this side's own path in doubt: the relay
 * connection is rejoined (a phone whose network changed hears nothing, and is told nothing).
 * Neighbours send every cycle (167 ms by default, 698 ms for the slow phones), so 3 s is many
 * cycles of silence.
 */
export const LINK_SILENCE_MS = 3000;

/**
 * What a link's path change records, for setupInfo(): the path it got onto
 * and how long after the link was made (`setupMs`).
 * @typedef {object} PathRecord
 * @property {number} id the neighbour
 * @property {boolean} initiator we dial it (count a link once: its dialling end)
 * @property {import('./p2p-link.js').LinkPath} path
 * @property {number} setupMs ms from the link being made (relay) or from connect (direct, turn)
 * @property {string} [why] why the link fell back
 * @property {string | null} [pairBefore] an ICE restart's record: the selected candidate pair before it
 * @property {string | null} [pairAfter] and after it
 * @property {boolean} [sameChannel] it came back on the data channel it had
 */

/**
 * The relay fallback: how the mesh sends a LINK on the membership WebSocket.
 * @typedef {object} FallbackOptions
 * @property {(msg: import('../../../core/protocol.js').LinkMsg) => void} send
 * @property {number} [afterMs] the bound, default FALLBACK_AFTER_MS
 */

/**
 * PeerJS id of a client: group-scoped so ids of different groups never meet.
 * @param {string} group
 * @param {number} clientId
 */
export function peerIdOf(group, clientId) {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < group.length; i++) {
    h ^= group.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `carlab-${h.toString(36)}-${clientId}`;
}

/**
 * What the mesh needs of the PeerJS Peer: dialling (import('peerjs').Peer has it).
 * @typedef {object} Dialer
 * @property {boolean} destroyed
 * @property {(id: string, options: { reliable: boolean, metadata: { clientId: number } }) => import('./p2p-link.js').DataConnectionLike} connect
 */

/**
 * The mesh's share of the transport's counters.
 * @typedef {object} MeshCounters
 * @property {number} connectAttempts connections dialled
 * @property {number} failures connections that failed or closed while the member stayed
 * @property {number} retries redials scheduled
 * @property {number} membershipRejoins the relay's WELCOMEs after a membership reconnect
 * @property {number} [fallbacks] links moved onto the relay fallback
 * @property {number} [recoveries] links moved back from it onto a data channel
 * @property {number} [relayOnly] members reached through the relay from the start (they take no peer connections)
 * @property {number} [iceRestarts] links brought back by an ICE restart (counted at the dialling end)
 * @property {number} [restartsNewPair] of those, restarts after which the selected candidate pair was another
 * @property {number} [restartsSameChannel] and restarts that came back on the data channel the link had
 * @property {number} [iceDisconnects] times a link's ICE went disconnected @property {number} [iceFailures] or failed
 * @property {number} [iceRestartsStarted] ICE restarts begun
 * @property {number} [networkMoves] local candidates gathered after a link connected (this side's network changed)
 * @property {number} [silentLinks] links whose channels fell silent for LINK_SILENCE_MS after delivering
 */

/**
 * @typedef {object} MeshOptions
 * @property {import('./p2p-channel.js').P2PMode} mode
 * @property {() => number} now
 * @property {MeshCounters} counters
 * @property {() => Dialer | null} peer the PeerJS Peer, once created
 * @property {(link: P2PLink, data: any) => void} onMessage a frame on a link's channel
 * @property {() => number} [random] [0, 1) for the retry jitter, default Math.random
 * @property {FallbackOptions | null} [fallback] carry a link's traffic through the relay when it
 *   cannot be made or dies; none: such a neighbour is missing until its channel opens
 */

/** The links of a group's neighbours and the members the relay reports. */
export class P2PMesh {
  /** @param {MeshOptions} options */
  constructor(options) {
    this.options = options;
    this.counters = options.counters;
    /** @type {Map<number, P2PLink>} */
    this.links = new Map();
    /** Members the relay reports, id -> name. @type {Map<number, string>} */
    this.members = new Map();
    /** Members missing from a rejoin's WELCOME whose channels are still open: id -> timer. @type {Map<number, import('./p2p-link.js').Timer>} */
    this.graceTimers = new Map();
    this.myId = 0;
    this.group = '';
    /** @type {Pick<import('../../../core/client.js').TransportHandlers, 'onMemberJoined' | 'onMemberLeft'> | null} */
    this.handlers = null;
    this.closed = false;
    /** Setup records of every channel that opened, in order. @type {import('./p2p-link.js').LinkSetup[]} */
    this.setupPeers = [];
    /** Every path a link got onto, in order (kept to the last 1000). @type {PathRecord[]} */
    this.pathRecords = [];
    this.fallback = options.fallback ?? null;
    /**
     * Sends an ICE restart's offer or answer to a neighbour through the relay; null when the
     * relay did not grant PEER_SIGNAL (no restarts then: a dead link is redialled).
     * @type {((to: number, payload: import('./p2p-ice-restart.js').RestartSignal) => void) | null}
     */
    this.peerSignal = null;
    /**
     * Rejoins the relay connection now (its path may have died with a link's); resolves at its
     * WELCOME. Set by the transport; one rejoin serves every link that asks meanwhile.
     * @type {(() => Promise<void>) | null}
     */
    this.rejoinRelay = null;
    /** @type {Promise<void> | null} */
    this.rejoining = null;
    /** The newest frame heard when every link last fell silent (one rejoin per silence). */
    this.silentSince = 0;
    /** @type {ReturnType<typeof setInterval> | null} */
    this.silenceTimer = null;
  }

  /** Starts the links' dead-path check (once the relay grants restarts). */
  watchSilence() {
    if (this.silenceTimer) return;
    this.silenceTimer = setInterval(() => this.checkSilence(), 1000);
    /** @type {{ unref?: () => void }} */ (/** @type {unknown} */ (this.silenceTimer)).unref?.();
  }

  /**
   * The dead-path check of the links (LINK_SILENCE_MS): runs every second while the relay carries
   * restarts. One doubt per silence: a link heard again may doubt again.
   * @param {number} [now]
   */
  checkSilence(now = this.options.now()) {
    if (!this.peerSignal || this.closed) return;
    const open = [...this.links.values()].filter((l) => l.channel?.readyState === 'open' && l.heardAt > 0);
    if (open.length === 0) return;
    const silent = open.filter((l) => now - l.heardAt > LINK_SILENCE_MS);
    for (const link of silent) {
      if (link.doubtedAt === link.heardAt) continue;
      link.doubtedAt = link.heardAt;
      this.counters.silentLinks = (this.counters.silentLinks ?? 0) + 1;
      link.restart?.networkChanged();
    }
    if (silent.length === open.length && this.silentSince !== Math.max(...open.map((l) => l.heardAt))) {
      this.silentSince = Math.max(...open.map((l) => l.heardAt));
      void this.signalReady();
    }
  }

  /** The relay connection, rejoined once for all the links that doubt their paths at once. */
  signalReady() {
    if (!this.rejoinRelay) return Promise.resolve();
    this.rejoining ??= this.rejoinRelay().finally(() => { setTimeout(() => { this.rejoining = null; }, 2000); });
    return this.rejoining;
  }

  /**
   * A neighbour's SIGNAL through the relay: an ICE restart's offer or answer for its link.
   * @param {import('../../../core/protocol.js').SignalMsg} m
   */
  onPeerSignal(m) {
    const s = readRestartSignal(m.payload);
    if (s) void this.links.get(m.from)?.restart?.onSignal(s);
  }

  /**
   * A new link: its fallback bound starts now.
   * @param {number} id @param {string} name @param {boolean} initiator
   */
  makeLink(id, name, initiator) {
    const link = new P2PLink(id, name, initiator);
    link.createdAt = this.options.now();
    link.pathSince = link.createdAt;
    this.links.set(id, link);
    if (this.fallback) {
      const afterMs = this.fallback.afterMs ?? FALLBACK_AFTER_MS;
      link.fallbackTimer = setTimeout(() => {
        link.fallbackTimer = null;
        if (this.links.get(id) === link && link.channel?.readyState !== 'open') this.toRelay(link, `no channel after ${afterMs} ms`);
      }, afterMs);
    }
    return link;
  }

  /**
   * @param {import('./p2p-link.js').P2PLink} link
   * @param {import('./p2p-link.js').LinkPath} path
   * @param {number} setupMs
   * @param {string} [why]
   */
  setPath(link, path, setupMs, why) {
    if (link.path === path) return;
    link.path = path;
    link.pathSince = this.options.now();
    /** @type {PathRecord} */
    const record = { id: link.id, initiator: link.initiator, path, setupMs };
    if (why) record.why = why;
    this.pathRecords.push(record);
    if (this.pathRecords.length > 1000) this.pathRecords.shift();
  }

  /**
   * The link's traffic goes through the relay from now on: the neighbour is
   * (still) reported to the client core, its channel attempts go on.
   * @param {P2PLink} link
   * @param {string} why
   */
  toRelay(link, why) {
    if (!this.fallback || this.closed || link.path === 'relay' || !this.members.has(link.id)) return;
    this.counters.fallbacks = (this.counters.fallbacks ?? 0) + 1;
    this.setPath(link, 'relay', this.options.now() - link.createdAt, why);
    this.report(link);
  }

  /**
   * The neighbour sent us something through the relay: it has given up on
   * the direct path, so we stop waiting for it too (unless our channel is open).
   * @param {number} id
   * @returns {P2PLink | null} its link, reported, or null if it is no member of ours
   */
  relayedFrom(id) {
    const link = this.links.get(id);
    if (!link || !this.members.has(id)) return null;
    if (link.channel?.readyState !== 'open') this.toRelay(link, 'the neighbour uses the relay');
    return link.reported ? link : null;
  }

  /** Tells the client core the neighbour joined (once its channel is open). @param {P2PLink} link */
  report(link) {
    if (!link.reported) {
      link.reported = true;
      this.handlers?.onMemberJoined({ id: link.id, name: link.name });
    }
  }

  /** @param {P2PLink} link */
  unreport(link) {
    if (link.reported) {
      link.reported = false;
      this.handlers?.onMemberLeft(link.id);
    }
  }

  /**
   * A connection failed or closed while the member is still in the group:
   * the dialling side retries after a jittered exponential backoff.
   * @param {P2PLink} link
   * @param {string} why
   */
  failed(link, why) {
    if (this.closed || this.links.get(link.id) !== link) return;
    this.counters.failures++;
    link.setup.lastError = why;
    // A link that dies, or whose ICE or DTLS failed, falls back at once; a
    // signaling hiccup (peer not registered yet) waits for the bound.
    const hard = link.everOpen || /failed|closed/.test(why);
    if (this.fallback && this.members.has(link.id)) {
      if (hard) this.toRelay(link, why);
    } else {
      this.unreport(link);
    }
    link.teardown();
    if (!this.members.has(link.id) || !link.initiator) return; // the other side retries
    const random = this.options.random ?? Math.random;
    const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** link.attempts) * (0.5 + random() / 2);
    this.counters.retries++;
    link.retryTimer = setTimeout(() => {
      link.retryTimer = null;
      if (this.links.get(link.id) === link) this.initiate(link);
    }, delay);
  }

  /** Wires a connection onto a link, reporting back to this mesh. @param {P2PLink} link @param {import('./p2p-link.js').DataConnectionLike} conn */
  attach(link, conn) {
    link.attach(conn, {
      mode: this.options.mode,
      now: this.options.now,
      onFailed: (why) => this.failed(link, why),
      onOpen: () => {
        if (link.fallbackTimer !== null) clearTimeout(link.fallbackTimer);
        link.fallbackTimer = null;
        if (link.path === 'relay') this.counters.recoveries = (this.counters.recoveries ?? 0) + 1;
        this.setPath(link, 'direct', link.setup.channelOpenMs ?? 0);
        this.report(link);
      },
      onSetup: (setup) => {
        this.setupPeers.push(setup);
        // The selected pair's local or remote candidate is a TURN relayed
        // address (p2p-channel.js setupStats: by type, or by the TURN
        // server's IP when the browser learnt it as peer-reflexive).
        if (link.path === 'direct' && setup.viaTurn) {
          link.path = 'turn';
          for (let i = this.pathRecords.length - 1; i >= 0; i--) {
            const r = this.pathRecords[i];
            if (r.id !== link.id) continue;
            if (r.path === 'direct') r.path = 'turn';
            break;
          }
        }
      },
      onMessage: (data) => this.options.onMessage(link, data),
      ...(this.peerSignal ? {
        signal: (/** @type {import('./p2p-ice-restart.js').RestartSignal} */ payload) => this.peerSignal?.(link.id, payload),
        signalReady: () => this.signalReady(),
        onIce: (/** @type {'disconnected' | 'failed' | 'started' | 'moved'} */ what) => {
          const key = /** @type {const} */ ({ disconnected: 'iceDisconnects', failed: 'iceFailures', started: 'iceRestartsStarted', moved: 'networkMoves' })[what];
          this.counters[key] = (this.counters[key] ?? 0) + 1;
        },
        onRestarted: (/** @type {import('./p2p-link.js').RestartRecord} */ outcome) => this.restarted(link, outcome),
      } : {}),
    });
  }

  /**
   * An ICE restart brought the link back: counted and recorded at the dialling end, with the
   * candidate pairs before and after and whether the channel is the one it had.
   * @param {P2PLink} link @param {import('./p2p-link.js').RestartRecord} outcome
   */
  restarted(link, outcome) {
    if (!link.initiator || this.links.get(link.id) !== link) return;
    const c = this.counters;
    c.iceRestarts = (c.iceRestarts ?? 0) + 1;
    if (outcome.pairBefore && outcome.pairAfter && outcome.pairBefore !== outcome.pairAfter) c.restartsNewPair = (c.restartsNewPair ?? 0) + 1;
    if (outcome.sameChannel) c.restartsSameChannel = (c.restartsSameChannel ?? 0) + 1;
    /** @type {PathRecord} */
    const record = {
      id: link.id, initiator: true, path: link.path, setupMs: Math.round(outcome.ms), why: 'ICE restart',
      pairBefore: outcome.pairBefore, pairAfter: outcome.pairAfter, sameChannel: outcome.sameChannel,
    };
    this.pathRecords.push(record);
    if (this.pathRecords.length > 1000) this.pathRecords.shift();
  }

  /** Dials the neighbour. @param {P2PLink} link */
  initiate(link) {
    const peer = this.options.peer();
    if (this.closed || !peer || peer.destroyed) return;
    link.attempts++;
    this.counters.connectAttempts++;
    const conn = peer.connect(peerIdOf(this.group, link.id), { reliable: true, metadata: { clientId: this.myId } });
    this.attach(link, conn);
  }

  /**
   * The relay reports a member (WELCOME or MEMBER_JOINED), with how it can be
   * reached when the relay says (ReachFlag, docs/protocol.md §5.2; undefined
   * from a relay that predates it: then it is dialled, as before).
   * @param {number} id @param {string} name @param {number} [reach]
   */
  memberAppeared(id, name, reach) {
    if (id === this.myId) return;
    this.members.set(id, name);
    clearTimeout(this.graceTimers.get(id));
    this.graceTimers.delete(id);
    const peerless = reach !== undefined && (reach & ReachFlag.PEER) === 0;
    const existing = this.links.get(id);
    if (existing) {
      // A link that failed while the member was unknown (no retry then): dial again.
      if (!peerless && existing.initiator && !existing.conn && existing.retryTimer === null) this.initiate(existing);
      return;
    }
    if (peerless) {
      this.relayOnly(id, name);
      return;
    }
    const link = this.makeLink(id, name, this.myId > id);
    // The newer member (larger id) dials; the other side answers.
    if (link.initiator) this.initiate(link);
  }

  /**
   * A member that takes no peer connections (a relay or relay-udp member): never dialled, its
   * updates and ACKs go through the relay from the start; without the fallback it cannot be reached.
   * @param {number} id @param {string} name
   */
  relayOnly(id, name) {
    const link = new P2PLink(id, name, false);
    link.createdAt = this.options.now();
    link.pathSince = link.createdAt;
    this.links.set(id, link);
    this.counters.relayOnly = (this.counters.relayOnly ?? 0) + 1;
    this.toRelay(link, 'it takes no peer connections');
  }

  /** The member left the group: drop its link at once. @param {number} id */
  memberGone(id) {
    this.members.delete(id);
    clearTimeout(this.graceTimers.get(id));
    this.graceTimers.delete(id);
    const link = this.links.get(id);
    if (!link) return;
    this.links.delete(id);
    if (link.fallbackTimer !== null) clearTimeout(link.fallbackTimer);
    this.unreport(link);
    link.teardown();
  }

  /** The membership connection closed for good: every neighbour is gone. */
  leaveAll() {
    for (const id of [...this.links.keys()]) this.memberGone(id);
  }

  /**
   * The membership WebSocket rejoined after the relay went away: learn the
   * members again. Links stay as they are (their channels never needed the
   * relay); members not (yet) back keep an open channel for MEMBERSHIP_GRACE_MS.
   * @param {import('../../../core/protocol.js').WelcomeMsg} w
   * @returns {boolean} false: we were welcomed under another id, which our
   *   PeerJS id does not name (others could no longer dial us); nothing was changed
   */
  rejoined(w) {
    this.counters.membershipRejoins++;
    if (w.clientId !== this.myId) return false;
    const present = new Map(w.members.filter((m) => m.id !== this.myId).map((m) => [m.id, m]));
    for (const id of [...this.members.keys()]) {
      if (present.has(id)) continue;
      const link = this.links.get(id);
      if (link?.channel?.readyState !== 'open') {
        this.memberGone(id);
        continue;
      }
      this.members.delete(id); // unknown until it rejoins: its link is not retried meanwhile
      clearTimeout(this.graceTimers.get(id));
      this.graceTimers.set(id, setTimeout(() => { if (!this.members.has(id)) this.memberGone(id); }, MEMBERSHIP_GRACE_MS));
    }
    for (const [id, m] of present) this.memberAppeared(id, m.name, m.reach);
    return true;
  }

  /**
   * A neighbour dialled us. Only an older member's id (smaller than ours,
   * whose PeerJS id matches the client id it claims) is answered.
   * @param {import('./p2p-link.js').DataConnectionLike} conn
   */
  incoming(conn) {
    const id = Number(conn.metadata?.clientId);
    if (!Number.isInteger(id) || id <= 0 || conn.peer !== peerIdOf(this.group, id) || id <= this.myId) {
      conn.close();
      return;
    }
    let link = this.links.get(id);
    if (!link) {
      // Its MEMBER_JOINED may still be on its way.
      link = this.makeLink(id, this.members.get(id) ?? '', false);
    } else {
      // A new attempt of a link: with the fallback, the neighbour stays (on the relay meanwhile).
      if (this.fallback && link.reported && this.members.has(id)) this.toRelay(link, 'the neighbour dialled again');
      else this.unreport(link);
      link.teardown();
    }
    this.attach(link, conn);
  }

  /**
   * PeerJS reported an error naming a peer id ('peer-unavailable'): fail
   * that link so it retries.
   * @param {string} namedPeerId
   * @param {string | undefined} type PeerJS's error type
   */
  failNamed(namedPeerId, type) {
    for (const link of this.links.values()) {
      if (namedPeerId.startsWith(peerIdOf(this.group, link.id))) this.failed(link, `peerjs: ${type}`);
    }
  }

  /** Stops every timer and closes every link; nothing is reported to the client core. */
  close() {
    this.closed = true;
    if (this.silenceTimer) clearInterval(this.silenceTimer);
    this.silenceTimer = null;
    for (const timer of this.graceTimers.values()) clearTimeout(timer);
    this.graceTimers.clear();
    for (const link of this.links.values()) {
      if (link.fallbackTimer !== null) clearTimeout(link.fallbackTimer);
      link.teardown();
    }
    this.links.clear();
  }

  /**
   * Per neighbour, how its updates travel now (for the HUD and the stats).
   * @returns {{ id: number, name: string, path: import('./p2p-link.js').LinkPath, sinceMs: number }[]}
   */
  linkPaths() {
    const now = this.options.now();
    return [...this.links.values()].map((l) => ({ id: l.id, name: l.name, path: l.path, sinceMs: now - l.pathSince }));
  }

  /** The channels that are open now. */
  openChannels() {
    /** @type {RTCDataChannel[]} */
    const open = [];
    for (const link of this.links.values()) if (link.channel?.readyState === 'open') open.push(link.channel);
    return open;
  }
}
