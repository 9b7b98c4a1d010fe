// Resuming a session (capability RESUME, docs/protocol.md §8.10). A phone
// whose network changed comes back on a new connection while the relay still
// holds its old session (nothing told the relay the old path died; the
// liveness check would only end it 15 s later). Its HELLO names its id and
// carries the secret its last WELCOME gave it: the new connection then takes
// the old session over. The member keeps its id, group, pending updates and
// whatever was still queued for it; its group sees no MEMBER_LEFT and no
// MEMBER_JOINED. Only the member holds the secret, and each WELCOME replaces it.

import { GROUP_KEY_PREFIX, sameToken } from './groups.js';

/** @typedef {import('./session.js').Session} Session */

/**
 * Which session a WebSocket's frames and close belong to. A takeover moves
 * the new socket's binding to the old session and unbinds the old socket, so
 * the old socket's close (it is terminated) no longer detaches anybody.
 * @typedef {{ session: Session | null }} SocketBinding
 */

/**
 * What a takeover changes around the two sessions.
 * @typedef {object} TakeoverParts
 * @property {WeakMap<object, SocketBinding>} bindings by socket
 * @property {import('./groups.js').GroupRegistry} groups
 * @property {import('./liveness.js').LivenessMonitor<Session>} liveness
 * @property {{ forget(o: import('./session.js').Outbox): void }} flusher
 * @property {import('./stats.js').RelayStats} stats
 */

/**
 * The local session a resuming HELLO may take over: same group, same id, the
 * same secret and the same transport mode. Null: none (the HELLO then joins
 * as any other, and a live holder of its id refuses it with 4007).
 * @param {import('./groups.js').GroupRegistry} groups
 * @param {Session} fresh the connection that sent the HELLO (its mode already read from the flags)
 * @param {import('../core/protocol.js').HelloMsg} m
 * @returns {Session | null}
 */
export function resumableSession(groups, fresh, m) {
  if (!m.resume || m.clientId === 0) return null;
  const holder = groups.groups.get(GROUP_KEY_PREFIX + m.group)?.members.get(m.clientId);
  if (!holder?.local || holder === fresh || holder.closed || holder.resumeSecret === '') return null;
  if (!sameToken(holder.resumeSecret, m.resume)) return null;
  if (holder.batched !== fresh.batched || holder.udp !== fresh.udp || holder.membershipOnly !== fresh.membershipOnly) return null;
  return holder;
}

/**
 * Moves `fresh`'s connection into `holder`: `holder` writes to the new socket
 * from now on (what was queued for it goes there), the old socket is
 * terminated and unbound, and `holder` gets a new WELCOME with a new secret.
 * A relay-udp member's data channel is its own, not the old connection's: it
 * stays, and the member offers a new one if its path moved (§13.3).
 * @param {TakeoverParts} parts
 * @param {Session} fresh
 * @param {Session} holder
 */
export function takeOver(parts, fresh, holder) {
  const newSocket = fresh.socket;
  const oldSocket = holder.socket;
  const oldBinding = parts.bindings.get(oldSocket);
  if (oldBinding) oldBinding.session = null;
  const newBinding = parts.bindings.get(newSocket);
  if (newBinding) newBinding.session = holder;
  fresh.closed = true; // it never joined: nothing of it to undo
  parts.liveness.forget(fresh);
  parts.liveness.forget(holder);
  parts.flusher.forget(holder.out);
  holder.socket = newSocket;
  holder.out.socket = newSocket;
  holder.userAgent = fresh.userAgent;
  holder.urlGroup = fresh.urlGroup;
  holder.name = fresh.name;
  holder.capabilities = fresh.capabilities;
  parts.liveness.watch(holder, /** @type {any} */ (newSocket));
  parts.stats.resumed++;
  /** @type {{ terminate?: () => void }} */ (/** @type {unknown} */ (oldSocket)).terminate?.();
  parts.groups.welcome(holder, true);
  if (!holder.udp) {
    // What the old connection swallowed, both ways (a relay-udp member's data is on its channel).
    holder.replayFloor = holder.newestSeqIn;
    parts.groups.replayTo(holder);
  }
  holder.out.flush();
}
